"""A leader's writing of a Fetch response: the frame's pieces, straight from the answers.

The generic encoder builds a message object per topic and partition, then runs one
compiled plan per struct and joins the byte runs between record regions; for the answer
a leader sends a follower most often (one topic, one partition, one record region) that
is about ninety Python calls, as much as the rest of serving the fetch. This writer lays
out the same bytes directly from plain tuples, at every Fetch version the broker serves
(4-12: topics by name, flexible from 12), and returns what ``encode_response_parts``
would: runs of written bytes as ``bytes``, each records value that is not bytes-like (a
file region to sendfile) as its own piece, untouched, and no empty runs. The unit tests
compare the two piece lists at every version.

What it writes is what the Fetch handler answers: a top-level error of 0 and session id
0 (sessions are declined), a throttle time of 0, per partition no preferred read replica
(-1), aborted transactions null or, for a read_committed fetch, an empty list (the broker
keeps no transaction index), and no tagged fields (the leader sends no diverging epoch,
current leader or snapshot id). Anything else goes through the generic encoder.

Layout, in order (``v`` the request's version; "compact" lengths are unsigned varints of
length + 1, used from v12, int32/int16 lengths before):

- header: correlation_id int32; v12: an empty tagged-field section (one 0 byte)
- throttle_time_ms int32; v7+: error_code int16, session_id int32
- topics array; per topic its name (string), then the partitions array; per partition
  partition_index int32, error_code int16, high_watermark int64, last_stable_offset
  int64, v5+: log_start_offset int64, aborted_transactions (nullable array), v11+:
  preferred_read_replica int32, records (nullable bytes: length then the bytes); v12:
  an empty tagged section closes each partition, each topic and the body
"""

from __future__ import annotations

import struct
from collections.abc import Sequence, Sized
from typing import Final

from protocol.primitives import write_uvarint

#: The Fetch versions this writer knows.
VERSIONS: Final = range(4, 13)

#: First version with a compact (flexible) layout.
_FLEXIBLE: Final = 12

#: (partition_index, error_code, high_watermark, last_stable_offset, log_start_offset,
#: records): records is bytes-like, any other sized piece the network can send (a file
#: region), or None for nothing (written as empty bytes, never null)
PartitionAnswer = tuple[int, int, int, int, int, Sized | None]

_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")


def _head(version: int) -> struct.Struct:
    """correlation_id, then throttle_time_ms, error_code and session_id as they exist."""
    return struct.Struct(">ii" if version < 7 else ">iihi")


def _partition_head(version: int) -> struct.Struct:
    """partition_index to log_start_offset (the fixed fields before aborted_transactions)."""
    return struct.Struct(">ihqq" if version < 5 else ">ihqqq")


_HEADS: Final = {v: _head(v) for v in VERSIONS}
_PARTITION_HEADS: Final = {v: _partition_head(v) for v in VERSIONS}


def fetch_response_parts(
    correlation_id: int,
    version: int,
    topics: Sequence[tuple[str, Sequence[PartitionAnswer]]],
    read_committed: bool,
) -> list[object]:
    """The Fetch response's pieces (header and body, without the size prefix) for
    ``topics`` in that order, each with its partitions' answers in order."""
    flexible = version >= _FLEXIBLE
    out = bytearray(
        _HEADS[version].pack(correlation_id, 0)
        if version < 7
        else _HEADS[version].pack(correlation_id, 0, 0, 0)
    )
    if flexible:
        out.insert(4, 0)  # the response header's tagged fields (header v1)
    parts: list[object] = []
    partition_head = _PARTITION_HEADS[version]
    with_log_start = version >= 5
    # aborted_transactions then, from v11, preferred_read_replica (-1)
    if flexible:
        middle = (b"\x01" if read_committed else b"\x00") + b"\xff\xff\xff\xff"
    else:
        middle = b"\x00\x00\x00\x00" if read_committed else b"\xff\xff\xff\xff"
        if version >= 11:
            middle += b"\xff\xff\xff\xff"
    _write_count(out, len(topics), flexible)
    for name, partitions in topics:
        encoded = name.encode()
        if flexible:
            write_uvarint(out, len(encoded) + 1)
        else:
            out += _INT16.pack(len(encoded))
        out += encoded
        _write_count(out, len(partitions), flexible)
        for index, error, high_watermark, stable, log_start, records in partitions:
            if with_log_start:
                out += partition_head.pack(index, error, high_watermark, stable, log_start)
            else:
                out += partition_head.pack(index, error, high_watermark, stable)
            out += middle
            size = 0 if records is None else len(records)
            if flexible:
                write_uvarint(out, size + 1)
            else:
                out += _INT32.pack(size)
            if isinstance(records, bytes | bytearray | memoryview):
                out += records
            elif records is not None:
                parts.append(bytes(out))
                parts.append(records)
                out = bytearray()
            if flexible:
                out.append(0)  # the partition's tagged fields
        if flexible:
            out.append(0)  # the topic's tagged fields
    if flexible:
        out.append(0)  # the body's tagged fields
    if out:  # before v12 a region can end the frame
        parts.append(bytes(out))
    return parts


def _write_count(out: bytearray, count: int, flexible: bool) -> None:
    if flexible:
        write_uvarint(out, count + 1)
    else:
        out += _INT32.pack(count)
