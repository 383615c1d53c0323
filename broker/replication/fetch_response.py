"""A follower's reading of a Fetch response: what it uses, in one walk of the frame.

The generic decoder makes a message object of every struct and runs one compiled plan
per struct, which for a follower's typical answer (one partition, one batch) is about
fifty Python calls; a follower then reads five fields per partition. This reader walks
the frame once at any Fetch version a follower may send (0-12) and keeps only those: the
request-level error and session id, and per partition its index, error code, high
watermark, log start offset, and the records as a slice of the frame (a memoryview,
never copied). What a follower does not use is
stepped over: the last stable offset, aborted transactions (a follower copies
transaction markers with the batches), the preferred read replica (KIP-392, for
consumers) and every tagged field (diverging epoch, current leader, snapshot id: a
follower that sends no last fetched epoch gets none that matter).

The results have the generic decoder's attribute names (``response.responses``,
``topic.partitions``, ``p.high_watermark``...), so the fetcher reads either; the unit
tests compare the two at every version. A frame that does not read (truncated, a length
past its end) raises ProtocolError as the generic decoder does, and the connection is
closed the same way.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from protocol import primitives
from protocol.errors import ErrorCode, ProtocolError

_INT32: Final = struct.Struct(">i")
#: throttle_time_ms, error_code, session_id (v7+)
_TOP: Final = struct.Struct(">ihi")
#: partition_index, error_code, high_watermark, last_stable_offset, log_start_offset (v5+)
_PARTITION: Final = struct.Struct(">ihqqq")
#: the same without log_start_offset (v4)
_PARTITION_V4: Final = struct.Struct(">ihqq")
#: partition_index, error_code, high_watermark (v0-3)
_PARTITION_V0: Final = struct.Struct(">ihq")
#: producer_id, first_offset of one aborted transaction
_ABORTED_SIZE: Final = 16

#: The Fetch versions this reader knows (every one served; 13+ name topics by id).
VERSIONS: Final = range(0, 13)


class FetchedPartition(NamedTuple):
    partition_index: int
    error_code: int
    high_watermark: int
    #: -1 before v5 (the field's default)
    log_start_offset: int
    records: memoryview | None


class FetchedTopic(NamedTuple):
    topic: str
    partitions: list[FetchedPartition]


class FetchedResponse(NamedTuple):
    #: the request-level error (v7+; 0 before)
    error_code: int
    responses: list[FetchedTopic]
    #: the incremental fetch session the leader keeps for us (v7+; 0: none)
    session_id: int = 0


def read_fetch_response(frame: bytes | bytearray | memoryview, version: int) -> FetchedResponse:
    """The response in ``frame`` (response header included, size prefix not) to a
    Fetch of ``version``. Raises ProtocolError when it does not read."""
    if version not in VERSIONS:
        raise ProtocolError(ErrorCode.INVALID_REQUEST, f"no fetch response reader for v{version}")
    buf = memoryview(frame)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    try:
        return _read(buf, version)
    except ProtocolError:
        raise
    except (struct.error, IndexError, ValueError) as exc:
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST,
            f"malformed FetchResponse v{version}: {type(exc).__name__}: {exc}",
        ) from None


def _read(buf: memoryview, version: int) -> FetchedResponse:
    flexible = version >= 12
    pos = 4  # the correlation id, matched by the connection already
    if flexible:
        pos = _skip_tags(buf, pos) if buf[pos] else pos + 1
    error_code = session_id = 0
    if version >= 7:
        _, error_code, session_id = _TOP.unpack_from(buf, pos)
        pos += _TOP.size
    elif version >= 1:
        pos += 4  # throttle_time_ms
    fixed = _PARTITION if version >= 5 else _PARTITION_V4 if version == 4 else _PARTITION_V0
    aborted_size = _ABORTED_SIZE
    topics: list[FetchedTopic] = []
    count, pos = _length(buf, pos, flexible)
    for _ in range(count):
        topic, pos = _string(buf, pos, flexible)
        partitions: list[FetchedPartition] = []
        n, pos = _length(buf, pos, flexible)
        for _ in range(n):
            fields = fixed.unpack_from(buf, pos)
            pos += fixed.size
            aborted = 0
            if version >= 4:
                aborted, pos = _length(buf, pos, flexible, nullable=True)
            for _ in range(aborted):
                pos += aborted_size
                if flexible:
                    pos = _skip_tags(buf, pos) if buf[pos] else pos + 1
            if version >= 11:
                pos += 4  # preferred_read_replica
            size, pos = _length(buf, pos, flexible, nullable=True)
            records = None
            if size >= 0:
                if size > len(buf) - pos:
                    raise primitives.malformed(f"records of {size} bytes at {pos} exceed the frame")
                records = buf[pos : pos + size]
                pos += size
            if flexible:
                pos = _skip_tags(buf, pos) if buf[pos] else pos + 1
            log_start = fields[4] if version >= 5 else -1
            partitions.append(FetchedPartition(fields[0], fields[1], fields[2], log_start, records))
        if flexible:
            pos = _skip_tags(buf, pos) if buf[pos] else pos + 1
        topics.append(FetchedTopic(topic, partitions))
    if flexible:
        pos = _skip_tags(buf, pos) if buf[pos] else pos + 1
    if pos > len(buf):
        raise primitives.malformed(f"FetchResponse runs {pos - len(buf)} bytes past the frame")
    return FetchedResponse(error_code, topics, session_id)


def _length(buf: memoryview, pos: int, flexible: bool, nullable: bool = False) -> tuple[int, int]:
    """An array or bytes length (-1 for null where ``nullable``): a compact uvarint of
    length + 1 in flexible versions, else an int32."""
    if flexible:
        if buf[pos] < 0x80:  # the common one-byte varint
            value, pos = buf[pos] - 1, pos + 1
        else:
            value, pos = primitives.read_uvarint(buf, pos)
            value -= 1
    else:
        value = _INT32.unpack_from(buf, pos)[0]
        pos += 4
    if value < -1 or (value == -1 and not nullable):
        raise primitives.malformed(f"invalid length {value} at offset {pos}")
    return value, pos


def _string(buf: memoryview, pos: int, flexible: bool) -> tuple[str, int]:
    if flexible:
        return primitives.read_compact_string(buf, pos)
    return primitives.read_string(buf, pos)


def _skip_tags(buf: memoryview, pos: int) -> int:
    """Past a tagged-field section (a count, then tag, size and data of each). The
    callers step over an empty one (a single zero byte, nearly always) themselves."""
    count, pos = primitives.read_uvarint(buf, pos)
    for _ in range(count):
        _, size, pos = primitives.read_tag_header(buf, pos)
        pos += size
    return pos
