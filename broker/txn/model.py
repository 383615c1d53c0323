"""A transactional id's metadata, and the transit that a state change writes.

``TxnMetadata`` is what the coordinator keeps per transactional id (Kafka's
TransactionMetadata): the producer id and epoch handed out, the previous ones (for a
KIP-360 retry whose answer was lost), the transaction's timeout, its state, the
partitions in it, and its start and last-update times.

A change is never made in place. It is computed as a ``TxnTransit`` (the complete values
after the change), written to ``__transaction_state`` as one record, and applied only
once the write is acknowledged; meanwhile ``pending`` holds it, and any other request for
the id answers CONCURRENT_TRANSACTIONS (or waits, see broker.txn.coordinator). That is why
a failed write leaves the metadata as it was. Several transits may go out in one write (a
completion and the next transaction's first add): each is checked from the one before it,
and they are applied in order. The previous producer id and epoch are not in the log
record (version 0 has no field for them): a loaded id has none, as in Kafka.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from broker.txn.states import TxnState, check_transition
from protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from protocol.values import TopicPartition

#: the largest epoch; an epoch at or past MAX_EPOCH - 1 is exhausted (no bump left)
MAX_EPOCH = 32767


def epoch_exhausted(epoch: int) -> bool:
    """Kafka rotates the producer id rather than bump an epoch this high."""
    return epoch >= MAX_EPOCH - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The values a transition writes; see the module doc."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    last_update_ms: int


@dataclass(eq=False, slots=True)
class TxnMetadata:
    """One transactional id's metadata (see the module doc)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    pending: TxnTransit | None = None

    def current(self) -> TxnTransit:
        """The metadata as it is, as a transit (the base that changes are made from)."""
        return TxnTransit(
            producer_id=self.producer_id,
            last_producer_id=self.last_producer_id,
            producer_epoch=self.producer_epoch,
            last_producer_epoch=self.last_producer_epoch,
            timeout_ms=self.timeout_ms,
            state=self.state,
            partitions=frozenset(self.partitions),
            start_ms=self.start_ms,
            last_update_ms=self.last_update_ms,
        )

    def prepare(self, transit: TxnTransit, *then: TxnTransit) -> TxnTransit:
        """Mark ``transit`` pending (checked against the state table); with ``then``, the
        chain of transits written together, each checked from the one before it, the last
        one pending (applied in order once the write is acknowledged)."""
        state = self.state
        for step in (transit, *then):
            check_transition(self.transactional_id, state, step.state)
            state = step.state
        self.pending = then[-1] if then else transit
        return self.pending

    def complete(self, transit: TxnTransit) -> None:
        """Apply the pending ``transit`` (its write was acknowledged)."""
        check_transition(self.transactional_id, self.state, transit.state)
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.last_update_ms = transit.last_update_ms
        if self.pending is transit:
            self.pending = None

    def abandon(self, transit: TxnTransit) -> None:
        """Forget the pending ``transit`` (its write failed; for a chain, its last)."""
        if self.pending is transit:
            self.pending = None


def change(base: TxnTransit, **values: object) -> TxnTransit:
    """``base`` with ``values`` replaced."""
    return dataclasses.replace(base, **values)  # type: ignore[arg-type]
