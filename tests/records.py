"""Record batches for tests: the one builder the test modules share.

``record_batch(n)`` is one RecordBatch v2 of ``n`` records with timestamps 1000, 1001, ...
(or ``timestamps``), key ``key`` and value ``value``; a callable key or value is given
the record's index, for records that differ. Every other keyword is ``build_batch``'s
(``compression``, ``base_offset``, ``producer_id``, ``producer_epoch``,
``base_sequence``, ``is_transactional``, ``is_control``, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from protocol.records.builder import build_batch
from protocol.records.record import Header, SimpleRecord

FIRST_TIMESTAMP = 1_000


def record_batch(
    n: int = 1,
    *,
    key: bytes | Callable[[int], bytes] | None = b"k",
    value: bytes | Callable[[int], bytes] = b"v",
    headers: Sequence[Header] = (),
    timestamps: Sequence[int] | None = None,
    **batch: Any,
) -> bytes:
    stamps = range(FIRST_TIMESTAMP, FIRST_TIMESTAMP + n) if timestamps is None else timestamps
    records = [
        SimpleRecord(
            key(i) if callable(key) else key,
            value(i) if callable(value) else value,
            headers,
            ts,
        )
        for i, ts in enumerate(stamps)
    ]
    return bytes(build_batch(records, **batch))
