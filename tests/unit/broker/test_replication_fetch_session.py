"""A replica fetcher's fetch session: full and incremental requests, answers, resets."""

from __future__ import annotations

from broker.replication.fetch_request import FetchLimits, fetch_request, session_fetch
from broker.replication.fetch_session import MAX_EPOCH, FollowerSession
from protocol import ApiKey, ErrorCode, decode_request
from protocol.values import TopicPartition

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)
LIMITS = FetchLimits(replica_id=1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20,
                     partition_max_bytes=1 << 16)  # fmt: skip


def test_first_request_is_full_and_opens_a_session() -> None:
    s = FollowerSession()
    wanted = {A: (3, 10, 0), B: (3, 20, 0)}
    r = s.build(wanted)
    assert (r.session_id, r.epoch, r.full) == (0, 0, True)
    assert r.partitions == list(wanted.items()) and r.forgotten == []
    s.on_answer(r, ErrorCode.NONE, 99)
    assert (s.session_id, s.epoch, s.held) == (99, 1, wanted)


def test_incremental_names_only_what_moved_and_forgets_what_left() -> None:
    s = FollowerSession()
    s.on_answer(s.build({A: (3, 10, 0), B: (3, 20, 0)}), ErrorCode.NONE, 99)
    r = s.build({A: (3, 10, 0), B: (3, 25, 0)})
    assert (r.session_id, r.epoch) == (99, 1)
    assert r.partitions == [(B, (3, 25, 0))] and r.forgotten == []
    s.on_answer(r, ErrorCode.NONE, 99)
    r = s.build({A: (3, 10, 0), C: (1, 0, 0)})
    assert r.epoch == 2 and r.partitions == [(C, (1, 0, 0))] and r.forgotten == [B]
    s.on_answer(r, ErrorCode.NONE, 99)
    assert s.held == {A: (3, 10, 0), C: (1, 0, 0)} and s.epoch == 3
    idle = s.build({A: (3, 10, 0), C: (1, 0, 0)})
    assert idle.partitions == [] and idle.forgotten == []  # a caught-up follower's request


def test_a_new_leader_epoch_is_sent() -> None:
    s = FollowerSession()
    s.on_answer(s.build({A: (3, 10, 0)}), ErrorCode.NONE, 5)
    assert s.build({A: (4, 10, 0)}).partitions == [(A, (4, 10, 0))]


def test_no_room_at_the_leader_stays_full() -> None:
    s = FollowerSession()
    r = s.build({A: (3, 10, 0)})
    s.on_answer(r, ErrorCode.NONE, 0)
    again = s.build({A: (3, 10, 0)})
    assert again.full and again.session_id == 0 and again.partitions == [(A, (3, 10, 0))]


def test_session_errors_and_lost_connections_start_over() -> None:
    for error in (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH):
        s = FollowerSession()
        s.on_answer(s.build({A: (3, 10, 0)}), ErrorCode.NONE, 7)
        s.on_answer(s.build({A: (3, 11, 0)}), error, 0)
        r = s.build({A: (3, 11, 0)})
        assert r.full and r.session_id == 0 and r.partitions == [(A, (3, 11, 0))]
    s = FollowerSession()
    s.on_answer(s.build({A: (3, 10, 0)}), ErrorCode.NONE, 7)
    s.reset()
    assert s.build({A: (3, 10, 0)}).full


def test_epoch_wraps_to_one() -> None:
    s = FollowerSession(session_id=7, epoch=MAX_EPOCH, held={A: (3, 10, 0)})
    s.on_answer(s.build({A: (3, 10, 0)}), ErrorCode.NONE, 7)
    assert s.epoch == 1


def test_session_fetch_encodes_the_session_fields() -> None:
    s = FollowerSession()
    s.on_answer(s.build({A: (3, 10, 0), B: (3, 20, 5)}), ErrorCode.NONE, 42)
    r = s.build({A: (3, 11, 0)})
    prebuilt = session_fetch(12, "broker-1-fetcher-0", LIMITS, r)
    decoded = decode_request(prebuilt.head[4:] + prebuilt.tail)
    header, body = decoded.header, decoded.body
    assert header.api_key == ApiKey.FETCH and header.api_version == 12
    assert (body.session_id, body.session_epoch) == (42, 1)
    assert [(t.topic, [p.partition for p in t.partitions]) for t in body.topics] == [("t", [0])]
    assert body.topics[0].partitions[0].fetch_offset == 11
    assert [(t.topic, t.partitions) for t in body.forgotten_topics_data] == [("t", [1])]
    assert body == fetch_request(LIMITS, [(A, 3, 11, 0)], (42, 1), [B])


def test_build_changes_compares_only_the_candidates() -> None:
    s = FollowerSession()
    wanted = {A: (3, 10, 0), B: (3, 20, 0)}
    first = s.build_changes(wanted, [])  # no session yet: full, whatever the candidates
    assert first.full and first.partitions == list(wanted.items())
    s.on_answer(first, ErrorCode.NONE, 99)
    moved = {A: (3, 10, 0), B: (3, 25, 0), C: (1, 0, 0)}
    r = s.build_changes(moved, [B, C])
    assert r.partitions == [(B, (3, 25, 0)), (C, (1, 0, 0))] and r.forgotten == []
    s.on_answer(r, ErrorCode.NONE, 99)
    assert s.held == moved and s.epoch == 2
    r = s.build_changes({A: (3, 10, 0), C: (1, 0, 0)}, [A, B])  # B left, A as held
    assert r.partitions == [] and r.forgotten == [B]
    s.on_answer(r, ErrorCode.NONE, 99)
    assert s.held == {A: (3, 10, 0), C: (1, 0, 0)}
    failed = s.build_changes({A: (3, 11, 0), C: (1, 0, 0)}, [A])
    s.on_answer(failed, ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    assert (s.session_id, s.held) == (0, {})
