"""Replica assignment (Kafka's rack-unaware algorithm) and topic/partition plans."""

from __future__ import annotations

import random
import uuid
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.admin.assignment import (
    AssignmentError,
    assign_replicas,
    check_manual_assignment,
    start_index_for_new_partitions,
)
from broker.admin.topics import (
    NO_NUM_PARTITIONS,
    NO_REPLICATION_FACTOR,
    AdminError,
    plan_partitions,
    plan_topic,
)
from protocol import ErrorCode
from zk.model import TopicAssignment


def test_kafkas_documented_example() -> None:
    # Kafka's AdminUtils doc: 5 brokers, 10 partitions, RF 3, start index 0
    got = assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0)
    assert got == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }  # fmt: skip


def test_brokers_are_taken_in_id_order() -> None:
    assert assign_replicas([4, 2, 9], 3, 1, start_index=0) == {0: [2], 1: [4], 2: [9]}


def test_seeded_rng_is_deterministic() -> None:
    a = assign_replicas([0, 1, 2], 6, 2, rng=random.Random(7))
    b = assign_replicas([0, 1, 2], 6, 2, rng=random.Random(7))
    assert a == b


@settings(max_examples=100, deadline=None)
@given(
    brokers=st.sets(st.integers(0, 50), min_size=1, max_size=8),
    partitions=st.integers(1, 40),
    data=st.data(),
)
def test_assignment_invariants(brokers: set[int], partitions: int, data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    seed = data.draw(st.integers(0, 1000))
    got = assign_replicas(sorted(brokers), partitions, rf, rng=random.Random(seed))
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= brokers
    # leaders spread evenly: counts differ by at most one
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1


@pytest.mark.parametrize(
    ("partitions", "rf", "code"),
    [(0, 1, ErrorCode.INVALID_PARTITIONS), (1, 0, ErrorCode.INVALID_REPLICATION_FACTOR),
     (1, 4, ErrorCode.INVALID_REPLICATION_FACTOR)],
)  # fmt: skip
def test_invalid_requests(partitions: int, rf: int, code: int) -> None:
    with pytest.raises(AssignmentError) as info:
        assign_replicas([0, 1, 2], partitions, rf)
    assert info.value.error_code == code


def test_new_partitions_continue_from_partition_zeros_leader() -> None:
    brokers = [0, 1, 2, 3, 4]
    first = assign_replicas(brokers, 3, 2, start_index=2)
    start = start_index_for_new_partitions(brokers, first)
    assert start == 2
    more = assign_replicas(brokers, 4, 2, start_index=start, start_partition=3)
    whole = assign_replicas(brokers, 7, 2, start_index=2)
    assert {**first, **more} == whole
    assert start_index_for_new_partitions([0, 1], {0: [7, 0]}) is None


def test_manual_assignment_checks() -> None:
    check_manual_assignment({0: [1, 2], 1: [2, 1]}, [1, 2])
    bad: list[tuple[dict[int, list[int]], str]] = [
        ({1: [1]}, "consecutive"),
        ({0: [1, 1]}, "Duplicate"),
        ({0: [1, 2], 1: [1]}, "same number"),
        ({0: [9]}, "Unknown broker"),
        ({0: []}, "no replicas"),
    ]
    for assignment, words in bad:
        with pytest.raises(AssignmentError, match=words) as info:
            check_manual_assignment(assignment, [1, 2])
        assert info.value.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    check_manual_assignment({0: [9]}, None)  # creating a topic does not check liveness


def _plan(name: str = "t", **kw: object) -> object:
    args: dict[str, object] = {
        "num_partitions": NO_NUM_PARTITIONS,
        "replication_factor": NO_REPLICATION_FACTOR,
        "manual": {},
        "configs": {},
    }
    args.update(kw)
    return plan_topic(
        name,
        args["num_partitions"],  # type: ignore[arg-type]
        args["replication_factor"],  # type: ignore[arg-type]
        args["manual"],  # type: ignore[arg-type]
        args["configs"],  # type: ignore[arg-type]
        live_brokers=[0, 1, 2],
        existing_topics={"existing", "a_b"},
        default_partitions=4,
        default_replication_factor=2,
        rng=random.Random(1),
    )


def test_plan_topic_uses_the_defaults_and_makes_an_id() -> None:
    plan = _plan()
    assert plan.num_partitions == 4 and plan.replication_factor == 2  # type: ignore[attr-defined]
    assert plan.topic_id.int != 0  # type: ignore[attr-defined]
    assert _plan(num_partitions=2, replication_factor=3).num_partitions == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "kw", "code"),
    [
        ("existing", {}, ErrorCode.TOPIC_ALREADY_EXISTS),
        ("a.b", {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("bad name", {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("t", {"replication_factor": 5}, ErrorCode.INVALID_REPLICATION_FACTOR),
        ("t", {"num_partitions": 2, "manual": {0: [1]}}, ErrorCode.INVALID_REQUEST),
        ("t", {"configs": {"retention.ms": "soon"}}, ErrorCode.INVALID_CONFIG),
        ("t", {"configs": {"no.such.key": "1"}}, ErrorCode.INVALID_CONFIG),
        ("t", {"configs": {"retention.ms": None}}, ErrorCode.INVALID_CONFIG),
    ],
)
def test_plan_topic_refusals(name: str, kw: dict[str, object], code: int) -> None:
    with pytest.raises(AdminError) as info:
        _plan(name, **kw)
    assert info.value.error_code == code


def test_plan_partitions() -> None:
    current = TopicAssignment("t", uuid.uuid4(), {0: (1, 2), 1: (2, 0)})
    new = plan_partitions(current, 4, None, live_brokers=[0, 1, 2])
    assert sorted(new) == [2, 3] and all(len(r) == 2 for r in new.values())
    manual = plan_partitions(current, 3, [[0, 1]], live_brokers=[0, 1, 2])
    assert manual == {2: [0, 1]}
    for count, assignment, code in [
        (1, None, ErrorCode.INVALID_PARTITIONS),
        (2, None, ErrorCode.INVALID_PARTITIONS),
        (4, [[0, 1]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (3, [[0, 7]], ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ]:
        with pytest.raises(AdminError) as info:
            plan_partitions(current, count, assignment, live_brokers=[0, 1, 2])
        assert info.value.error_code == code
