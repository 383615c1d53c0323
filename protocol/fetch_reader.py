"""A leader's reading of a Fetch request: the message objects, straight from the frame.

Followers send a leader one Fetch per round trip, the request it decodes most often
while it replicates. The generic decoder runs a compiled plan per struct and a reader
call per string, array and length (about fifty Python calls for one topic and one
partition); this reader unpacks the same fields with one ``struct`` call per partition
and a few for the rest, and builds the same objects: ``RequestHeader`` and
``FetchRequest`` values equal to the generic decoder's, at every Fetch version the
broker serves (0-12: topics by name, flexible from 12). The unit tests compare the two
at every version, over many shapes.

It reads the shape Fetch requests have in practice, followers' and consumers' alike,
and declines (returns None) anything else, which the generic decoder then reads:

- no tagged fields anywhere (a flexible request's tagged sections are all empty);
- no forgotten topics (there are none outside incremental fetch sessions, which this
  broker declines);
- counts and lengths of a flexible request below 127 (one-byte varints);
- no null where the generic decoder would refuse one.

A frame that is malformed within that shape (cut short, a string that is not UTF-8 or
runs past the end) raises ``struct.error``, ``IndexError`` or ``ValueError``; the caller
then lets the generic decoder read it, so the error reported is the generic decoder's.

Layout, in order (``v`` the version; "compact" lengths are unsigned varints of length
+ 1, used from v12, int16 string lengths and int32 counts before):

- header: api_key int16, api_version int16, correlation_id int32, client_id (nullable
  string, int16 length at every version); v12: the header's tagged section
- replica_id, max_wait_ms, min_bytes int32, v3+: max_bytes int32, v4+: isolation_level
  int8; v7+: session_id, session_epoch int32 (a field a version lacks takes the spec's
  default: max_bytes 0x7fffffff, isolation_level 0)
- topics array; per topic its name (string) then the partitions array; per partition
  partition int32, v9+: current_leader_epoch int32, fetch_offset int64, v12+:
  last_fetched_epoch int32, v5+: log_start_offset int64, partition_max_bytes int32;
  v12: the partition's and the topic's tagged sections
- v7+: forgotten_topics_data array (empty); v11+: rack_id string; v12: the body's
  tagged section
"""

from __future__ import annotations

import struct
from typing import Final

from protocol.messages import FetchRequest, RequestHeader

#: The Fetch versions this reader knows.
VERSIONS: Final = range(0, 13)

#: First version with a compact (flexible) layout.
_FLEXIBLE: Final = 12

#: api_key, api_version, correlation_id and the client id's length
_HEADER: Final = struct.Struct(">hhih")
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")

_Partition = FetchRequest.FetchPartition
_Topic = FetchRequest.FetchTopic


#: max_bytes of a request whose version has none (v0-2), as the spec defaults it
_NO_MAX_BYTES: Final = 0x7FFFFFFF


def _body_head(version: int) -> struct.Struct:
    """replica_id to isolation_level (max_bytes from v3, isolation_level from v4); from
    v7, the session id and epoch too."""
    if version < 3:
        return struct.Struct(">iii")
    if version < 4:
        return struct.Struct(">iiii")
    return struct.Struct(">iiiib" if version < 7 else ">iiiibii")


def _partition_fields(version: int) -> struct.Struct:
    """A partition's fields, all fixed-width, in wire order (see the module doc)."""
    if version < 5:
        return struct.Struct(">iqi")
    if version < 9:
        return struct.Struct(">iqqi")
    if version < _FLEXIBLE:
        return struct.Struct(">iiqqi")
    return struct.Struct(">iiqiqi")


#: per version: (the request-wide fields, a partition's fields)
_LAYOUTS: Final = {v: (_body_head(v), _partition_fields(v)) for v in VERSIONS}


