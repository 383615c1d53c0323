"""Control records: the transaction markers (and KRaft's markers) in control batches.

A control batch (attribute bit 5) holds exactly one record whose key names the marker::

    key    version int16 (0) | type int16    0 ABORT, 1 COMMIT, 2 LEADER_CHANGE,
                                             3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER
    value  for ABORT and COMMIT: version int16 (0) | coordinator_epoch int32

The other types carry their own value schemas (KRaft only); their value is kept opaque.
minikafka writes no transaction markers yet; dump tools parse them from logs written by
Kafka, and tests write them with :func:`control_record`.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from protocol.records.batch import InvalidBatch
from protocol.records.record import Record, SimpleRecord

_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")
CURRENT_CONTROL_VERSION = 0


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4


class ControlMarker(NamedTuple):
    """A parsed control record. ``type`` is a :class:`ControlType` when known, else the
    raw int; ``coordinator_epoch`` is set for ABORT/COMMIT markers only."""

    type: ControlType | int
    version: int
    coordinator_epoch: int | None


def parse_control_record(record: Record) -> ControlMarker:
    """Parse the key (and, for ABORT/COMMIT, the value) of a control batch's record."""
    key = record.key
    if key is None or len(key) < _KEY.size:
        raise InvalidBatch("control record key shorter than 4 bytes", corrupt=True)
    version, raw_type = _KEY.unpack_from(key)
    try:
        kind: ControlType | int = ControlType(raw_type)
    except ValueError:
        kind = raw_type
    epoch: int | None = None
    if kind in (ControlType.ABORT, ControlType.COMMIT):
        value = record.value
        if value is None or len(value) < _END_TXN_VALUE.size:
            raise InvalidBatch("transaction marker value shorter than 6 bytes", corrupt=True)
        _, epoch = _END_TXN_VALUE.unpack_from(value)
    return ControlMarker(kind, version, epoch)


def control_record(kind: ControlType, coordinator_epoch: int, timestamp: int) -> SimpleRecord:
    """An ABORT or COMMIT marker record, for ``build_batch(..., is_control=True)``."""
    if kind not in (ControlType.ABORT, ControlType.COMMIT):
        raise ValueError(f"only transaction markers are written, not {kind!r}")
    return SimpleRecord(
        key=_KEY.pack(CURRENT_CONTROL_VERSION, kind),
        value=_END_TXN_VALUE.pack(CURRENT_CONTROL_VERSION, coordinator_epoch),
        timestamp=timestamp,
    )
