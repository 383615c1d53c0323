"""The follower's Fetch request: encoded once per partition set, patched on every send.

A fetcher sends the same Fetch over and over: the same partitions at the same leader
epochs with the same limits; from one turn to the next only each partition's fetch
offset (our log end) and log start offset move. Running that through the generic codec
every turn (building the message objects, then the per-struct encode plans) was about
a fifth of a follower's Python work per fetch cycle. A :class:`FetchTemplate` encodes
the request once, with the generic encoder, and a send packs the two offsets of each
partition into a copy of those bytes: the frame is byte for byte what the codec would
write for the same values (the unit tests compare them at every version).

Where the offsets sit is learnt from the codec, not from a second description of the
layout: the request is encoded three times, with every fetch offset and log start
offset 0, then with the fetch offsets -1, then with the log start offsets -1. The
fields are int64 (fixed width, 8 bytes that are all 0x00 or all 0xFF), so the bytes
that differ between two encodings are exactly that field of every partition, in
request order. A version without log start offsets (v4) simply shows no difference.

A template serves the sessionless Fetch (versions before 7, which have no sessions);
within a fetch session (v7+) each request names only the partitions that changed and is
encoded by :func:`session_fetch`.

A template is valid for one partition list (in the order the fetcher asked for them),
with the leader epoch of each, at one negotiated version; the fetcher builds a new one
when any of these changes (a partition added, removed, backed off or re-added at a new
epoch; a reconnect to a leader that negotiated another version). Partitions are laid
out grouped by topic, in first-seen order, as Kafka's fetcher does;
:attr:`FetchTemplate.partitions` is that order, which is the order a send takes the
offsets in.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import protocol
from broker.replication.fetch_session import SessionRequest
from client.connection import PREFIX_SIZE, PrebuiltRequest
from protocol import ApiKey
from protocol.messages import FetchRequest
from protocol.values import TopicPartition

_SIZE: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
_INT32: Final = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """The request-wide settings of a follower's Fetch (Kafka's replica.fetch.* keys)."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partition_max_bytes: int


