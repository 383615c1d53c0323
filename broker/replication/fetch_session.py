"""A replica fetcher's side of an incremental fetch session (KIP-227).

The leader keeps a session (``broker.fetch_session``) holding, per partition, the fetch
position and limits the fetcher last sent; a request then names only what changed. This
module decides, for each turn of a fetcher, what its Fetch carries, and follows the
answers (Kafka's FetchSessionHandler):

- no session yet (``session_id`` 0): a *full* request, every partition, epoch 0 (asks for
  a session); when the leader answers a session id, the partitions sent become the
  session's and the next epoch is 1. A leader without room answers 0: the next request
  is full again (and asks again);
- a session: an *incremental* request at the next epoch, naming each partition whose
  (leader epoch, fetch offset, log start offset) differs from what the session holds,
  and forgetting those the fetcher no longer fetches; after its answer the session
  holds the new values and the epoch moves on (wrapping from 2**31-1 to 1). A fetcher
  that knows which partitions may have moved (``broker.replication.fetch_positions``)
  asks :meth:`FollowerSession.build_changes` to compare only those;
- any failure (a session error in the answer, a lost connection, a request timeout): the
  session is dropped here and the next request is full, opening a new one. A request
  whose answer never came cannot be assumed applied, so nothing is kept from it.

An incremental answer carries only partitions with news; a partition left out simply had
nothing to tell. Pure state; the fetcher owns one per connection to a leader.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from protocol.values import TopicPartition

#: (leader epoch, fetch offset, log start offset) of one partition as sent
Position = tuple[int, int, int]

INITIAL_EPOCH = 0
MAX_EPOCH = 0x7FFFFFFF
#: The first Fetch version with sessions: a leader that negotiates less gets none.
SESSION_VERSION = 7
#: Answers that end a session: the next request is a full one.
SESSION_ERRORS = frozenset(
    {ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH}
)


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What one Fetch carries: the session fields, the partitions to name (in the
    fetcher's order) with their positions, and the partitions to forget."""

    session_id: int
    epoch: int
    partitions: list[tuple[TopicPartition, Position]]
    forgotten: list[TopicPartition]
    #: the positions the leader's session holds once this request is applied (None: the
    #: session's, with ``partitions`` and ``forgotten`` applied)
    after: dict[TopicPartition, Position] | None

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


@dataclass(slots=True)
class FollowerSession:
    """The session of one fetcher with one leader (see the module doc)."""

    session_id: int = 0
    epoch: int = INITIAL_EPOCH
    #: what the leader's session holds, per partition
    held: dict[TopicPartition, Position] = field(default_factory=dict)

    def build(self, wanted: Mapping[TopicPartition, Position]) -> SessionRequest:
        """The request for ``wanted`` (every partition to fetch this turn, in order)."""
        after = dict(wanted)
        if self.session_id == 0 or self.epoch == INITIAL_EPOCH:
            return SessionRequest(self.session_id, INITIAL_EPOCH, list(after.items()), [], after)
        held = self.held
        changed = [(tp, pos) for tp, pos in after.items() if held.get(tp) != pos]
        forgotten = [tp for tp in held if tp not in after]
        return SessionRequest(self.session_id, self.epoch, changed, forgotten, after)

    def build_changes(
        self, wanted: Mapping[TopicPartition, Position], candidates: Iterable[TopicPartition]
    ) -> SessionRequest:
        """The request for ``wanted`` when only ``candidates`` may differ from what the
        session holds (every partition of a full request)."""
        if self.session_id == 0 or self.epoch == INITIAL_EPOCH:
            return self.build(wanted)
        held = self.held
        changed: list[tuple[TopicPartition, Position]] = []
        forgotten: list[TopicPartition] = []
        for tp in candidates:
            position = wanted.get(tp)
            if position is None:
                if tp in held:
                    forgotten.append(tp)
            elif held.get(tp) != position:
                changed.append((tp, position))
        return SessionRequest(self.session_id, self.epoch, changed, forgotten, None)

    def on_answer(self, request: SessionRequest, error_code: int, session_id: int) -> None:
        """Follow the leader's answer to ``request``."""
        if error_code != ErrorCode.NONE:
            self.reset()
            return
        if request.full:
            self.session_id = session_id
            self.epoch = 1 if session_id else INITIAL_EPOCH
            self.held = (request.after or {}) if session_id else {}
            return
        if request.after is not None:
            self.held = request.after
        else:
            held = self.held
            for tp, position in request.partitions:
                held[tp] = position
            for tp in request.forgotten:
                held.pop(tp, None)
        self.epoch = self.epoch + 1 if self.epoch < MAX_EPOCH else 1

    def reset(self) -> None:
        """Forget the session: the next request is full (and opens a new one)."""
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self.held = {}
