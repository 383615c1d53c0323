"""Log.append(crc_checked=True): the broker's produce path, whose request validation has
already checked each batch's CRC-32C. Only the checksum is skipped; every structural
check still refuses a bad batch whole, and what is stored is the same as with the full
check."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from storage_helpers import make_batch, open_log

from storage.errors import CorruptRecordError, InvalidRecordError


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda b: b[:-1], CorruptRecordError),  # truncated
        (lambda b: b[:16] + b"\x01" + b[17:], InvalidRecordError),  # magic 1
        (lambda b: b"\x00" * 5, CorruptRecordError),  # a few stray bytes
        (lambda b: b[:57] + (9).to_bytes(4, "big") + b[61:], InvalidRecordError),  # count
    ],
    ids=["truncated", "magic1", "stray-bytes", "records-count"],
)
def test_structural_checks_still_refuse_the_append_whole(
    tmp_path: os.PathLike[str], damage: Callable[[bytes], bytes], error: type[Exception]
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(make_batch(2), leader_epoch=0, crc_checked=True)
    size = lg.size_in_bytes
    with pytest.raises(error):
        lg.append(make_batch(1) + damage(make_batch(3)), leader_epoch=0, crc_checked=True)
    assert lg.size_in_bytes == size and lg.log_end_offset == 2
    lg.close()


def test_only_the_checksum_is_left_to_the_caller(tmp_path: os.PathLike[str]) -> None:
    bad_crc = bytearray(make_batch(3))
    bad_crc[30] ^= 1  # a byte inside the CRC range
    full = open_log(os.path.join(str(tmp_path), "full"))
    with pytest.raises(CorruptRecordError):
        full.append(bytes(bad_crc), leader_epoch=0)  # the default checks it
    trusting = open_log(os.path.join(str(tmp_path), "trusting"))
    info = trusting.append(bytes(bad_crc), leader_epoch=0, crc_checked=True)
    assert (info.first_offset, info.last_offset) == (0, 2)
    full.close()
    trusting.close()


def test_stored_bytes_match_a_fully_checked_append(tmp_path: os.PathLike[str]) -> None:
    logs = [open_log(os.path.join(str(tmp_path), name)) for name in ("full", "checked")]
    for i in range(5):
        batch = make_batch(i + 1, timestamp=1_000 + i)
        logs[0].append(batch, leader_epoch=3)
        logs[1].append(batch, leader_epoch=3, crc_checked=True)
    assert logs[0].read_bytes(0, 1 << 20) == logs[1].read_bytes(0, 1 << 20)
    assert logs[1].log_end_offset == 15
    for lg in logs:
        lg.close()
