"""ControllerRequestBatch: collect the requests one controller event causes, send once.

A state change touches many partitions; rather than one request per partition, handlers
add entries here and ``send`` builds one LeaderAndIsr, one UpdateMetadata and one
StopReplica per broker (bodies built by controller.request_bodies from the context). Every
LeaderAndIsr entry also queues UpdateMetadata for that partition to every live broker,
so each broker's metadata cache learns of the new leader.

Responses: ``send`` takes one callback for LeaderAndIsr responses and one for StopReplica
responses, called once per request sent as ``callback(broker_id, response)`` and
``callback(broker_id, response, deleted)`` (``deleted``: the partitions that StopReplica
asked the broker to delete; the answer does not repeat it), with None for the response
when that broker was removed before it answered (see controller.channel). UpdateMetadata
responses carry nothing the controller acts on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.channel import ControllerChannelManager, ResponseCallback
from controller.context import ControllerContext
from protocol.values import TopicPartition
from zk.model import LeaderIsrAndControllerEpoch

#: ``(broker_id, response body or None if the broker went away)``
BrokerResponseCallback = Callable[[int, Any | None], None]
#: ``(broker_id, response body or None, the partitions the request deleted)``
StopReplicaCallback = Callable[[int, Any | None, frozenset[TopicPartition]], None]


@dataclass(frozen=True)
class LeaderAndIsrEntry:
    state: LeaderIsrAndControllerEpoch
    replicas: tuple[int, ...]
    is_new: bool


@dataclass
class ControllerRequestBatch:
    """Not safe across tasks: owned by the controller's event-processing task."""

    leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrEntry]] = field(default_factory=dict)
    update_metadata_brokers: set[int] = field(default_factory=set)
    update_metadata_partitions: set[TopicPartition] = field(default_factory=set)
    #: broker -> partition -> delete the log too?
    stop_replica: dict[int, dict[TopicPartition, bool]] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.leader_and_isr or self.update_metadata_brokers or self.stop_replica)

    def add_leader_and_isr(
        self,
        ctx: ControllerContext,
        broker_ids: set[int] | list[int] | tuple[int, ...],
        tp: TopicPartition,
        state: LeaderIsrAndControllerEpoch,
        replicas: tuple[int, ...],
        is_new: bool,
    ) -> None:
        for bid in broker_ids:
            if bid < 0:
                continue
            per_broker = self.leader_and_isr.setdefault(bid, {})
            previous = per_broker.get(tp)
            # a partition made new earlier in the same event stays new
            per_broker[tp] = LeaderAndIsrEntry(
                state, replicas, is_new or (previous is not None and previous.is_new)
            )
        self.add_update_metadata(ctx.live_or_shutting_down_ids(), {tp})

    def add_update_metadata(self, broker_ids: set[int], partitions: set[TopicPartition]) -> None:
        self.update_metadata_brokers |= {b for b in broker_ids if b >= 0}
        self.update_metadata_partitions |= partitions

    def add_stop_replica(self, broker_id: int, tp: TopicPartition, delete: bool) -> None:
        per_broker = self.stop_replica.setdefault(broker_id, {})
        per_broker[tp] = per_broker.get(tp, False) or delete

    def send(
        self,
        ctx: ControllerContext,
        channel: ControllerChannelManager,
        controller_id: int,
        *,
        on_leader_and_isr_response: BrokerResponseCallback | None = None,
        on_stop_replica_response: StopReplicaCallback | None = None,
    ) -> None:
        """Build every body from the context as it is now and hand them to ``channel``;
        the callbacks get each broker's LeaderAndIsr and StopReplica answers."""
        # imported here: controller.request_bodies needs LeaderAndIsrEntry from this module
        import controller.request_bodies as requests

        shared: dict[tuple[TopicPartition, LeaderAndIsrEntry], Any] = {}
        for bid, entries in sorted(self.leader_and_isr.items()):
            if bid not in ctx.live_brokers:
                continue
            key, version, body = requests.build_leader_and_isr(
                ctx, controller_id, bid, entries, shared
            )
            channel.send(bid, key, version, body, _for_broker(on_leader_and_isr_response, bid))
        if self.update_metadata_brokers:
            partitions = sorted(p for p in self.update_metadata_partitions if p in ctx.leadership)
            key, version, body = requests.build_update_metadata(ctx, controller_id, partitions)
            for bid in sorted(self.update_metadata_brokers):
                if bid in ctx.live_brokers:
                    channel.send(bid, key, version, requests.with_broker_epoch(body, ctx, bid))
        for bid, stops in sorted(self.stop_replica.items()):
            if bid not in ctx.live_brokers:
                continue
            key, version, body = requests.build_stop_replica(ctx, controller_id, bid, stops)
            deleted = frozenset(tp for tp, delete in stops.items() if delete)
            callback = _for_stop_replica(on_stop_replica_response, bid, deleted)
            channel.send(bid, key, version, body, callback)
        self.leader_and_isr.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self.stop_replica.clear()


def _for_broker(callback: BrokerResponseCallback | None, broker_id: int) -> ResponseCallback | None:
    return None if callback is None else functools.partial(callback, broker_id)


def _for_stop_replica(
    callback: StopReplicaCallback | None, broker_id: int, deleted: frozenset[TopicPartition]
) -> ResponseCallback | None:
    if callback is None:
        return None

    def on_answer(response: Any | None) -> None:
        callback(broker_id, response, deleted)

    return on_answer
