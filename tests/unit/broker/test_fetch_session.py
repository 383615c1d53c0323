"""The leader's fetch session cache (KIP-227): contexts, incremental answers, eviction."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from broker.delayed.fetch import FetchPartitionResult, PartitionFetchInfo
from broker.fetch_session import EVICTION_MS, FetchContext, FetchSessionCache
from broker.fetch_session_news import NewsIndex
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from storage import FileRegion

A, B, C = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


def info(offset: int) -> PartitionFetchInfo:
    return PartitionFetchInfo(offset, 1 << 20, 3, 0)


def quiet(hw: int = 5) -> FetchPartitionResult:
    return FetchPartitionResult(0, hw, hw, 0, None)


def cache(slots: int = 10) -> FetchSessionCache:
    return FetchSessionCache(slots, itertools.count(1).__next__, NewsIndex())


def open_session(c: FetchSessionCache, now: int = 0, privileged: bool = False) -> FetchContext:
    ctx = c.new_context(
        session_id=0,
        epoch=0,
        requested=[(A, info(5)), (B, info(5))],
        forgotten=[],
        privileged=privileged,
        now_ms=now,
    )
    assert ctx.session_id != 0 and ctx.error_code == 0
    return ctx


def incremental(
    c: FetchSessionCache,
    sid: int,
    epoch: int,
    requested: Sequence[tuple[TopicPartition, PartitionFetchInfo]] = (),
    forgotten: Sequence[TopicPartition] = (),
    now: int = 0,
) -> FetchContext:
    return c.new_context(
        session_id=sid,
        epoch=epoch,
        requested=list(requested),
        forgotten=list(forgotten),
        privileged=False,
        now_ms=now,
    )


def test_sessionless_full_fetch_makes_no_session() -> None:
    c = cache()
    ctx = c.new_context(
        session_id=0, epoch=-1, requested=[(A, info(0))], forgotten=[], privileged=False, now_ms=0
    )
    assert ctx.session_id == 0 and ctx.infos == [(A, info(0))] and len(c) == 0
    results = [(A, quiet()), (A, quiet())]
    assert ctx.answer(results) == results


def test_full_fetch_opens_a_session_and_answers_everything() -> None:
    c = cache()
    ctx = open_session(c)
    assert len(c) == 1 and [tp for tp, _ in ctx.infos] == [A, B]
    results = [(A, quiet()), (B, quiet())]
    assert ctx.answer(results) == results  # a full answer carries every partition


def test_incremental_answers_only_partitions_with_news() -> None:
    c = cache()
    full = open_session(c)
    full.answer([(A, quiet()), (B, quiet())])  # what the fetcher was told
    sid = full.session_id
    ctx = incremental(c, sid, 1)
    assert [tp for tp, _ in ctx.infos] == [A, B]  # the session's partitions are read
    assert ctx.answer([(A, quiet()), (B, quiet())]) == []  # nothing new
    region = FileRegion(0, 0, 10)
    news = [(A, FetchPartitionResult(0, 5, 5, 0, region)), (B, quiet(hw=6))]
    assert incremental(c, sid, 2).answer(news) == news  # records, a moved high watermark
    assert incremental(c, sid, 3).answer([(A, quiet()), (B, quiet(hw=6))]) == []


def test_errors_are_always_answered_and_resent_once_cleared() -> None:
    c = cache()
    sid = open_session(c).session_id
    incremental(c, sid, 1).answer([(A, quiet()), (B, quiet())])
    failed = (A, FetchPartitionResult(ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert incremental(c, sid, 2).answer([failed, (B, quiet())]) == [failed]
    assert incremental(c, sid, 3).answer([failed, (B, quiet())]) == [failed]
    assert incremental(c, sid, 4).answer([(A, quiet()), (B, quiet())]) == [(A, quiet())]


def test_incremental_adds_updates_and_forgets() -> None:
    c = cache()
    sid = open_session(c).session_id
    ctx = incremental(c, sid, 1, requested=[(C, info(0)), (A, info(9))], forgotten=[B])
    assert dict(ctx.infos) == {A: info(9), C: info(0)}
    ctx = incremental(c, sid, 2)
    assert dict(ctx.infos) == {A: info(9), C: info(0)}  # kept for the next rounds


def test_epochs_must_follow_in_turn() -> None:
    c = cache()
    sid = open_session(c).session_id
    assert incremental(c, sid, 2).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert incremental(c, sid, 1).error_code == ErrorCode.NONE
    assert incremental(c, sid, 1).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH  # replay
    assert incremental(c, sid, 2).error_code == ErrorCode.NONE


def test_unknown_session_is_not_found() -> None:
    ctx = incremental(cache(), 12345, 1)
    assert ctx.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert ctx.session_id == 0 and ctx.infos == []


def test_closing_and_reopening() -> None:
    c = cache()
    sid = open_session(c).session_id
    closed = c.new_context(
        session_id=sid, epoch=-1, requested=[(A, info(0))], forgotten=[], privileged=False, now_ms=0
    )
    assert closed.session_id == 0 and len(c) == 0
    sid = open_session(c).session_id
    reopened = c.new_context(
        session_id=sid, epoch=0, requested=[(A, info(0))], forgotten=[], privileged=False, now_ms=0
    )
    assert reopened.session_id not in (0, sid) and len(c) == 1 and c.get(sid) is None


def test_no_slots_no_sessions() -> None:
    c = cache(slots=0)
    ctx = c.new_context(
        session_id=0, epoch=0, requested=[(A, info(0))], forgotten=[], privileged=True, now_ms=0
    )
    assert ctx.session_id == 0 and len(c) == 0


def test_full_cache_refuses_a_young_consumer_session() -> None:
    c = cache(slots=2)
    first, second = open_session(c).session_id, open_session(c).session_id
    ctx = c.new_context(
        session_id=0, epoch=0, requested=[(A, info(0))], forgotten=[], privileged=False, now_ms=1
    )
    assert ctx.session_id == 0  # sessionless: the young ones stay
    assert c.get(first) is not None and c.get(second) is not None


def test_privileged_session_displaces_the_smallest_consumer_session() -> None:
    c = cache(slots=2)
    big = open_session(c).session_id
    small = c.new_context(
        session_id=0, epoch=0, requested=[(C, info(0))], forgotten=[], privileged=False, now_ms=0
    ).session_id
    follower = open_session(c, now=1, privileged=True).session_id
    assert c.get(small) is None and c.get(big) is not None and c.get(follower) is not None
    # a young follower session is never displaced by another follower's
    ctx = c.new_context(
        session_id=0, epoch=0, requested=[(A, info(0))], forgotten=[], privileged=True, now_ms=2
    )
    assert c.get(big) is None and c.get(follower) is not None and ctx.session_id != 0
    refused = c.new_context(
        session_id=0, epoch=0, requested=[(A, info(0))], forgotten=[], privileged=True, now_ms=3
    )
    # the cache holds two followers' sessions younger than the eviction age: no place
    assert refused.session_id == 0 and len(c) == 2


def test_stale_session_gives_way_to_anyone_least_recently_used_first() -> None:
    c = cache(slots=2)
    old = open_session(c, now=0).session_id
    used = open_session(c, now=0).session_id
    incremental(c, used, 1, now=EVICTION_MS)  # keeps it fresh
    new = open_session(c, now=EVICTION_MS + 1).session_id
    assert c.get(old) is None and c.get(used) is not None and c.get(new) is not None


def test_old_sessions_are_valued_by_size() -> None:
    c = cache(slots=1)
    sid = open_session(c, now=0).session_id
    incremental(c, sid, 1, now=EVICTION_MS)  # used, but older than the eviction age
    smaller = c.new_context(
        session_id=0,
        epoch=0,
        requested=[(C, info(0))],
        forgotten=[],
        privileged=False,
        now_ms=EVICTION_MS + 1,
    )
    assert smaller.session_id == 0 and c.get(sid) is not None
    larger = c.new_context(
        session_id=0,
        epoch=0,
        requested=[(A, info(0)), (B, info(0)), (C, info(0))],
        forgotten=[],
        privileged=False,
        now_ms=EVICTION_MS + 1,
    )
    assert larger.session_id != 0 and c.get(sid) is None


# -- follower sessions and the news index --------------------------------------------------


def test_a_follower_session_is_indexed_and_reads_only_what_may_have_news() -> None:
    c = cache()
    ctx = open_session(c, privileged=True)
    news = ctx.news
    assert news is not None and [tp for tp, _ in ctx.infos] == [A, B]
    assert c.news_index.changed(A) == [news.key]  # marks A
    later = incremental(c, ctx.session_id, 1, now=100)
    assert [tp for tp, _ in later.infos] == [A]  # the marked one only
    idle = incremental(c, ctx.session_id, 2, now=200)
    assert idle.infos == [] and idle.incremental
    gone = incremental(c, ctx.session_id, 3, forgotten=[B, TopicPartition("x", 0)], now=300)
    assert gone.forgotten == (B,) and c.news_index.changed(B) == []


def test_a_consumer_session_reads_every_partition() -> None:
    c = cache()
    ctx = open_session(c)
    assert ctx.news is None and c.news_index.changed(A) == []
    later = incremental(c, ctx.session_id, 1, now=100)
    assert [tp for tp, _ in later.infos] == [A, B]


def test_a_removed_or_evicted_follower_session_leaves_the_index() -> None:
    c = cache(slots=1)
    first = open_session(c, privileged=True)
    assert c.news_index.changed(A) != []
    second = open_session(c, now=EVICTION_MS + 1, privileged=True)  # evicts the idle first
    assert second.news is not None and c.get(first.session_id) is None
    assert c.news_index.changed(A) == [second.news.key]
    c.remove(second.session_id)
    assert c.news_index.changed(A) == []
