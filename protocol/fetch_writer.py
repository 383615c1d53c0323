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

What it writes is what the Fetch handler answers: a top-level error of 0, the session id
it is given (0 outside incremental fetch sessions), a throttle time of 0, per partition no
preferred read replica (-1), aborted transactions null or, for a read_committed fetch, an
empty list (the broker keeps no transaction index), and no tagged fields (the leader
sends no diverging epoch, current leader or snapshot id). Anything else goes through the
generic encoder.

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
#: Counts and lengths below this are written from a table (every count of a follower's
#: answer, its one topic's name length); the records' length is above it.
_SMALL: Final = 0x7F
#: per layout (False: int32, True: compact), each small count's bytes
_SMALL_COUNTS: Final = {
    False: [_INT32.pack(n) for n in range(_SMALL)],
    True: [bytes([n + 1]) for n in range(_SMALL)],
}
#: per layout, each topic's name with its length before it, as written (a follower asks
#: for the same few topics in every fetch); cleared when it grows past _NAMES_KEPT
_NAMES: Final[dict[bool, dict[str, bytes]]] = {False: {}, True: {}}
_NAMES_KEPT: Final = 1024


def _after_correlation_id(version: int) -> bytes:
    """What follows the correlation id up to the topics, all constant: the header's
    tagged fields (v12), throttle_time_ms 0 and, from v7, error_code 0 and session_id 0."""
    tagged = b"\x00" if version >= _FLEXIBLE else b""
    return tagged + bytes(4 if version < 7 else 10)


def _partition_head(version: int) -> struct.Struct:
    """partition_index to log_start_offset (the fixed fields before aborted_transactions)."""
    return struct.Struct(">ihqq" if version < 5 else ">ihqqq")


def _between(version: int, read_committed: bool) -> bytes:
    """aborted_transactions (null, or empty for read_committed) then, from v11,
    preferred_read_replica -1."""
    if version >= _FLEXIBLE:
        return (b"\x01" if read_committed else b"\x00") + b"\xff\xff\xff\xff"
    aborted = b"\x00\x00\x00\x00" if read_committed else b"\xff\xff\xff\xff"
    return aborted + (b"\xff\xff\xff\xff" if version >= 11 else b"")


#: per version: (the bytes after the correlation id, the partition's fixed fields,
#: what lies between them and records for read_uncommitted, for read_committed)
_LAYOUTS: Final = {
    v: (_after_correlation_id(v), _partition_head(v), _between(v, False), _between(v, True))
    for v in VERSIONS
}


def fetch_response_parts(
    correlation_id: int,
    version: int,
    topics: Sequence[tuple[str, Sequence[PartitionAnswer]]],
    read_committed: bool,
    session_id: int = 0,
) -> list[object]:
    """The Fetch response's pieces (header and body, without the size prefix) for
    ``topics`` in that order, each with its partitions' answers in order; from v7 the
    ``session_id`` of an incremental fetch session (0: none)."""
    head, partition_head, uncommitted, committed = _LAYOUTS[version]
    if session_id and version >= 7:
        head = head[:-4] + _INT32.pack(session_id)
    between = committed if read_committed else uncommitted
    flexible = version >= _FLEXIBLE
    with_log_start = version >= 5
    small, names = _SMALL_COUNTS[flexible], _NAMES[flexible]
    out = bytearray(_INT32.pack(correlation_id))
    out += head
    parts: list[object] = []
    count = len(topics)
    if count < _SMALL:
        out += small[count]
    else:
        _write_count(out, count, flexible)
    for name, partitions in topics:
        name_field = names.get(name)
        if name_field is None:
            name_field = _name_field(name, flexible)
        out += name_field
        count = len(partitions)
        if count < _SMALL:
            out += small[count]
        else:
            _write_count(out, count, flexible)
        for index, error, high_watermark, stable, log_start, records in partitions:
            if with_log_start:
                out += partition_head.pack(index, error, high_watermark, stable, log_start)
            else:
                out += partition_head.pack(index, error, high_watermark, stable)
            out += between
            if records is None:
                out += b"\x01" if flexible else b"\x00\x00\x00\x00"  # empty, not null
            else:
                count = len(records)
                if count < _SMALL:
                    out += small[count]
                else:
                    _write_count(out, count, flexible)
                if isinstance(records, bytes | bytearray | memoryview):
                    out += records
                else:
                    parts += (bytes(out), records)
                    out = bytearray()
            if flexible:
                out += b"\x00"  # the partition's tagged fields
        if flexible:
            out += b"\x00"  # the topic's tagged fields
    if flexible:
        out += b"\x00"  # the body's tagged fields
    if out:  # before v12 a region can end the frame
        parts.append(bytes(out))
    return parts


def _write_count(out: bytearray, count: int, flexible: bool) -> None:
    """A length or count: int32, or (flexible) an unsigned varint of count + 1. The
    varints of up to three bytes (a record region's length up to 2 MiB, in every
    answer) are laid out here without a loop."""
    if not flexible:
        out += _INT32.pack(count)
        return
    value = count + 1
    if value < 1 << 7:
        out += bytes((value,))
    elif value < 1 << 14:
        out += bytes((value & 0x7F | 0x80, value >> 7))
    elif value < 1 << 21:
        out += bytes((value & 0x7F | 0x80, value >> 7 & 0x7F | 0x80, value >> 14))
    else:
        write_uvarint(out, value)


def _name_field(name: str, flexible: bool) -> bytes:
    """A topic name as written (its length, int16 or compact, then UTF-8), kept for the
    next answer."""
    encoded = name.encode()
    length = bytearray()
    if flexible:
        _write_count(length, len(encoded), True)
    else:
        length += _INT16.pack(len(encoded))
    names = _NAMES[flexible]
    if len(names) >= _NAMES_KEPT:
        names.clear()
    field = names[name] = bytes(length) + encoded
    return field
