"""The follower's Fetch template: patched frames are the generic encoder's, byte for byte,
and a fetcher encodes again only when what it fetches changes."""

from __future__ import annotations

from typing import cast

import pytest

import protocol
from broker.partition import Partition
from broker.replication.fetch_request import FetchLimits, FetchTemplate, encode_fetch
from broker.replication.fetch_state import FetchState, PartitionFetchState
from broker.replication.fetcher import FetcherConfig, LeaderEndpoint, ReplicaFetcher
from broker.replication.throttle import ThrottleSide
from client.connection import PREFIX_SIZE
from client.security import PLAINTEXT
from protocol import ApiKey
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import unthrottled
from timer.clock import MockClock

LIMITS = FetchLimits(
    replica_id=2, max_wait_ms=500, min_bytes=1, max_bytes=10 << 20, partition_max_bytes=1 << 20
)
FETCH_VERSIONS = range(4, 13)

PARTITION_SETS: dict[str, list[tuple[TopicPartition, int]]] = {
    "one": [(TopicPartition("orders", 0), 5)],
    "interleaved topics": [
        (TopicPartition("a", 1), 0),
        (TopicPartition("b", 0), 3),
        (TopicPartition("a", 0), 7),
        (TopicPartition("c.x_y-z", 2), 1),
    ],
    # a name and a partition count whose compact lengths take two varint bytes
    "long name, many partitions": [(TopicPartition("t" * 200, p), p % 4) for p in range(130)],
}


def frame(template: FetchTemplate, offsets: list[tuple[int, int]], cid: int) -> bytes:
    request = template.request(offsets)
    return bytes(request.head_with(cid)) + request.tail


def generic(
    version: int,
    template: FetchTemplate,
    epochs: dict[TopicPartition, int],
    offsets: list[tuple[int, int]],
    cid: int,
) -> bytes:
    rows = [(tp, epochs[tp], f, s) for tp, (f, s) in zip(template.partitions, offsets, strict=True)]
    body = encode_fetch(version, "broker-2-fetcher-0", LIMITS, rows)
    return body[:8] + cid.to_bytes(4, "big") + body[PREFIX_SIZE:]


@pytest.mark.parametrize("version", FETCH_VERSIONS)
@pytest.mark.parametrize("name", PARTITION_SETS)
def test_patched_frames_are_the_generic_encoders(version: int, name: str) -> None:
    asked = PARTITION_SETS[name]
    epochs = dict(asked)
    template = FetchTemplate(version, "broker-2-fetcher-0", LIMITS, asked)
    n = len(asked)
    # offsets of every magnitude, changing from one send to the next
    for cid, offsets in enumerate(
        [
            [(0, 0)] * n,
            [(i * 1000 + 17, i) for i in range(n)],
            [(2**62 + i, 2**40 - i) for i in range(n)],
            [(5, 5)] * n,
        ]
    ):
        assert frame(template, offsets, cid) == generic(version, template, epochs, offsets, cid)


def test_partitions_are_grouped_by_topic_in_first_seen_order() -> None:
    template = FetchTemplate(12, "c", LIMITS, PARTITION_SETS["interleaved topics"])
    assert template.partitions == [
        TopicPartition("a", 1),
        TopicPartition("a", 0),
        TopicPartition("b", 0),
        TopicPartition("c.x_y-z", 2),
    ]


def test_the_frame_decodes_to_the_offsets_sent() -> None:
    asked = PARTITION_SETS["interleaved topics"]
    template = FetchTemplate(12, "broker-2-fetcher-0", LIMITS, asked)
    request = template.request([(100 + i, i) for i in range(len(asked))])
    raw = bytes(request.head_with(9)) + request.tail
    decoded = protocol.decode_request(raw[4:])
    assert decoded.header.api_key == ApiKey.FETCH and decoded.header.correlation_id == 9
    got = [
        (t.topic, p.partition, p.current_leader_epoch, p.fetch_offset, p.log_start_offset)
        for t in decoded.body.topics
        for p in t.partitions
    ]
    epochs = dict(asked)
    assert got == [
        (tp.topic, tp.partition, epochs[tp], 100 + i, i) for i, tp in enumerate(template.partitions)
    ]
    assert decoded.body.replica_id == 2 and decoded.body.max_bytes == 10 << 20


