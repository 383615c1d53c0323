"""read_committed (option ``kafka.isolation.level``), as Spark's Kafka source offers it.

With ``read_committed`` a query sees what a read_committed consumer sees: no record of an
aborted transaction, and nothing at or after the partition's last stable offset (the
first offset of its earliest open transaction), so a transaction still open is never
half read. Over the wire the brokers do the work (ListOffsets latest answers the LSO; a
Fetch lists the aborted transactions of what it returns). From log directories this
module does it, read-only:

- the aborted transactions are the entries of the segments' ``.txnindex`` files
  (:mod:`storage.txn_index`, Kafka's 34-byte entries): (producer id, first offset);
- the LSO is found by one scan of the batch headers below the high watermark: a
  transactional batch opens its producer's transaction, that producer's next control
  batch (COMMIT or ABORT) closes it; the smallest first offset still open at the high
  watermark is the LSO (the high watermark when none is open);
- reads drop each aborted producer's transactional batches from the transaction's first
  offset to its ABORT marker (:class:`client.fetch.AbortedFilter`), as consumers do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from client.fetch import AbortedFilter, is_abort
from protocol.records.batch import HEADER_SIZE
from protocol.records.builder import read_batch
from protocol.values import READ_COMMITTED, READ_UNCOMMITTED
from spark_jobs.arrow_records import Batch
from spark_jobs.log_dirs import Replica
from storage.names import LOG_SUFFIX, TXN_INDEX_SUFFIX, offset_file_name
from storage.txn_index import decode_entries

#: ``kafka.isolation.level``'s values
ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}


def aborted_transactions(replica: Replica) -> list[tuple[int, int]]:
    """(producer id, first offset) of every aborted transaction the replica's segments
    index."""
    found: list[tuple[int, int]] = []
    for base in replica.segments:
        path = os.path.join(replica.path, offset_file_name(base, TXN_INDEX_SUFFIX))
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue  # most segments hold no aborted transaction
        found += [(t.producer_id, t.first_offset) for t in decode_entries(data)]
    return found


def last_stable_offset(replica: Replica) -> int:
    """The replica's LSO (see the module doc)."""
    from spark_jobs.segments import batches_in  # (segments reads with this module's help)

    hw = replica.high_watermark
    open_txns: dict[int, int] = {}
    for base in replica.segments:
        if base >= hw:
            break
        path = os.path.join(replica.path, offset_file_name(base, LOG_SUFFIX))
        for batch in batches_in(path, 0, hw, controls=True):
            h = batch.header
            if h.is_control:
                open_txns.pop(h.producer_id, None)
            elif h.is_transactional:
                open_txns.setdefault(h.producer_id, h.base_offset)
    lso = min(open_txns.values(), default=hw)
    return max(replica.log_start_offset, min(lso, hw))


def _marker_is_abort(batch: Batch) -> bool:
    _, items = read_batch(batch.buffer, batch.start - HEADER_SIZE, check_crc=False)
    return is_abort(items)


def committed_batches(
    batches: Iterable[Batch], aborted: Sequence[tuple[int, int]]
) -> Iterator[Batch]:
    """The data batches of ``batches`` (control batches included, in offset order) that
    a read_committed reader keeps."""
    keep = AbortedFilter(aborted).keep
    for batch in batches:
        if keep(batch.header, lambda batch=batch: _marker_is_abort(batch)):  # type: ignore[misc]
            yield batch
