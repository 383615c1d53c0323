"""A partition leader's KIP-890 check before a transactional batch opens a transaction.

Why: a producer whose transaction was aborted (timed out, fenced) may still have a batch in
flight; appended late, that batch would open a transaction no coordinator knows of, and the
partition's last stable offset would stall behind it for good. So, while
``transaction.partition.verification.enable`` is true (the default), a leader about to
append a transactional batch for a producer with no open transaction on the partition asks
the transactional id's coordinator whether the partition is in that producer's current
transaction (AddPartitionsToTxn v4, ``verify_only``; nothing is written). Only a yes lets
the batch in; a batch that continues an open transaction needs no question.

What a refused partition answers (:func:`produce_error`, as Kafka's leaders do):
INVALID_TXN_STATE when the coordinator says the partition is not in the transaction,
INVALID_PRODUCER_EPOCH / PRODUCER_FENCED as the coordinator says them, and
NOT_ENOUGH_REPLICAS (retriable for every client) when the coordinator cannot answer yet:
not loaded, moved, unreachable, or the transaction still completing.

The coordinator is the leader of the id's ``__transaction_state`` partition (the metadata
cache's view). One question per coordinator per produce request, carrying every partition
of it; the coordinator's own broker is asked in-process; another over the inter-broker
listener, one connection per broker kept while it works (dropped on any failure, the next
question reconnects).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from client.connection import Connection, ConnectionConfig
from client.errors import ClientError, ConnectionLost, UnsupportedApi
from protocol import ApiKey, ErrorCode
from protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)

#: the AddPartitionsToTxn version whose transactions may be verify-only (brokers only)
VERIFY_VERSION = 4

#: the switch: false, leaders append transactional batches without asking
VERIFICATION_KEY = "transaction.partition.verification.enable"

_APT = AddPartitionsToTxnRequest

#: coordinator answers the producer is told to retry on
_RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)


def produce_error(coordinator_error: int) -> int:
    """The Produce error for a partition the coordinator answered ``coordinator_error``."""
    if coordinator_error in _RETRIABLE:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return coordinator_error


@dataclass(frozen=True, slots=True)
class Producer:
    """Who asks to write: the transactional id and the producer id and epoch of a batch."""

    transactional_id: str
    producer_id: int
    epoch: int


#: in-process answer of this broker's coordinator: (id, producer id, epoch, partitions)
LocalVerify = Callable[[str, int, int, Collection[TopicPartition]], dict[TopicPartition, int]]


class PartitionVerifier:
    """See the module docstring. ``coordinator_of(transactional_id)``: the broker id of
    the id's coordinator, None while unknown; ``endpoint_of(broker_id)``: its inter-broker
    host and port, None when not alive."""

    def __init__(
        self,
        broker_id: int,
        coordinator_of: Callable[[str], int | None],
        endpoint_of: Callable[[int], tuple[str, int] | None],
        local: LocalVerify,
        config: ConnectionConfig,
    ) -> None:
        self._broker_id = broker_id
        self._coordinator_of = coordinator_of
        self._endpoint_of = endpoint_of
        self._local = local
        self._config = config
        self._connections: dict[int, Connection] = {}

    async def verify(self, asks: Mapping[TopicPartition, Producer]) -> dict[TopicPartition, int]:
        """Produce errors per partition (NONE: may append)."""
        by_broker: dict[int, dict[Producer, list[TopicPartition]]] = {}
        answers: dict[TopicPartition, int] = {}
        for tp, producer in asks.items():
            broker = self._coordinator_of(producer.transactional_id)
            if broker is None:
                answers[tp] = ErrorCode.NOT_ENOUGH_REPLICAS
                continue
            by_broker.setdefault(broker, {}).setdefault(producer, []).append(tp)
        remote = [b for b in by_broker if b != self._broker_id]
        if self._broker_id in by_broker:
            for producer, partitions in by_broker[self._broker_id].items():
                local = self._local(
                    producer.transactional_id, producer.producer_id, producer.epoch, partitions
                )
                answers.update((tp, produce_error(e)) for tp, e in local.items())
        results = await asyncio.gather(*(self._ask(b, by_broker[b]) for b in remote))
        for result in results:
            answers.update(result)
        return answers

    async def _ask(
        self, broker_id: int, producers: Mapping[Producer, list[TopicPartition]]
    ) -> dict[TopicPartition, int]:
        request = _APT(
            transactions=[
                _APT.AddPartitionsToTxnTransaction(
                    transactional_id=p.transactional_id,
                    producer_id=p.producer_id,
                    producer_epoch=p.epoch,
                    verify_only=True,
                    topics=_topics(partitions),
                )
                for p, partitions in producers.items()
            ]
        )
        try:
            conn = await self._connection(broker_id)
            response: AddPartitionsToTxnResponse = await conn.request(
                ApiKey.ADD_PARTITIONS_TO_TXN, request, version=VERIFY_VERSION
            )
        except (TimeoutError, OSError, ClientError) as exc:
            self._drop(broker_id)
            log.info("verifying transactional partitions with broker %d: %s", broker_id, exc)
            return {tp: ErrorCode.NOT_ENOUGH_REPLICAS for ps in producers.values() for tp in ps}
        answers: dict[TopicPartition, int] = {}
        if response.error_code != ErrorCode.NONE:
            error = produce_error(response.error_code)
            return {tp: error for ps in producers.values() for tp in ps}
        for txn in response.results_by_transaction:
            for topic in txn.topic_results:
                for r in topic.results_by_partition:
                    tp = TopicPartition(topic.name, r.partition_index)
                    answers[tp] = produce_error(r.partition_error_code)
        for ps in producers.values():  # a partition left unanswered is not verified
            for tp in ps:
                answers.setdefault(tp, ErrorCode.NOT_ENOUGH_REPLICAS)
        return answers

    async def _connection(self, broker_id: int) -> Connection:
        conn = self._connections.get(broker_id)
        if conn is None or conn.closed:
            endpoint = self._endpoint_of(broker_id)
            if endpoint is None:
                raise ConnectionLost(f"broker {broker_id} has no inter-broker endpoint")
            conn = await Connection.open(*endpoint, self._config)
            self._connections[broker_id] = conn
        served = conn.broker_ranges.get(ApiKey.ADD_PARTITIONS_TO_TXN)
        if served is None or served[1] < VERIFY_VERSION:
            raise UnsupportedApi(f"broker {broker_id} does not verify transactional partitions")
        return conn

    def _drop(self, broker_id: int) -> None:
        conn = self._connections.pop(broker_id, None)
        if conn is not None:
            conn.close()

    async def close(self) -> None:
        for broker_id in list(self._connections):
            self._drop(broker_id)


def _topics(partitions: list[TopicPartition]) -> list[_APT.AddPartitionsToTxnTopic]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [_APT.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()]