def read_fetch_request(frame: bytes, version: int) -> tuple[RequestHeader, FetchRequest] | None:
    """The header and body of a Fetch request frame (without its size prefix) at
    ``version`` (one of VERSIONS), or None when the frame has another shape than the
    one this reader knows (see the module doc). ``bytes``, not a memoryview: a request
    of a few dozen bytes is cheaper to copy once than to read through a view."""
    head, partition_fields = _LAYOUTS[version]
    flexible = version >= _FLEXIBLE
    api_key, api_version, correlation_id, length = _HEADER.unpack_from(frame, 0)
    pos = _HEADER.size
    client_id = None
    if length < -1:
        return None
    if length != -1:
        client_id, pos = _text(frame, pos, length)
    if flexible:
        if frame[pos]:
            return None  # tagged fields in the header
        pos += 1
    header = RequestHeader(
        api_key=api_key, api_version=api_version, correlation_id=correlation_id, client_id=client_id
    )

    fields = head.unpack_from(frame, pos)
    pos += head.size
    topic_count, pos = _length(frame, pos, flexible)
    if topic_count < 0:
        return None  # null topics, or a count the reader declines
    topics = []
    for _ in range(topic_count):
        length, pos = _length(frame, pos, flexible) if flexible else _string_length(frame, pos)
        if length < 0:
            return None  # null, or a length the reader declines
        name, pos = _text(frame, pos, length)
        count, pos = _length(frame, pos, flexible)
        if count < 0:
            return None
        partitions = []
        for _ in range(count):
            values = partition_fields.unpack_from(frame, pos)
            pos += partition_fields.size
            # fields a version does not carry take their defaults (-1), as in the specs
            if version >= _FLEXIBLE:
                partition, epoch, offset, last_epoch, log_start, max_bytes = values
                if frame[pos]:
                    return None  # the partition's tagged fields
                pos += 1
            elif version >= 9:
                partition, epoch, offset, log_start, max_bytes = values
                last_epoch = -1
            elif version >= 5:
                partition, offset, log_start, max_bytes = values
                epoch = last_epoch = -1
            else:
                partition, offset, max_bytes = values
                epoch = last_epoch = log_start = -1
            partitions.append(
                _Partition(
                    partition=partition,
                    current_leader_epoch=epoch,
                    fetch_offset=offset,
                    last_fetched_epoch=last_epoch,
                    log_start_offset=log_start,
                    partition_max_bytes=max_bytes,
                )
            )
        if flexible:
            if frame[pos]:
                return None  # the topic's tagged fields
            pos += 1
        topics.append(_Topic(topic=name, partitions=partitions))

    rack_id = ""
    if version >= 7:
        forgotten, pos = _length(frame, pos, flexible)
        if forgotten != 0:
            return None
    if version >= 11:
        length, pos = _length(frame, pos, flexible) if flexible else _string_length(frame, pos)
        if length < 0:
            return None
        rack_id, pos = _text(frame, pos, length)
    if flexible and frame[pos]:
        return None  # the body's tagged fields
    session_id, epoch, isolation, max_bytes = 0, -1, 0, _NO_MAX_BYTES
    if version >= 7:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation, session_id, epoch = fields
    elif version >= 4:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation = fields
    elif version == 3:
        replica_id, max_wait_ms, min_bytes, max_bytes = fields
    else:
        replica_id, max_wait_ms, min_bytes = fields
    body = FetchRequest(
        replica_id=replica_id,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation,
        session_id=session_id,
        session_epoch=epoch,
        topics=topics,
        forgotten_topics_data=[],
        rack_id=rack_id,
    )
    return header, body


def _length(frame: bytes, pos: int, flexible: bool) -> tuple[int, int]:
    """An array count or a compact string length: int32, or (flexible) a one-byte
    varint of length + 1; -1 for null, or for a longer varint (declined)."""
    if not flexible:
        return _INT32.unpack_from(frame, pos)[0], pos + 4
    encoded = frame[pos]
    return (encoded - 1 if encoded < 0x80 else -1), pos + 1


def _string_length(frame: bytes, pos: int) -> tuple[int, int]:
    """A non-compact string's int16 length."""
    return _INT16.unpack_from(frame, pos)[0], pos + 2


def _text(frame: bytes, pos: int, length: int) -> tuple[str, int]:
    """``length`` (>= 0) bytes of UTF-8 at ``pos``; IndexError when they run past the
    frame (the generic decoder then reads it)."""
    end = pos + length
    if end > len(frame):
        raise IndexError(f"a string of {length} bytes at offset {pos} runs past the frame")
    return str(frame[pos:end], "utf-8"), end
