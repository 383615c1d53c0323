"""The broker's purgatories: where requests wait for a condition or for their timeout.

A broker keeps six, named as Kafka names them (the names label their metrics):

- Produce: acks=all produces waiting for the ISR to reach their offsets;
- Fetch: long polls waiting for ``min_bytes`` (and followers for new records);
- topic: CreateTopics, CreatePartitions and DeleteTopics waiting for the metadata cache;
- DeleteRecords: waiting for every replica's low watermark;
- Rebalance: the group coordinator's joins waiting for a rebalance to end;
- Heartbeat: the group coordinator's member sessions.

Each one is started by a start-up step of its own (``replica_steps`` before the
ReplicaManager, which is built with the first four; ``group_steps`` before the group
coordinator, built with the last two), so a start that fails half-way shuts down exactly
the purgatories that started. Why a class of its own: the assembly only places the steps
in its order, while what a purgatory needs to exist (the clock, the broker id known by
then, its metrics) and how they all end (``complete_all`` at shutdown: every waiting
request answered with what it has, so that no long poll holds the listeners' drain until
its own timeout) is one concern, kept here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.delayed.delete_records import DelayedDeleteRecords
from broker.delayed.fetch import DelayedFetch
from broker.delayed.produce import DelayedProduce
from broker.group.delayed import DelayedHeartbeat
from broker.lifecycle import Step
from broker.metrics import BrokerMetrics
from timer import DelayedOperation, DelayedOperationPurgatory
from timer.clock import Clock


class BrokerPurgatories:
    """The six purgatories, each set by its step (read only by later steps)."""

    produce: DelayedOperationPurgatory[DelayedProduce]
    fetch: DelayedOperationPurgatory[DelayedFetch]
    topic: DelayedOperationPurgatory[DelayedOperation]
    delete_records: DelayedOperationPurgatory[DelayedDeleteRecords]
    rebalance: DelayedOperationPurgatory[DelayedOperation]
    heartbeat: DelayedOperationPurgatory[DelayedHeartbeat]

    def __init__(self, clock: Clock, metrics: BrokerMetrics, broker_id: Callable[[], int]) -> None:
        """``broker_id``: this broker's id, read when a purgatory starts (the steps run
        once ZooKeeper gave or confirmed it)."""
        self._clock = clock
        self._metrics = metrics
        self._broker_id = broker_id

    def replica_steps(self) -> list[Step]:
        """Produce, Fetch, topic and DeleteRecords, one step each."""

        async def produce() -> None:
            self.produce = self._started("Produce")

        async def fetch() -> None:
            self.fetch = self._started("Fetch")

        async def topic() -> None:
            self.topic = self._started("topic")

        async def delete_records() -> None:
            self.delete_records = self._started("DeleteRecords")

        return [
            Step("purgatory Produce", produce, lambda: self.produce.shutdown()),
            Step("purgatory Fetch", fetch, lambda: self.fetch.shutdown()),
            Step("purgatory topic", topic, lambda: self.topic.shutdown()),
            Step("purgatory DeleteRecords", delete_records,
                 lambda: self.delete_records.shutdown()),
        ]  # fmt: skip

    def group_steps(self) -> list[Step]:
        """The group coordinator's: joins waiting for a rebalance, members' sessions."""

        async def rebalance() -> None:
            self.rebalance = self._started("Rebalance")

        async def heartbeat() -> None:
            self.heartbeat = self._started("Heartbeat")

        return [
            Step("purgatory Rebalance", rebalance, lambda: self.rebalance.shutdown()),
            Step("purgatory Heartbeat", heartbeat, lambda: self.heartbeat.shutdown()),
        ]

    def complete_all(self) -> None:
        """Answer every waiting request now with what it has (shutting down)."""
        for purgatory in (
            self.produce,
            self.fetch,
            self.topic,
            self.delete_records,
            self.rebalance,
            self.heartbeat,
        ):
            purgatory.complete_all()

    def _started(self, name: str) -> DelayedOperationPurgatory[Any]:
        """A started purgatory, watched by the metrics (the caller's attribute types it)."""
        purgatory: DelayedOperationPurgatory[Any] = DelayedOperationPurgatory(
            name, clock=self._clock, broker_id=self._broker_id()
        )
        purgatory.start()
        self._metrics.watch_purgatory(
            name, lambda: purgatory.purgatory_size, lambda: purgatory.num_delayed
        )
        return purgatory
