"""Log.append(ValidatedRecords): the broker's produce path, whose request validation has
already checked each batch (CRC-32C included). The log checks nothing of that again; bare
bytes are still checked whole, the topic's max.message.bytes applies to both, and what
is stored is the same either way. (Bare bytes refused whole: test_storage_log.)"""

from __future__ import annotations

import dataclasses
import os

import pytest
from storage_helpers import SMALL, make_batch, open_log

from protocol.records import ValidatedRecords, read_header, validate_records
from storage.errors import CorruptRecordError, RecordTooLargeError


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
