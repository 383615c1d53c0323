"""Incremental fetch sessions (KIP-227), the leader's side: the session cache and the
bookkeeping of one Fetch against it.

A fetcher that names the same partitions on every request can open a session: its
first, *full* request (session id 0, epoch 0) names every partition, and the answer
carries a session id. Its later *incremental* requests (that id, epochs 1, 2, ... in
turn) name only the partitions whose fetch position or limits changed since, plus
``forgotten_topics_data`` for those it drops; the leader answers only the partitions with
news: records, an error, or a high watermark, last stable offset or log start offset
other than the one last sent. A caught-up fetcher of thousands of partitions thus sends
and receives almost empty frames. A consumer's session reads every partition on each
round; a follower's (a privileged session) reads only those that may have news, which
``broker.fetch_session_news`` tracks (:class:`~broker.fetch_session_news.SessionNews`),
so the leader's work per round follows what changed, not the session's size.

Request metadata, as the fields carry it:

==========  =========  ===============================================================
session id  epoch      meaning
==========  =========  ===============================================================
0           -1         no session: a full fetch, answered in full with session id 0
0           0          a full fetch that asks for a session (id in the answer, or 0
                       when the cache has no room)
N           -1         close session N; answered as a sessionless full fetch
N           0          close session N and open a new one from this full fetch
N           E > 0      incremental on session N; E must be the epoch it expects
==========  =========  ===============================================================

An incremental request for an unknown session is answered FETCH_SESSION_ID_NOT_FOUND,
one with another epoch INVALID_FETCH_SESSION_EPOCH (and the session is left alone, as
in Kafka); both carry no partitions and tell the client to start over with a full fetch.
An incremental request with epoch 0 and id 0 is simply a full fetch.

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions. When
full, a new session takes the place of one that was not used for
:data:`EVICTION_MS` (the least recently used first); failing that, of the least
valuable evictable one, valued by (privileged, number of partitions, id) as Kafka does:
a follower's (privileged) session beats a consumer's, a larger one a smaller one. A
session younger than :data:`EVICTION_MS` can be displaced only by a privileged one, and
only when it is not privileged itself. Without a place, the answer carries session id 0
and the fetcher stays sessionless.

Pure state, on the broker's event loop; time and the id source are injected.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from broker.delayed.fetch import FetchPartitionResult, FetchResults, PartitionFetchInfo
from broker.fetch_session_news import NewsIndex, SessionKey, SessionNews
from protocol.errors import ErrorCode
from protocol.values import TopicPartition

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
#: A session unused this long may be displaced by any new one (Kafka's two minutes).
EVICTION_MS = 120_000


@dataclass(slots=True)
class CachedPartition:
    """A session's partition: what the fetcher last asked, and what it was last told."""

    info: PartitionFetchInfo
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1

    def must_answer(self, result: FetchPartitionResult) -> bool:
        """Whether ``result`` has news for the fetcher; remember what it is told."""
        news = result.error_code != 0 or (result.records is not None and len(result.records) > 0)
        if (
            self.high_watermark != result.high_watermark
            or self.last_stable_offset != result.last_stable_offset
            or self.log_start_offset != result.log_start_offset
        ):
            news = True
        if result.error_code:
            # an error resends the partition once it clears
            self.high_watermark = -1
        else:
            self.high_watermark = result.high_watermark
        self.last_stable_offset = result.last_stable_offset
        self.log_start_offset = result.log_start_offset
        return news


@dataclass(slots=True)
class FetchSession:
    """One open session. ``epoch`` is the one its next incremental request must carry."""

    id: int
    privileged: bool
    created_ms: int
    last_used_ms: int
    partitions: dict[TopicPartition, CachedPartition] = field(default_factory=dict)
    epoch: int = 1
    #: a follower's session: what its next round must read (None: every partition)
    news: SessionNews | None = None

    def info_for(self, tp: TopicPartition) -> PartitionFetchInfo | None:
        cached = self.partitions.get(tp)
        return None if cached is None else cached.info

    def value(self) -> tuple[bool, int, int]:
        """Kafka's eviction order: least valuable first."""
        return (self.privileged, len(self.partitions), self.id)


