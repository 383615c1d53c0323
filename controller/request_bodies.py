"""Build LeaderAndIsr, UpdateMetadata and StopReplica bodies from the context (pure).

Versions: the ones that carry topic ids (LeaderAndIsr 5, UpdateMetadata 7) and the
StopReplica version with per-partition leader epochs (3). Each builder returns
``(api_key, api_version, body)``; bodies are protocol.messages structs.

``leader_and_isr_errors`` and ``stop_replica_errors`` read the brokers' answers back
into error codes per partition; ``answered`` tells whether an answer is there to be
read per partition at all (the broker may have gone away, or refused the whole request).

Leader epochs in StopReplica: the partition's current leader epoch, so a broker can
ignore a stale request; -2 (Kafka's EpochDuringDelete) when the topic is being deleted,
which tells the broker to delete whatever epoch it has.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, TypeVar

import msgspec

from controller.context import ControllerContext
from protocol import ApiKey, ErrorCode, error_name
from protocol.messages import (
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
)
from protocol.values import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    NO_LEADER_EPOCH,
    TopicPartition,
)

if TYPE_CHECKING:
    from controller.request_batch import LeaderAndIsrEntry

log = logging.getLogger(__name__)

LEADER_AND_ISR_VERSION = 5
UPDATE_METADATA_VERSION = 7
STOP_REPLICA_VERSION = 3

#: LeaderAndIsr v5 ``type``: 0 = incremental (only the partitions listed changed)
INCREMENTAL = 0

#: Kafka's SecurityProtocol ids
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

Built = tuple[int, int, Any]


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[TopicPartition]]:
    out: dict[str, list[TopicPartition]] = {}
    for tp in sorted(partitions):
        out.setdefault(tp.topic, []).append(tp)
    return out


def build_leader_and_isr(
    ctx: ControllerContext,
    controller_id: int,
    broker_id: int,
    entries: Mapping[TopicPartition, LeaderAndIsrEntry],
    shared: dict[tuple[TopicPartition, LeaderAndIsrEntry], Any] | None = None,
) -> Built:
    """One broker's LeaderAndIsr: the partitions it hosts whose leadership changed.
    ``shared``: partition states already built for another broker's request of the same
    batch, reused when the entry is the same (a partition's replicas all get one state;
    building the structs was most of the controller's time for thousands of
    partitions). Bodies are only read once built, so sharing them is safe."""
    P = LeaderAndIsrRequest.LeaderAndIsrPartitionState
    built = shared if shared is not None else {}
    topic_states = []
    leaders: set[int] = set()
    for topic, tps in _by_topic(entries).items():
        states = []
        for tp in tps:
            entry = entries[tp]
            lai = entry.state.leader_and_isr
            leaders.add(lai.leader)
            state = built.get((tp, entry))
            if state is None:
                moving = ctx.reassignments.get(tp)
                state = built[(tp, entry)] = P(
                    partition_index=tp.partition,
                    controller_epoch=entry.state.controller_epoch,
                    leader=lai.leader,
                    leader_epoch=lai.leader_epoch,
                    isr=list(lai.isr),
                    partition_epoch=lai.zk_version,
                    replicas=list(entry.replicas),
                    adding_replicas=list(moving.adding) if moving else [],
                    removing_replicas=list(moving.removing) if moving else [],
                    is_new=entry.is_new,
                )
            states.append(state)
        topic_states.append(
            LeaderAndIsrRequest.LeaderAndIsrTopicState(
                topic_name=topic, topic_id=ctx.topic_ids[topic], partition_states=states
            )
        )
    live_leaders = []
    for leader in sorted(leaders):
        info = ctx.live_brokers.get(leader)
        if info is None or not info.endpoints:
            continue
        ep = info.endpoints[0]
        live_leaders.append(
            LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                broker_id=leader, host_name=ep.host, port=ep.port
            )
        )
    body = LeaderAndIsrRequest(
        controller_id=controller_id,
        controller_epoch=ctx.epoch,
        broker_epoch=ctx.broker_epoch(broker_id),
        type=INCREMENTAL,
        topic_states=topic_states,
        live_leaders=live_leaders,
    )
    return ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body


def build_update_metadata(
    ctx: ControllerContext, controller_id: int, partitions: Iterable[TopicPartition]
) -> Built:
    """Every live broker with its endpoints, and the state of ``partitions``.

    The body is the same for every recipient except ``broker_epoch``: use
    ``with_broker_epoch`` to address it.
    """
    P = UpdateMetadataRequest.UpdateMetadataPartitionState
    live = ctx.live_or_shutting_down_ids()
    topic_states = []
    for topic, tps in _by_topic(partitions).items():
        deleting = ctx.is_topic_queued_for_deletion(topic)
        states = []
        for tp in tps:
            st = ctx.leadership.get(tp)
            if st is None:
                continue
            lai = st.leader_and_isr
            replicas = ctx.partition_replicas(tp)
            states.append(
                P(
                    partition_index=tp.partition,
                    controller_epoch=st.controller_epoch,
                    leader=LEADER_DURING_DELETE if deleting else lai.leader,
                    leader_epoch=lai.leader_epoch,
                    isr=list(lai.isr),
                    zk_version=lai.zk_version,
                    replicas=list(replicas),
                    offline_replicas=[r for r in replicas if r not in live],
                )
            )
        topic_states.append(
            UpdateMetadataRequest.UpdateMetadataTopicState(
                topic_name=topic, topic_id=ctx.topic_ids[topic], partition_states=states
            )
        )
    brokers = []
    for bid in sorted(ctx.live_brokers):
        info = ctx.live_brokers[bid]
        brokers.append(
            UpdateMetadataRequest.UpdateMetadataBroker(
                id=bid,
                endpoints=[
                    UpdateMetadataRequest.UpdateMetadataEndpoint(
                        port=ep.port,
                        host=ep.host,
                        listener=ep.listener_name,
                        security_protocol=SECURITY_PROTOCOL_IDS.get(ep.security_protocol, 0),
                    )
                    for ep in info.endpoints
                ],
                rack=info.rack,
            )
        )
    body = UpdateMetadataRequest(
        controller_id=controller_id,
        controller_epoch=ctx.epoch,
        broker_epoch=-1,
        topic_states=topic_states,
        live_brokers=brokers,
    )
    return ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body


def with_broker_epoch(body: Any, ctx: ControllerContext, broker_id: int) -> Any:
    """A copy of a request body addressed to ``broker_id``'s current epoch."""
    return msgspec.structs.replace(body, broker_epoch=ctx.broker_epoch(broker_id))