def test_offsets_must_come_one_pair_per_partition() -> None:
    template = FetchTemplate(12, "c", LIMITS, PARTITION_SETS["one"])
    with pytest.raises(ValueError):
        template.request([(1, 0), (2, 0)])


def test_a_fetcher_encodes_again_only_when_its_fetch_changes() -> None:
    clock = MockClock()
    fetcher = ReplicaFetcher(
        0,
        LeaderEndpoint(1, "127.0.0.1", 9092),
        FetcherConfig(broker_id=2, security=PLAINTEXT),
        clock,
        throttle=unthrottled(ThrottleSide.FOLLOWER, 2, clock),
    )
    a, b = TopicPartition("a", 0), TopicPartition("b", 1)
    no_partition = cast(Partition, None)  # the template reads states only
    for tp in (a, b):
        fetcher.adopt(tp, no_partition, PartitionFetchState(1, 5, FetchState.FETCHING))
    first = fetcher._template_for([a, b], 12)
    assert fetcher._template_for([a, b], 12) is first  # the same fetch: reused
    assert fetcher._template_for([a], 12).partitions == [a]  # b backed off
    again = fetcher._template_for([a, b], 12)
    assert again is not first and again.asked == first.asked
    fetcher.adopt(b, no_partition, PartitionFetchState(1, 6, FetchState.FETCHING))
    assert fetcher._template_for([a, b], 12).asked == [(a, 5), (b, 6)]  # a new epoch
    assert fetcher._template_for([a, b], 11).version == 11  # another leader version


def test_a_fetcher_leaves_out_what_its_throttle_holds_back() -> None:
    clock = MockClock()
    every = {"follower.replication.throttled.replicas": "*"}
    fetcher = ReplicaFetcher(
        0,
        LeaderEndpoint(1, "127.0.0.1", 9092),
        FetcherConfig(broker_id=2, security=PLAINTEXT),
        clock,
        throttle=unthrottled(
            ThrottleSide.FOLLOWER, 2, clock, lambda t: every if t == "a" else {}, lambda: 100
        ),
    )
    a, b = TopicPartition("a", 0), TopicPartition("b", 1)
    assert fetcher._held_back([a, b]) == set()  # nothing received yet
    fetcher.throttle.record(10_000)  # 1000 B/s over a fresh quota's 10 s, above 100
    assert fetcher._held_back([a, b]) == {a}
    fetcher.lags[a] = 0  # caught up with the leader's high watermark: in sync
    assert fetcher._held_back([a, b]) == set()


@pytest.mark.parametrize("version", FETCH_VERSIONS)
def test_session_fields_are_patched_too(version: int) -> None:
    """An incremental request naming every partition goes out as the template, its
    session id and epoch patched (from v7; before, the request has neither)."""
    asked = PARTITION_SETS["interleaved topics"]
    epochs = dict(asked)
    template = FetchTemplate(version, "broker-2-fetcher-0", LIMITS, asked)
    offsets = [(i * 10, i) for i in range(len(asked))]
    rows = [(tp, epochs[tp], f, s) for tp, (f, s) in zip(template.partitions, offsets, strict=True)]
    for session in [(123456789, 7), (2**31 - 1, 2**31 - 1), (0, -1), (5, 0)]:
        request = template.request(offsets, session)
        got = bytes(request.head_with(3)) + request.tail
        sent = session if version >= 7 else (0, -1)
        body = encode_fetch(version, "broker-2-fetcher-0", LIMITS, rows, sent)
        assert got == body[:8] + (3).to_bytes(4, "big") + body[PREFIX_SIZE:]