@dataclass(frozen=True, slots=True)
class FetchContext:
    """How one Fetch is served: the partitions to read, the session id to answer, a
    request-level error (answered with no partitions), the session whose incremental
    answer leaves out partitions without news (None: answer them all), and the
    partitions the request made the session forget."""

    session_id: int
    infos: list[tuple[TopicPartition, PartitionFetchInfo]]
    error_code: int = ErrorCode.NONE
    session: FetchSession | None = None
    incremental: bool = False
    forgotten: tuple[TopicPartition, ...] = ()

    @property
    def news(self) -> SessionNews | None:
        """The follower session's news tracking (None for a consumer or no session)."""
        return None if self.session is None else self.session.news

    def answer(self, results: FetchResults) -> FetchResults:
        """The partitions to put in the response (and the session's memory of them)."""
        session = self.session
        if session is None:
            return results
        answered: FetchResults = []
        for tp, result in results:
            cached = session.partitions.get(tp)
            if cached is None or cached.must_answer(result) or not self.incremental:
                answered.append((tp, result))
        return answered


class FetchSessionCache:
    """The leader's sessions, at most ``max_slots`` of them (see the module doc)."""

    def __init__(
        self,
        max_slots: int,
        next_id: Callable[[], int],
        news_index: NewsIndex,
        eviction_ms: int = EVICTION_MS,
    ) -> None:
        """``news_index``: where the follower sessions' partitions are marked as they
        change (the ReplicaManager's, which marks them)."""
        self.max_slots = max_slots
        self._next_id = next_id
        self._eviction_ms = eviction_ms
        self.news_index = news_index
        #: by id, least recently used first
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            self._dropped(session)
        return session

    def _dropped(self, session: FetchSession) -> None:
        if session.news is not None:
            self.news_index.remove(session.news, session.partitions)

    def touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        self._sessions.move_to_end(session.id)

    def new_id(self) -> int:
        while True:
            candidate = self._next_id()
            if candidate != INVALID_SESSION_ID and candidate not in self._sessions:
                return candidate

    def maybe_create(
        self,
        now_ms: int,
        privileged: bool,
        partitions: Iterable[tuple[TopicPartition, PartitionFetchInfo]],
    ) -> FetchSession | None:
        """A new session holding ``partitions``, or None when there is no room."""
        cached = {tp: CachedPartition(info) for tp, info in partitions}
        session_id = self.new_id()
        if self.max_slots <= 0:
            return None
        if len(self._sessions) >= self.max_slots and not self._evict_for(
            (privileged, len(cached), session_id), now_ms
        ):
            return None
        session = FetchSession(session_id, privileged, now_ms, now_ms, cached)
        if privileged:
            session.news = SessionNews(SessionKey(session_id), now_ms)
            self.news_index.add(session.news, cached)
        self._sessions[session_id] = session
        return session

    def _evict_for(self, value: tuple[bool, int, int], now_ms: int) -> bool:
        oldest = next(iter(self._sessions.values()))
        if now_ms - oldest.last_used_ms > self._eviction_ms:
            self.remove(oldest.id)
            return True
        privileged = value[0]
        candidates = [
            s
            for s in self._sessions.values()
            if now_ms - s.created_ms > self._eviction_ms or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        weakest = min(candidates, key=FetchSession.value)
        if value < weakest.value():
            return False
        self.remove(weakest.id)
        return True

    def new_context(
        self,
        *,
        session_id: int,
        epoch: int,
        requested: Sequence[tuple[TopicPartition, PartitionFetchInfo]],
        forgotten: Iterable[TopicPartition],
        privileged: bool,
        now_ms: int,
    ) -> FetchContext:
        """Apply one Fetch's session fields (the table in the module doc)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            if epoch == FINAL_EPOCH:
                return FetchContext(INVALID_SESSION_ID, list(requested))
            session = self.maybe_create(now_ms, privileged, requested)
            if session is None:
                return FetchContext(INVALID_SESSION_ID, list(requested))
            return FetchContext(session.id, list(requested), session=session)
        session = self._sessions.get(session_id)
        if session is None:
            return FetchContext(INVALID_SESSION_ID, [], ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext(INVALID_SESSION_ID, [], ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        cached = session.partitions
        added: list[TopicPartition] = []
        for tp, info in requested:
            known = cached.get(tp)
            if known is None:
                cached[tp] = CachedPartition(info)
                added.append(tp)
            else:
                known.info = info
        dropped = tuple(tp for tp in forgotten if cached.pop(tp, None) is not None)
        session.epoch = epoch + 1 if epoch < 0x7FFFFFFF else 1
        self.touch(session, now_ms)
        news = session.news
        if news is None:
            infos = [(tp, c.info) for tp, c in cached.items()]
        else:
            if added:
                self.news_index.add(news, added)
            if dropped:
                self.news_index.remove(news, dropped)
            due = news.due((tp for tp, _ in requested), cached, now_ms)
            infos = [(tp, cached[tp].info) for tp in due]
        return FetchContext(session.id, infos, session=session, incremental=True, forgotten=dropped)