def build_stop_replica(
    ctx: ControllerContext, controller_id: int, broker_id: int, stops: Mapping[TopicPartition, bool]
) -> Built:
    """Tell a broker to stop (and, where ``stops[tp]``, delete) replicas."""
    topics = []
    for topic, tps in _by_topic(stops).items():
        deleting = ctx.is_topic_queued_for_deletion(topic)
        states = []
        for tp in tps:
            st = ctx.leadership.get(tp)
            if deleting:
                epoch = EPOCH_DURING_DELETE
            else:
                epoch = st.leader_and_isr.leader_epoch if st is not None else NO_LEADER_EPOCH
            states.append(
                StopReplicaRequest.StopReplicaPartitionState(
                    partition_index=tp.partition, leader_epoch=epoch, delete_partition=stops[tp]
                )
            )
        topics.append(
            StopReplicaRequest.StopReplicaTopicState(topic_name=topic, partition_states=states)
        )
    body = StopReplicaRequest(
        controller_id=controller_id,
        controller_epoch=ctx.epoch,
        broker_epoch=ctx.broker_epoch(broker_id),
        topic_states=topics,
    )
    return ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body


def leader_and_isr_errors(
    ctx: ControllerContext, response: LeaderAndIsrResponse
) -> dict[TopicPartition, int]:
    """Each partition's error code (NONE included) in a LeaderAndIsr response: per topic
    id from version 5 (ids the context no longer knows are skipped), per topic name
    before."""
    names = {topic_id: name for name, topic_id in ctx.topic_ids.items()}
    out: dict[TopicPartition, int] = {}
    for p in response.partition_errors or ():
        out[TopicPartition(p.topic_name, p.partition_index)] = p.error_code
    for topic in response.topics or ():
        name = names.get(topic.topic_id)
        if name is None:
            continue
        for p in topic.partition_errors:
            out[TopicPartition(name, p.partition_index)] = p.error_code
    return out


def stop_replica_errors(response: StopReplicaResponse) -> dict[TopicPartition, int]:
    """Each partition's error code (NONE included) in a StopReplica response."""
    return {
        TopicPartition(p.topic_name, p.partition_index): p.error_code
        for p in response.partition_errors or ()
    }


class _Answer(Protocol):
    @property
    def error_code(self) -> int: ...


_A = TypeVar("_A", bound=_Answer)


def answered(response: _A | None, broker_id: int, api: str) -> TypeGuard[_A]:
    """Whether a broker's answer to a controller request is there to be read per
    partition: not when the broker went away first (None) or refused the whole request
    (a top-level error); either is logged here."""
    if response is None:
        log.debug("controller: broker %s went away before answering %s", broker_id, api)
        return False
    if response.error_code != ErrorCode.NONE:
        log.warning(
            "controller: broker %s refused %s: %s", broker_id, api, error_name(response.error_code)
        )
        return False
    return True