def fetch_request(
    limits: FetchLimits,
    partitions: Sequence[tuple[TopicPartition, int, int, int]],
    session: tuple[int, int] = (0, -1),
    forgotten: Sequence[TopicPartition] = (),
) -> FetchRequest:
    """The Fetch body for ``(partition, leader epoch, fetch offset, log start offset)``
    of each partition, grouped by topic in first-seen order; ``session`` is the (id,
    epoch) of an incremental fetch session (``broker.replication.fetch_session``; (0,
    -1): none) and ``forgotten`` the partitions it drops."""
    dropped: dict[str, list[int]] = {}
    for tp in forgotten:
        dropped.setdefault(tp.topic, []).append(tp.partition)
    topics: dict[str, list[FetchRequest.FetchPartition]] = {}
    for tp, epoch, fetch_offset, log_start_offset in partitions:
        topics.setdefault(tp.topic, []).append(
            FetchRequest.FetchPartition(
                partition=tp.partition,
                current_leader_epoch=epoch,
                fetch_offset=fetch_offset,
                last_fetched_epoch=-1,
                log_start_offset=log_start_offset,
                partition_max_bytes=limits.partition_max_bytes,
            )
        )
    return FetchRequest(
        replica_id=limits.replica_id,
        max_wait_ms=limits.max_wait_ms,
        min_bytes=limits.min_bytes,
        max_bytes=limits.max_bytes,
        isolation_level=0,
        session_id=session[0],
        session_epoch=session[1],
        topics=[FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        forgotten_topics_data=[
            FetchRequest.ForgottenTopic(topic=t, partitions=ps) for t, ps in dropped.items()
        ],
        rack_id="",
    )


def encode_fetch(
    version: int,
    client_id: str,
    limits: FetchLimits,
    partitions: Sequence[tuple[TopicPartition, int, int, int]],
    session: tuple[int, int] = (0, -1),
) -> bytes:
    """The whole frame (size prefix, header with correlation id 0, body) as the generic
    encoder writes it."""
    frame = protocol.encode_request(
        protocol.make_request(
            ApiKey.FETCH, version, 0, client_id, fetch_request(limits, partitions, session)
        )
    )
    return _SIZE.pack(len(frame)) + frame


def session_fetch(
    version: int, client_id: str, limits: FetchLimits, request: SessionRequest
) -> PrebuiltRequest:
    """A Fetch within an incremental fetch session, through the generic encoder: an
    incremental request names few partitions, so no template is kept for it."""
    rows = [(tp, epoch, offset, start) for tp, (epoch, offset, start) in request.partitions]
    body = fetch_request(limits, rows, (request.session_id, request.epoch), request.forgotten)
    return PrebuiltRequest.encode(ApiKey.FETCH, version, client_id, body)


def _changed_run(a: bytes, b: bytes, width: int) -> int | None:
    """Start of the one ``width``-byte field that differs between two encodings (None
    when none does: a field this version lacks)."""
    diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    if not diff:
        return None
    if diff != list(range(diff[0], diff[0] + width)):
        raise ValueError("the session fields are not where a Fetch puts them")
    return diff[0]


def _changed_fields(a: bytes, b: bytes) -> list[int]:
    """Start of each 8-byte field that differs between two encodings of one request."""
    diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    starts = diff[::8]
    if diff != [s + k for s in starts for k in range(8)]:
        raise ValueError("the offsets are not 8-byte fields of the encoded request")
    return starts


class FetchTemplate:
    """A follower's Fetch for one partition list at one version; :meth:`request` makes
    the frame to send for the current offsets."""

    __slots__ = ("_head", "_patches", "_session_at", "_tail", "asked", "partitions", "version")

    def __init__(
        self,
        version: int,
        client_id: str,
        limits: FetchLimits,
        asked: Sequence[tuple[TopicPartition, int]],
    ) -> None:
        #: the negotiated Fetch version the frame is encoded at
        self.version = version
        #: ``(partition, leader epoch)`` as the fetcher asked for them
        self.asked = list(asked)
        epochs = dict(self.asked)
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp, _ in self.asked:
            by_topic.setdefault(tp.topic, []).append(tp)
        #: the partitions in the order they are on the wire (and take their offsets in)
        self.partitions = [tp for tps in by_topic.values() for tp in tps]

        def encoded(
            fetch_offset: int, log_start_offset: int, session: tuple[int, int] = (0, -1)
        ) -> bytes:
            rows = [(tp, epochs[tp], fetch_offset, log_start_offset) for tp in self.partitions]
            return encode_fetch(version, client_id, limits, rows, session)

        base = encoded(0, 0)
        fetch_at = _changed_fields(base, encoded(-1, 0))
        start_at = _changed_fields(base, encoded(0, -1))
        if len(fetch_at) != len(self.partitions) or len(start_at) not in (0, len(fetch_at)):
            raise ValueError(f"cannot place the offsets of {len(self.partitions)} partitions")
        self._head = base[:PREFIX_SIZE]
        self._tail = bytearray(base[PREFIX_SIZE:])
        #: per partition, where its fetch offset and (if this version has one) its log
        #: start offset sit in the tail
        self._patches = [
            (f - PREFIX_SIZE, start_at[i] - PREFIX_SIZE if start_at else -1)
            for i, f in enumerate(fetch_at)
        ]
        #: where the session id and epoch (int32, v7+) sit in the tail; None before v7
        session_id_at = _changed_run(base, encoded(0, 0, (-1, -1)), 4)
        epoch_at = _changed_run(base, encoded(0, 0, (0, 0)), 4)
        self._session_at = (
            (session_id_at - PREFIX_SIZE, epoch_at - PREFIX_SIZE)
            if session_id_at is not None and epoch_at is not None
            else None
        )

    def request(
        self, offsets: Sequence[tuple[int, int]], session: tuple[int, int] = (0, -1)
    ) -> PrebuiltRequest:
        """The request for ``(fetch offset, log start offset)`` of each partition, in
        :attr:`partitions` order, with the fetch session's ``(id, epoch)`` from v7 (an
        incremental request that names every partition is this frame too)."""
        tail = self._tail
        if self._session_at is not None:
            _INT32.pack_into(tail, self._session_at[0], session[0])
            _INT32.pack_into(tail, self._session_at[1], session[1])
        pack_into = _INT64.pack_into
        for (fetch_at, start_at), (fetch_offset, log_start_offset) in zip(
            self._patches, offsets, strict=True
        ):
            pack_into(tail, fetch_at, fetch_offset)
            if start_at >= 0:
                pack_into(tail, start_at, log_start_offset)
        # A copy: the transport may hold on to what it is given until it is written.
        return PrebuiltRequest(ApiKey.FETCH, self.version, self._head, bytes(tail))
