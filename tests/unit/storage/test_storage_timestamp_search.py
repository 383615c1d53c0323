"""ListOffsets max-timestamp (-3, KIP-734): the exact record with the largest timestamp.

Records are produced out of timestamp order, within a batch and across batches, with
every codec; on a tie the lowest offset wins, and with LogAppendTime the first record of
the first batch stamped with the largest time.
"""

from __future__ import annotations

import os

import pytest
from storage_helpers import SMALL, open_log

from protocol.records.batch import Compression, TimestampType
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from protocol.values import MAX_TIMESTAMP
from storage.log import Log
from tests.records import record_batch


def batch(timestamps: list[int], compression: Compression = Compression.NONE) -> bytes:
    return record_batch(
        len(timestamps), key=None, value=lambda i: b"v%d" % i, timestamps=timestamps,
        compression=compression,
    )  # fmt: skip


def max_timestamp_hit(lg: Log) -> tuple[int, int]:
    hit = lg.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert hit is not None
    return hit.timestamp, hit.offset


@pytest.mark.parametrize("compression", list(Compression))
def test_out_of_order_records_in_one_batch(
    tmp_path: os.PathLike[str], compression: Compression
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(batch([1_100, 1_400, 1_200], compression), leader_epoch=0)
    assert max_timestamp_hit(lg) == (1_400, 1)
    lg.close()


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.ZSTD])
def test_out_of_order_across_batches_and_segments(
    tmp_path: os.PathLike[str], compression: Compression
) -> None:
    lg = open_log(str(tmp_path))
    # Batch b holds offsets 3b..3b+2; batch 7's middle record holds the largest
    # timestamp, and later batches (in later segments) stay below it.
    for b in range(30):
        top = 9_000 if b == 7 else 2_000 + b
        lg.append(batch([1_000 + b, top, 1_500 + b], compression), leader_epoch=0)
    assert len(lg.segments) > 1
    assert max_timestamp_hit(lg) == (9_000, 22)
    lg.close()


def test_a_tie_answers_the_lowest_offset(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    lg.append(batch([1_000, 5_000, 2_000, 5_000]), leader_epoch=0)
    lg.append(batch([5_000, 1_000]), leader_epoch=0)
    assert max_timestamp_hit(lg) == (5_000, 1)
    lg.close()


def test_a_tie_in_an_older_segment_wins(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path), SMALL)
    for b in range(30):
        lg.append(batch([1_000, 7_000 if b in (3, 25) else 1_000, 1_000]), leader_epoch=0)
    assert max_timestamp_hit(lg) == (7_000, 10)
    lg.close()


def test_log_append_time_answers_the_first_record_of_the_first_batch(
    tmp_path: os.PathLike[str],
) -> None:
    lg = open_log(str(tmp_path))
    for append_time in (3_000, 8_000, 8_000):
        lg.append(
            bytes(
                build_batch(
                    [SimpleRecord(None, b"v", timestamp=ts) for ts in (1, 9_999, 2)],
                    timestamp_type=TimestampType.LOG_APPEND_TIME,
                    log_append_time=append_time,
                )
            ),
            leader_epoch=0,
        )
    assert max_timestamp_hit(lg) == (8_000, 3)
    lg.close()


def test_max_timestamp_survives_a_reopen(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path))
    for b in range(30):
        lg.append(batch([1_000 + b, 9_000 if b == 4 else 1_100, 1_000]), leader_epoch=0)
    lg.close()
    lg = open_log(str(tmp_path))
    assert max_timestamp_hit(lg) == (9_000, 13)
    lg.close()
