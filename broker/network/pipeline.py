"""Pipelining on one connection: which requests let the next one in, and the ordered replies.

Kafka serves one request per connection at a time: the processor mutes the channel from
the moment a request is parsed until its response has been written. A producer with five
requests in flight therefore has four of them waiting in the socket while the first waits
for its followers (acks=all): every replication round trip is paid once per request, not
once per five, and replicated throughput is bound by latency rather than by work.

Here a connection may have up to ``depth`` requests in the broker at once, under two rules:

1. **The next request is read only once the previous one has done its local work.** A
   request is handed to the handlers only when no earlier request of the connection is
   still queued or being handled, exactly as before. What changes is *when* that holds:
   a request of an API in ``PIPELINED_APIS`` whose handler returned a Future (a Produce
   with acks=all waiting in the DelayedProduce purgatory) counts as done locally, and
   the connection reads on; so does a request answered at once while earlier responses
   of the connection are still owed (its answer only waits for its turn). Any other
   request -- answered with nothing owed before it, or waiting in a purgatory of
   another API -- holds the connection until its response has been written, as in Kafka.
2. **Responses leave in request order.** Every request taken off the connection gets a
   slot in its ``ReplyQueue`` at dispatch; a response fills its slot, and only the filled
   slots at the head are written. A later request answered first waits for the earlier
   ones. Requests that get no response (acks=0) fill their slot with nothing.

What this keeps of Kafka's guarantees, and why:

* *Appends stay in request order.* Rule 1 means a Produce reaches the handler only after
  the previous Produce of the connection has appended (the append happens before the
  handler returns its Future), so the log receives a connection's batches in the order
  they were sent. Idempotent sequence numbers are checked at that append, in that order,
  exactly as when the requests were served one by one.
* *Responses in request order.* Rule 2; a client matching responses by correlation id,
  or (as Kafka's clients do) expecting them in order, sees no difference.
* *When the next request is handled.* A request reaches the handlers once every earlier
  request of the connection has been decided (answered, or appended and waiting), never
  later: Kafka handles it once the previous answer is written, which is when that answer
  is decided. A refusal before appending (NOT_ENOUGH_REPLICAS, an out-of-order sequence,
  an unknown partition) with nothing owed before it holds the connection until it is
  written, exactly as in Kafka; behind waiting produces it is decided like any answer,
  and the request after it is handled against the same broker state Kafka's would be.
* *Errors after the wait.* A request that waited and then failed -- REQUEST_TIMED_OUT,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND, or NOT_LEADER_OR_FOLLOWER because leadership moved
  while it waited -- had appended, exactly as the one request Kafka lets in would have.
  The difference is the requests behind it: here they were appended too and fail the
  same way, where Kafka, reading them only after writing the first error, may have
  refused them before appending (no longer leader, ISR still short). So a leadership
  move can leave up to ``depth`` batches of a connection, rather than one, in the old
  leader's log uncommitted and answered with an error. Such a tail is truncated when the
  old leader follows a new one, or committed if the old leader is elected again; either
  way an idempotent producer's retry is appended, or recognised as a duplicate of its
  sequence, as for Kafka's one request.
* *Why decided answers free the connection.* Without it the failover benchmark once saw
  librdkafka report two records delivered without an offset. Batch B1 had appended
  behind a waiting produce of another partition; a request answered at once behind it
  (most likely a Metadata request: librdkafka sends those on the same connection) held
  the connection until every earlier answer was written. Leadership of B1's partition
  moved, so B1 was answered NOT_LEADER_OR_FOLLOWER behind the other produce, which waited
  seconds more for its ISR. The producer's next batch B2, sent before the move, was read
  only then -- after the old leader had been elected again, B1 still in its log -- and
  was appended and acknowledged before B1's retry. librdkafka takes an acknowledged
  later sequence as proof that the earlier batches are in the log and marks them
  delivered without an offset (its "implicit acknowledgement"). Nothing was lost or
  duplicated, and Kafka could give the same answers only if B1's error took seconds to
  be written. Now B2 is read on arrival, before the move: B1 and B2 share their fate,
  and their retries are recognised as duplicates, with their offsets.
* *Bounded.* A connection may have up to ``depth`` requests in the broker (1,024 by
  default), and beyond the first ``FREE_DEPTH`` (5, the largest
  ``max.in.flight.requests.per.connection`` an idempotent producer may use) only while
  their frames take less than ``budget`` bytes (1 MiB by default): five requests of any
  size, as many small ones as a client keeps in flight up to the depth. Past either
  bound the connection is muted until its oldest response is written. The request
  channel still holds at most one request per connection, so ``queued.max.requests``
  bounds what the handlers see as before. Requests read while a Produce is handled,
  ahead of their turn (``Connection.reads_ahead``), count against the same bounds:
  they are only read sooner, never handled sooner.
* *Why that deep.* librdkafka (confluent-kafka) sends one ProduceRequest per partition
  and keeps up to a million of them in flight by default. A producer writing one record
  to each of the thousand partitions a broker leads sends it a thousand requests; with
  five let in at a time an acks=all round of them costs two hundred replication round
  trips (append, follower fetch, follower's next fetch moving the high watermark,
  answer) where one suffices, and was measured 3.2x as slow as acks=1. Let in
  together, the waiting produces are settled by the same follower fetches (measured
  at about acks=1's time, ``tests/bench/bench_scale.py``). Small requests only: the
  memory a connection holds in the broker stays bounded by five frames plus the budget.

Where this departs from Kafka, deliberately: Kafka reads nothing of a connection with a
response outstanding. Here a producer's acks=all requests wait for replication together,
so RF 3 throughput is not divided by the number of requests a client keeps in flight. Only
Produce pipelines: a Fetch (consumer or follower) keeps Kafka's one-at-a-time rule, since
its fetch session and positions are built on a request seeing the previous one's outcome.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from protocol.api import ApiKey

#: APIs whose deferred requests let the next request of their connection in (Produce)
PIPELINED_APIS: Final[frozenset[int]] = frozenset({ApiKey.PRODUCE})

#: requests of one connection in the broker at once, unless configured otherwise
DEFAULT_DEPTH: Final[int] = 1024

#: requests of one connection let in whatever their size (the rest must fit the budget)
FREE_DEPTH: Final[int] = 5

#: bytes of request frames beyond which a connection lets in no more than FREE_DEPTH
DEFAULT_BUDGET: Final[int] = 1 << 20


def lets_next_in(api_key: int) -> bool:
    """Whether a request of ``api_key`` that is waiting in a purgatory (its handler
    returned a Future) frees its connection to read the next request."""
    return api_key in PIPELINED_APIS


def reads_on_when_answered(has_response: bool, earlier_owed: bool) -> bool:
    """Whether a request answered by its handler (not left waiting) frees its connection
    to read the next request before that answer is written.

    No response (acks=0): nothing to wait for. Earlier responses still owed: the answer
    waits for its turn anyway, and holding the connection until then would hand the
    next request to the broker later than Kafka would, long after this one was decided
    (rule 1 of the module docstring). Otherwise Kafka's rule: read on once it is out.
    """
    return not has_response or earlier_owed


class _Unset:
    __slots__ = ()


_UNSET: Final = _Unset()


class ReplySlot:
    """The place of one request's response in its connection's order; filled once its
    ``response`` is not ``_UNSET`` (None is a response: "no response"). ``size``: the
    bytes of the request's frame, counted against the connection's budget."""

    __slots__ = ("key", "response", "size")

    def __init__(self, key: object, size: int) -> None:
        self.key = key
        self.response: object = _UNSET
        self.size = size


class ReplyQueue(deque[ReplySlot]):
    """The responses a connection owes, in request order. Pure bookkeeping: no I/O.

    ``open`` takes a slot at dispatch, ``fill`` records a response (any order), ``take``
    hands out the head's response once it is filled. ``len`` counts the requests of the
    connection in the broker: opened and not yet taken; ``size`` the bytes of their
    frames. Bounds (module docstring): at most ``depth`` requests, and beyond the first
    ``FREE_DEPTH`` (or ``depth`` if lower) only while they take less than ``budget``.

    It is the deque of its slots, so that its length and truth are the deque's own, read
    without a Python call: the Processor asks them several times per request. Only the
    methods below change it. Slots are also indexed by their key's identity, so that
    filling one is O(1) however deep the pipeline (answers come in any order).
    """

    __slots__ = ("_by_key", "budget", "depth", "size")

    def __init__(self, depth: int = DEFAULT_DEPTH, budget: int = DEFAULT_BUDGET) -> None:
        if depth < 1:
            raise ValueError("a connection must be allowed at least one request")
        super().__init__()
        self.depth = depth
        self.budget = budget
        self.size = 0
        self._by_key: dict[int, ReplySlot] = {}

    @property
    def has_room(self) -> bool:
        """Whether one more request of the connection may enter the broker."""
        return self.room_for(0, 0)

    def room_for(self, extra: int, extra_bytes: int) -> bool:
        """Whether one more request may enter the broker beside the open slots and
        ``extra`` more requests of ``extra_bytes`` (a response being written, frames
        read ahead)."""
        n = len(self) + extra
        if n < FREE_DEPTH and n < self.depth:
            return True
        return n < self.depth and self.size + extra_bytes < self.budget

    def open(self, key: object, size: int = 0) -> None:
        """Reserve the next place in the order for the request ``key`` (a frame of
        ``size`` bytes). Bounded by the depth only: the budget decides whether to read
        a request, not whether one read may be served."""
        if len(self) >= self.depth:
            raise OverflowError(f"more than {self.depth} requests outstanding")
        slot = ReplySlot(key, size)
        self.append(slot)
        self._by_key[id(key)] = slot
        self.size += size

    def fill(self, key: object, response: object) -> bool:
        """Record ``key``'s response (None: no response). False when ``key`` has no open
        slot (answered twice, or its slot was dropped)."""
        slot = self._by_key.get(id(key))
        if slot is None or slot.key is not key or slot.response is not _UNSET:
            return False  # never opened, dropped, or filled already
        slot.response = response
        return True

    def is_open(self, key: object) -> bool:
        slot = self._by_key.get(id(key))
        return slot is not None and slot.key is key

    def take(self) -> tuple[object, object] | None:
        """The head's key and response, removing it, when the head is filled; else None."""
        if self and self[0].response is not _UNSET:
            slot = self.popleft()
            del self._by_key[id(slot.key)]
            self.size -= slot.size
            return slot.key, slot.response
        return None

    def clear(self) -> None:
        """Drop every slot (the connection closed)."""
        super().clear()
        self._by_key.clear()
        self.size = 0
