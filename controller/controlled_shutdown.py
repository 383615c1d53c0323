"""The controller's side of a controlled shutdown (Kafka's ControlledShutdown, API 7).

A broker about to stop asks the controller to take its leaderships and ISR memberships
away first, so clients move to new leaders without errors. For every partition with more
than one replica on that broker: if it leads, a new leader is elected with the
controlled-shutdown strategy (first live ISR member not shutting down); if it follows, its
replica goes Offline (StopReplica, out of the ISR). Single-replica partitions have nowhere
to go and stay. The broker retries until nothing replicated is left that it leads.

A retry can help only while some partition it still leads has a replica on another
broker that is live and not shutting down itself: that replica may join the ISR
meanwhile and take over. When none has (the rest of the cluster is stopping or down, as
when a whole local cluster is stopped, its controller last), the answer carries
ELIGIBLE_LEADERS_NOT_AVAILABLE with the partitions left, and the broker stops asking at
once (``nowhere_to_move``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.context import ControllerContext
from controller.election_strategies import ElectionStrategy
from controller.model import PartitionReplica
from controller.partition_state_machine import PartitionStateMachine
from controller.replica_state_machine import ReplicaStateMachine
from controller.request_batch import ControllerRequestBatch
from controller.states import PartitionState, ReplicaState
from protocol.errors import ErrorCode
from protocol.values import TopicPartition


@dataclass(frozen=True)
class ControlledShutdownResult:
    """``error_code``: NONE, BROKER_NOT_AVAILABLE, STALE_BROKER_EPOCH, NOT_CONTROLLER or
    ELIGIBLE_LEADERS_NOT_AVAILABLE (no other broker could ever take ``remaining``);
    ``remaining``: partitions the broker still leads (it retries until empty)."""

    error_code: int
    remaining: list[TopicPartition] = field(default_factory=list)


def _led_by(
    ctx: ControllerContext, tps: list[TopicPartition], broker_id: int
) -> list[TopicPartition]:
    return [
        tp
        for tp in tps
        if (st := ctx.leadership.get(tp)) is not None and st.leader_and_isr.leader == broker_id
    ]


def nowhere_to_move(
    ctx: ControllerContext, remaining: list[TopicPartition], broker_id: int
) -> bool:
    """True when no partition of ``remaining`` has a replica on a broker other than
    ``broker_id`` that is live and not shutting down: retrying cannot move any of them."""
    candidates = ctx.live_broker_ids() - {broker_id}
    return bool(remaining) and not any(
        r in candidates for tp in remaining for r in ctx.partition_replicas(tp)
    )


async def move_leadership_off(
    ctx: ControllerContext,
    partition_sm: PartitionStateMachine,
    replica_sm: ReplicaStateMachine,
    batch: ControllerRequestBatch,
    broker_id: int,
    broker_epoch: int,
) -> ControlledShutdownResult:
    """Mark ``broker_id`` as shutting down and move what it leads or follows elsewhere.

    ``broker_epoch`` -1 skips the epoch check (requests before version 2 carry none).
    """
    if broker_id not in ctx.live_brokers:
        return ControlledShutdownResult(ErrorCode.BROKER_NOT_AVAILABLE)
    if broker_epoch not in (-1, ctx.broker_epoch(broker_id)):
        return ControlledShutdownResult(ErrorCode.STALE_BROKER_EPOCH)
    ctx.shutting_down.add(broker_id)
    replicated = [
        tp
        for tp in ctx.partitions_on_broker(broker_id)
        if len(ctx.partition_replicas(tp)) > 1 and not ctx.is_topic_queued_for_deletion(tp.topic)
    ]
    led = _led_by(ctx, replicated, broker_id)
    led_set = set(led)
    followed = [PartitionReplica(tp, broker_id) for tp in replicated if tp not in led_set]
    await partition_sm.handle_state_changes(
        led, PartitionState.ONLINE, batch, ElectionStrategy.CONTROLLED_SHUTDOWN
    )
    await replica_sm.handle_state_changes(followed, ReplicaState.OFFLINE, batch)
    remaining = _led_by(ctx, replicated, broker_id)
    if nowhere_to_move(ctx, remaining, broker_id):
        return ControlledShutdownResult(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, remaining)
    return ControlledShutdownResult(ErrorCode.NONE, remaining)
