"""Which transactional batches and markers a cleaning pass may remove.

The cleaner (:mod:`storage.cleaner`) reads the batches of the section it cleans in
offset order and asks this bookkeeping, batch by batch (Kafka's cleaner keeps the same
state):

- before a batch at ``last_offset``, every aborted transaction of the section (from the
  ``.txnindex`` entries, :func:`storage.transactions.collect_aborted`) whose first
  offset is at or below it becomes *ongoing aborted* for its producer;
- a transactional data batch of a producer with an ongoing aborted transaction is
  aborted data: removed (its records never enter the offset map either, so an aborted
  value never hides a committed one); the transaction is marked as *seen*. A
  transactional batch of any other producer belongs to a committed transaction, which
  is marked as seen too;
- an ABORT marker ends the producer's aborted transaction: when this pass saw data of
  it the marker stays (a later pass must still know to skip whatever of it is left)
  and its index entry goes to the cleaned segment's ``.txnindex``; otherwise nothing of
  the transaction is left and the marker may go. A COMMIT marker may go when this pass
  saw no data of its transaction. A marker that may go is first stamped with a delete
  horizon (now + delete.retention.ms, as tombstones are) and removed by the first pass
  after it, so that a consumer that read the transaction's data has time to read its
  marker. A control batch with no record (emptied earlier) may go.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from protocol.records.batch import BatchHeader
from protocol.records.control import ControlMarker, ControlType
from storage.txn_index import AbortedTxn, TransactionIndex


class CleanedTxns:
    def __init__(self, aborted: Iterable[AbortedTxn]) -> None:
        self._aborted = deque(sorted(aborted, key=lambda t: t.first_offset))
        #: producer id -> [its aborted transaction, whether data of it was seen]
        self._ongoing_aborted: dict[int, tuple[AbortedTxn, list[bool]]] = {}
        self._ongoing_committed: set[int] = set()
        #: where the kept ABORT markers' entries go (the segment being written)
        self.cleaned_index: TransactionIndex | None = None

    def _consume_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0].first_offset <= offset:
            txn = self._aborted.popleft()
            self._ongoing_aborted.setdefault(txn.producer_id, (txn, [False]))

    def is_aborted(self, header: BatchHeader) -> bool:
        """Whether a data batch is aborted data (to be removed)."""
        self._consume_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(header.producer_id)
        if ongoing is not None:
            ongoing[1][0] = True
            return True
        self._ongoing_committed.add(header.producer_id)
        return False

    def marker_removable(self, header: BatchHeader, marker: ControlMarker | None) -> bool:
        """Whether a control batch may go (once past its delete horizon)."""
        self._consume_up_to(header.last_offset)
        if marker is None:
            return True
        if marker.type == ControlType.ABORT:
            ongoing = self._ongoing_aborted.pop(header.producer_id, None)
            if ongoing is not None and ongoing[1][0]:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(ongoing[0])
                return False
            return True
        if marker.type == ControlType.COMMIT:
            seen = header.producer_id in self._ongoing_committed
            self._ongoing_committed.discard(header.producer_id)
            return not seen
        return False
