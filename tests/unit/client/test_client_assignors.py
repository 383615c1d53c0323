"""The range and roundrobin assignors, and the consumer protocol's bytes."""

from __future__ import annotations

import pytest

from client.assignors import (
    ASSIGNORS,
    MemberAssignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
    roundrobin_assign,
)
from protocol.data import data_class, encode_data


def test_range_gives_contiguous_ranges_and_the_remainder_to_the_first_members() -> None:
    subs = {"c": Subscription(("t",)), "a": Subscription(("t",)), "b": Subscription(("t",))}
    assert range_assign(subs, {"t": 7}) == {
        "a": {"t": [0, 1, 2]},
        "b": {"t": [3, 4]},
        "c": {"t": [5, 6]},
    }


def test_range_works_topic_by_topic_so_first_members_gain_on_every_topic() -> None:
    # Kafka's documented example: two consumers, two topics of three partitions each
    subs = {"c0": Subscription(("t0", "t1")), "c1": Subscription(("t0", "t1"))}
    assert range_assign(subs, {"t0": 3, "t1": 3}) == {
        "c0": {"t0": [0, 1], "t1": [0, 1]},
        "c1": {"t0": [2], "t1": [2]},
    }


def test_roundrobin_deals_all_partitions_in_turn() -> None:
    subs = {"c0": Subscription(("t0", "t1")), "c1": Subscription(("t0", "t1"))}
    assert roundrobin_assign(subs, {"t0": 3, "t1": 3}) == {
        "c0": {"t0": [0, 2], "t1": [1]},
        "c1": {"t0": [1], "t1": [0, 2]},
    }


def test_roundrobin_passes_over_members_not_subscribed_to_the_topic() -> None:
    subs = {
        "c0": Subscription(("t0",)),
        "c1": Subscription(("t0", "t1")),
        "c2": Subscription(("t0", "t1", "t2")),
    }
    assert roundrobin_assign(subs, {"t0": 1, "t1": 2, "t2": 3}) == {
        "c0": {"t0": [0]},
        "c1": {"t1": [0]},
        "c2": {"t1": [1], "t2": [0, 1, 2]},
    }


def test_more_members_than_partitions_leaves_some_without_any() -> None:
    subs = {m: Subscription(("t",)) for m in ("a", "b", "c")}
    for assign in ASSIGNORS.values():
        out = assign(subs, {"t": 2})
        assert out["c"] == {}
        assert sorted(p for parts in out.values() for p in parts.get("t", [])) == [0, 1]


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_every_partition_goes_to_exactly_one_subscribed_member(name: str) -> None:
    subs = {
        f"m{i}": Subscription(tuple(t for j, t in enumerate(("a", "b", "c")) if (i + j) % 3))
        for i in range(5)
    }
    counts = {"a": 6, "b": 5, "c": 1}
    out = ASSIGNORS[name](subs, counts)
    owners: dict[tuple[str, int], list[str]] = {}
    for member, parts in out.items():
        for topic, ps in parts.items():
            assert topic in subs[member].topics
            for p in ps:
                owners.setdefault((topic, p), []).append(member)
    assert sorted(owners) == sorted((t, p) for t, n in counts.items() for p in range(n))
    assert all(len(ms) == 1 for ms in owners.values())
    assert ASSIGNORS[name](dict(reversed(list(subs.items()))), counts) == out


def test_a_topic_without_a_known_partition_count_is_assigned_to_nobody() -> None:
    subs = {"a": Subscription(("gone", "t"))}
    for assign in ASSIGNORS.values():
        assert assign(subs, {"t": 1}) == {"a": {"t": [0]}}


def test_subscription_and_assignment_survive_their_encoding() -> None:
    sub = Subscription(("orders", "payments"), b"\x01")
    assert decode_subscription(encode_subscription(sub)) == sub
    given = MemberAssignment({"orders": [2, 0], "payments": [1]})
    back = decode_assignment(encode_assignment(given))
    assert back.partitions == {"orders": [0, 2], "payments": [1]}
    assert back.topic_partitions() == [("orders", 0), ("orders", 2), ("payments", 1)]


def test_version_zero_bytes_are_what_every_client_reads() -> None:
    raw = encode_subscription(Subscription(("t",)))
    # int16 version 0, array of one string "t", null user data
    assert raw == b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"


def test_newer_subscription_versions_are_read() -> None:
    cls = data_class("ConsumerProtocolSubscription")
    raw = encode_data(
        "ConsumerProtocolSubscription",
        3,
        cls(
            topics=["t"],
            user_data=None,
            owned_partitions=[cls.TopicPartition(topic="t", partitions=[1])],
            generation_id=4,
            rack_id="r1",
        ),
    )
    assert decode_subscription(raw) == Subscription(("t",))


def test_an_empty_assignment_may_be_zero_bytes() -> None:
    assert decode_assignment(b"") == MemberAssignment()
