"""The marker channel: WriteTxnMarkers to the leaders of a transaction's partitions.

Once a transaction is prepared (PrepareCommit / PrepareAbort written), a COMMIT or ABORT
marker must be appended to every partition in it, by each partition's leader; only when
every one is acknowledged may the coordinator write CompleteCommit / CompleteAbort
(Kafka's TransactionMarkerChannelManager). The channel:

- keeps **one queue per destination broker**: a transaction's partitions are routed to
  their leaders as the metadata cache knows them, and each destination's queue is sent
  as one WriteTxnMarkers request (every transaction queued for it, one marker entry
  each), one request in flight per destination;
- **retries** what did not succeed, after ``retry_backoff_ms``, routing it anew: a
  partition with no leader, a destination that cannot be reached (the request failed
  whole), a partition answered NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS*,
  REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR or anything unexpected. So a leader change is
  followed through the metadata cache, however many times it happens;
- drops a partition whose topic no longer exists (UNKNOWN_TOPIC_OR_PARTITION for a
  topic the cache does not list): there is nothing left to mark;
- gives a transaction up (``FENCED``) when a leader answers INVALID_PRODUCER_EPOCH or
  TRANSACTION_COORDINATOR_FENCED: a newer producer epoch or a newer coordinator owns
  the outcome now, and this coordinator must not complete it;
- drops the transactions of a ``__transaction_state`` partition that moved away
  (``CANCELLED``): its new coordinator resends them when it loads them.

Each transaction's ``done`` future resolves once, with the outcome. Event-loop bound;
the sending (``MarkerSender``) is injected, so the channel's unit tests use a fake.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from protocol.errors import ErrorCode, error_name
from protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)

_FENCING = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})


class MarkerOutcome(Enum):
    WRITTEN = "written"
    FENCED = "fenced"
    CANCELLED = "cancelled"


@dataclass(eq=False)
class PendingMarkers:
    """One prepared transaction's markers still owed."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    #: the ``__transaction_state`` partition the transaction lives in
    txn_partition: int
    remaining: set[TopicPartition]
    done: asyncio.Future[MarkerOutcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def finish(self, outcome: MarkerOutcome) -> None:
        if not self.done.done():
            self.done.set_result(outcome)


class MarkerSender(Protocol):
    """Sends one WriteTxnMarkers to a broker; raises (ClientError, OSError) when the
    broker cannot be reached or does not answer."""

    async def send(
        self, broker_id: int, request: WriteTxnMarkersRequest
    ) -> WriteTxnMarkersResponse: ...

    async def close(self) -> None: ...


class MarkerChannel:
    """See the module docstring."""

    def __init__(
        self,
        leader_of: Callable[[TopicPartition], int | None],
        topic_exists: Callable[[str], bool],
        sender: MarkerSender,
        *,
        retry_backoff_ms: int,
    ) -> None:
        self._leader_of = leader_of
        self._topic_exists = topic_exists
        self._sender = sender
        self._backoff_s = retry_backoff_ms / 1000
        self._queues: dict[int, list[tuple[PendingMarkers, TopicPartition]]] = {}
        self._drivers: dict[int, asyncio.Task[None]] = {}
        self._retries: set[asyncio.TimerHandle] = set()
        self._pending: set[PendingMarkers] = set()
        self._closed = False
        #: requests sent and partitions retried (metrics, tests)
        self.requests_sent = 0
        self.retries = 0

    @property
    def sender(self) -> MarkerSender:
        return self._sender

    def add(self, markers: PendingMarkers) -> asyncio.Future[MarkerOutcome]:
        """Start sending ``markers``; the future resolves with the outcome."""
        if self._closed:
            markers.finish(MarkerOutcome.CANCELLED)
            return markers.done
        self._pending.add(markers)
        markers.done.add_done_callback(lambda _: self._pending.discard(markers))
        if not markers.remaining:
            markers.finish(MarkerOutcome.WRITTEN)
        self._route(markers, set(markers.remaining))
        return markers.done

    def queued(self) -> int:
        """Partitions whose marker is owed, over every pending transaction."""
        return sum(len(m.remaining) for m in self._pending if not m.done.done())

    def cancel_partition(self, txn_partition: int) -> None:
        """Drop the transactions of ``txn_partition`` (it moved away)."""
        for markers in list(self._pending):
            if markers.txn_partition == txn_partition:
                markers.finish(MarkerOutcome.CANCELLED)

    # -- routing and sending ----------------------------------------------------------------

    def _route(self, markers: PendingMarkers, partitions: set[TopicPartition]) -> None:
        if markers.done.done() or self._closed:
            return
        unrouted: set[TopicPartition] = set()
        for tp in partitions:
            if tp not in markers.remaining:
                continue
            if not self._topic_exists(tp.topic):
                self._written(markers, tp)  # deleted: nothing left to mark
                continue
            leader = self._leader_of(tp)
            if leader is None:
                unrouted.add(tp)
                continue
            self._queues.setdefault(leader, []).append((markers, tp))
            driver = self._drivers.get(leader)
            if driver is None or driver.done():
                self._drivers[leader] = asyncio.get_running_loop().create_task(
                    self._drive(leader), name=f"txn-markers-to-{leader}"
                )
        if unrouted:
            self._later(markers, unrouted)

    def _later(self, markers: PendingMarkers, partitions: set[TopicPartition]) -> None:
        self.retries += len(partitions)
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle | None = None

        def fire() -> None:
            if handle is not None:
                self._retries.discard(handle)
            self._route(markers, partitions)

        handle = loop.call_later(self._backoff_s, fire)
        self._retries.add(handle)

    def _written(self, markers: PendingMarkers, tp: TopicPartition) -> None:
        markers.remaining.discard(tp)
        if not markers.remaining:
            markers.finish(MarkerOutcome.WRITTEN)

    async def _drive(self, broker_id: int) -> None:
        """Send ``broker_id``'s queue, one request at a time, until it is empty."""
        while not self._closed:
            queued = self._queues.pop(broker_id, None)
            if not queued:
                return
            by_txn: dict[PendingMarkers, set[TopicPartition]] = {}
            for markers, tp in queued:
                if not markers.done.done() and tp in markers.remaining:
                    by_txn.setdefault(markers, set()).add(tp)
            if by_txn:
                await self._send(broker_id, by_txn)

    async def _send(
        self, broker_id: int, by_txn: dict[PendingMarkers, set[TopicPartition]]
    ) -> None:
        entries = list(by_txn.items())
        request = WriteTxnMarkersRequest(markers=[_marker(m, tps) for m, tps in entries])
        self.requests_sent += 1
        try:
            response = await self._sender.send(broker_id, request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # unreachable, timed out, refused: all retried
            log.info("transaction markers to broker %d failed: %s; retrying", broker_id, exc)
            for markers, tps in entries:
                self._later(markers, tps)
            return
        answered = list(response.markers)
        for i, (markers, tps) in enumerate(entries):
            errors = _errors(answered[i]) if i < len(answered) else {}
            retry: set[TopicPartition] = set()
            for tp in tps:
                error = errors.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
                if error == ErrorCode.NONE:
                    self._written(markers, tp)
                elif error in _FENCING:
                    log.info("%s: markers fenced by broker %d (%s)",
                             markers.transactional_id, broker_id, error_name(error))  # fmt: skip
                    markers.finish(MarkerOutcome.FENCED)
                    break
                elif error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and not self._topic_exists(
                    tp.topic
                ):
                    self._written(markers, tp)
                else:
                    retry.add(tp)
            if retry and not markers.done.done():
                self._later(markers, retry)

    async def close(self) -> None:
        """Stop sending: pending transactions are CANCELLED (a restart resends them)."""
        self._closed = True
        for handle in self._retries:
            handle.cancel()
        self._retries.clear()
        for markers in list(self._pending):
            markers.finish(MarkerOutcome.CANCELLED)
        drivers = list(self._drivers.values())
        for task in drivers:
            task.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        await self._sender.close()


def _marker(
    markers: PendingMarkers, tps: set[TopicPartition]
) -> WriteTxnMarkersRequest.WritableTxnMarker:
    topics: dict[str, list[int]] = {}
    for tp in sorted(tps):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return WriteTxnMarkersRequest.WritableTxnMarker(
        producer_id=markers.producer_id,
        producer_epoch=markers.producer_epoch,
        transaction_result=markers.commit,
        topics=[
            WriteTxnMarkersRequest.WritableTxnMarkerTopic(name=name, partition_indexes=parts)
            for name, parts in topics.items()
        ],
        coordinator_epoch=markers.coordinator_epoch,
    )


def _errors(result: WriteTxnMarkersResponse.WritableTxnMarkerResult) -> dict[TopicPartition, int]:
    return {
        TopicPartition(topic.name, p.partition_index): p.error_code
        for topic in result.topics
        for p in topic.partitions
    }
