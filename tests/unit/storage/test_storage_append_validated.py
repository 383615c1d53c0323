"""Log.append(ValidatedRecords): the broker's produce path, whose request validation has
already checked each batch (CRC-32C included). The log checks nothing of that again; bare
bytes are still checked whole, the topic's max.message.bytes applies to both, and what
is stored is the same either way."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import pytest
from storage_helpers import SMALL, make_batch, open_log

from protocol.records import ValidatedRecords, read_header, set_crc, validate_records
from storage.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError


def resealed(data: bytes) -> bytes:
    """``data`` with its CRC recomputed, so only the damage to the header shows."""
    out = bytearray(data)
    set_crc(out, 0, len(out))
    return bytes(out)


@pytest.mark.parametrize(
    ("damage", "error"),
    [
        (lambda b: b[:-1], CorruptRecordError),  # truncated
        (lambda b: b[:16] + b"\x01" + b[17:], InvalidRecordError),  # magic 1
        (lambda b: b"\x00" * 5, CorruptRecordError),  # a few stray bytes
        (lambda b: resealed(b[:57] + (9).to_bytes(4, "big") + b[61:]), InvalidRecordError),
    ],
    ids=["truncated", "magic1", "stray-bytes", "records-count"],
)
def test_bytes_are_checked_and_refused_whole(
    tmp_path: os.PathLike[str], damage: Callable[[bytes], bytes], error: type[Exception]
) -> None:
    lg = open_log(str(tmp_path))
    lg.append(make_batch(2), leader_epoch=0)
    size = lg.size_in_bytes
    with pytest.raises(error):
        lg.append(make_batch(1) + damage(make_batch(3)), leader_epoch=0)
    assert lg.size_in_bytes == size and lg.log_end_offset == 2
    lg.close()


def test_validated_records_are_not_checked_again(tmp_path: os.PathLike[str]) -> None:
    bad_crc = bytearray(make_batch(3))
    bad_crc[30] ^= 1  # a byte inside the CRC range
    full = open_log(os.path.join(str(tmp_path), "full"))
    with pytest.raises(CorruptRecordError):
        full.append(bytes(bad_crc), leader_epoch=0)  # bare bytes are checked
    trusting = open_log(os.path.join(str(tmp_path), "trusting"))
    vouched = ValidatedRecords(bytes(bad_crc), [(0, read_header(bad_crc))])
    info = trusting.append(vouched, leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (0, 2)
    full.close()
    trusting.close()


def test_max_message_bytes_applies_to_validated_records(tmp_path: os.PathLike[str]) -> None:
    lg = open_log(str(tmp_path), dataclasses.replace(SMALL, max_message_bytes=100))
    with pytest.raises(RecordTooLargeError) as info:
        lg.append(validate_records(make_batch([b"x" * 200]), from_client=True), leader_epoch=0)
    assert info.value.error_code == 10 and lg.log_end_offset == 0
    lg.close()


def test_stored_bytes_match_an_append_of_bytes(tmp_path: os.PathLike[str]) -> None:
    logs = [open_log(os.path.join(str(tmp_path), name)) for name in ("bytes", "validated")]
    for i in range(5):
        batch = make_batch(i + 1, timestamp=1_000 + i)
        logs[0].append(batch, leader_epoch=3)
        logs[1].append(validate_records(batch, from_client=True), leader_epoch=3)
    assert logs[0].read_bytes(0, 1 << 20) == logs[1].read_bytes(0, 1 << 20)
    assert logs[1].log_end_offset == 15
    for lg in logs:
        lg.close()
