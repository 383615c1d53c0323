"""broker.fetch_session_news: which partitions a follower session's round reads (named,
marked, unsettled, or all on a sweep), the marks a waiting fetch measures and takes, and
the index that marks a partition's change in the sessions holding it."""

from __future__ import annotations

from broker.delayed.fetch import PartitionFetchInfo
from broker.fetch_session_news import SWEEP_MS, NewsIndex, SessionKey, SessionNews
from protocol.values import TopicPartition

A, B, C, D = (TopicPartition("t", p) for p in range(4))
SESSION = {A: None, B: None, C: None, D: None}


def info(offset: int) -> PartitionFetchInfo:
    return PartitionFetchInfo(offset, 1 << 20)


def test_a_round_reads_the_named_the_marked_and_the_unsettled() -> None:
    news = SessionNews(SessionKey(1), last_sweep_ms=0)
    assert news.due([], SESSION, 100) == []  # idle: nothing
    news.marked.add(B)
    news.unsettled.add(C)
    assert sorted(news.due([A], SESSION, 200)) == [A, B, C]
    assert news.marked == set() and news.unsettled == {C}  # marks taken, C stays
    news.marked.add(TopicPartition("gone", 0))  # not in the session (any more)
    assert news.due([], SESSION, 300) == [C]


def test_a_sweep_reads_every_partition_in_the_sessions_order() -> None:
    news = SessionNews(SessionKey(1), last_sweep_ms=0)
    news.marked.add(B)
    assert news.due([], SESSION, SWEEP_MS - 1) == [B]
    assert news.due([], SESSION, SWEEP_MS) == [A, B, C, D]
    assert news.last_sweep_ms == SWEEP_MS and news.due([], SESSION, SWEEP_MS + 1) == []


def test_a_waiting_fetch_measures_the_marks_and_its_answer_takes_them() -> None:
    news = SessionNews(SessionKey(1), last_sweep_ms=0)
    read = [(A, info(5))]
    infos = {B: info(7), C: info(9)}
    assert news.with_marked(read, infos.get, take=False) is read  # no marks: as read
    news.marked.update({A, B, TopicPartition("gone", 0)})
    assert news.with_marked(read, infos.get, take=False) == [(A, info(5)), (B, info(7))]
    assert news.marked  # kept until the answer
    assert news.with_marked(read, infos.get, take=True) == [(A, info(5)), (B, info(7))]
    assert news.marked == set()


def test_settled_partitions_leave_the_unsettled() -> None:
    news = SessionNews(SessionKey(1), last_sweep_ms=0)
    news.unsettled.update({A, D})
    news.settled([A, B, C], [B])
    assert news.unsettled == {B, D}  # D was not read: unchanged


def test_the_index_marks_a_change_in_every_session_holding_it() -> None:
    index = NewsIndex()
    one, two = SessionNews(SessionKey(1), 0), SessionNews(SessionKey(2), 0)
    index.add(one, [A, B])
    index.add(two, [B, C])
    index.add(two, [B])  # once only
    assert index.changed(B) == [SessionKey(1), SessionKey(2)]
    assert one.marked == {B} and two.marked == {B}
    assert index.changed(D) == []
    two.unsettled.add(C)
    index.remove(two, [B, C])
    assert two.marked == set() and two.unsettled == set()
    assert index.changed(C) == [] and index.changed(B) == [SessionKey(1)]
    index.remove(one, [A, B])
    assert len(index) == 0


def test_a_waiting_fetch_looks_only_at_the_marks_since_its_last_look() -> None:
    index = NewsIndex()
    news = SessionNews(SessionKey(1), 0)
    index.add(news, [A, B, C])
    infos = {A: info(1), B: info(2), C: info(3)}
    index.changed(A)
    index.changed(B)
    index.changed(A)
    assert news.take_fresh(infos.get) == [(A, info(1)), (B, info(2))]
    assert news.take_fresh(infos.get) == []  # nothing since
    index.changed(C)
    assert news.take_fresh(infos.get) == [(C, info(3))]
    assert news.marked == {A, B, C}  # the answer still reads every mark
    index.changed(B)
    news.due([], SESSION, 100)  # a new round starts afresh
    assert news.fresh == []
