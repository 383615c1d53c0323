"""PartitionCore: what every side of a hosted partition reads -- the controller's view,
the local log, the leader's epoch fencing, and the high watermark.

:class:`broker.partition.Partition` is assembled from this core and one class per side
of the replica's work (the leader's ISR upkeep, the follower's log, the leader's reads,
the clients' writes to a led log); each of those sees only the fields and the few
helpers defined here, so a reader of one side needs this module and that one.

The offsets a reader sees (Kafka's names)::

    log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset

The high watermark is the smallest log end offset over the maximal ISR (``broker.isr``
has the rule): a record is below it only once every in-sync replica holds it. There are
no transactions: the last stable offset equals the high watermark.

Errors for a request leave as :class:`PartitionError` carrying the Kafka error code; the
ReplicaManager turns them into that partition's error in the response. Every produce and
fetch passes :meth:`PartitionCore._leader_log`, so it is written to cost one comparison
in the usual case (a request at the broker's own epoch, to the leader).

Not safe across tasks beyond the event loop: every method runs on the loop's thread.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

from broker import isr as isr_rules
from broker.isr import FollowerState, IsrChange, IsrState, IsrWriter
from protocol.errors import ErrorCode, error_name
from protocol.primitives import ZERO_UUID
from protocol.uuids import uuid_to_base64
from protocol.values import NO_LEADER_EPOCH, TopicPartition
from storage import Log, LogManager
from timer.clock import Clock

log = logging.getLogger(__name__)


class PartitionError(Exception):
    """A request on this partition fails with ``error_code`` (a Kafka error code)."""

    def __init__(self, error_code: int, message: str = "") -> None:
        super().__init__(message or error_name(error_code))
        self.error_code = error_code


class PartitionStateLike(Protocol):
    """What a partition state of a LeaderAndIsr request carries (the request's struct),
    read only."""

    @property
    def topic_name(self) -> str: ...
    @property
    def partition_index(self) -> int: ...
    @property
    def controller_epoch(self) -> int: ...
    @property
    def leader(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def isr(self) -> Sequence[int]: ...
    @property
    def partition_epoch(self) -> int: ...
    @property
    def replicas(self) -> Sequence[int]: ...


def leader_epoch_error(current_leader_epoch: int, local_leader_epoch: int) -> int:
    """Fencing by the epoch a request carries (KIP-320): a client behind the broker's
    epoch is fenced, one ahead of it knows of a leader change this broker has not seen."""
    if current_leader_epoch in (NO_LEADER_EPOCH, local_leader_epoch):
        return ErrorCode.NONE
    if current_leader_epoch < local_leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


def topic_id_text(topic_id: uuid.UUID | None) -> str | None:
    """The topic id as partition.metadata stores it (Kafka's base64url), None for none."""
    if topic_id is None or topic_id == ZERO_UUID:
        return None
    return uuid_to_base64(topic_id)


#: Told of every ISR change this leader wrote to ZooKeeper (the ReplicaManager queues
#: the change notification and wakes the operations waiting on the partition).
IsrChangeListener = Callable[["PartitionCore", IsrChange], None]


class PartitionCore:
    """The fields every side of a Partition shares, and the helpers they all call."""

    def __init__(
        self,
        tp: TopicPartition,
        local_broker_id: int,
        log_manager: LogManager,
        *,
        clock: Clock,
        isr_writer: IsrWriter | None,
        on_isr_change: IsrChangeListener | None,
    ) -> None:
        """Without an ``isr_writer`` the leader never changes its ISR (a broker without
        a ZooKeeper writer: the ReplicaManager passes what it was given)."""
        self.tp = tp
        self.local_broker_id = local_broker_id
        self._log_manager = log_manager
        self._clock = clock
        self._isr_writer = isr_writer
        self._on_isr_change = on_isr_change
        self.log: Log | None = None
        self.topic_id: uuid.UUID | None = None
        self.leader_id = -1
        self.leader_epoch = -1
        #: First offset written in the current leader epoch (-1 when not leader).
        self.leader_epoch_start_offset = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self._isr_state = IsrState()
        self.replicas: tuple[int, ...] = ()
        #: As leader: what each follower's fetches told (every assigned replica but us).
        self.followers: dict[int, FollowerState] = {}

    # -- the controller's view ----------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id and self.log is not None

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR: as written in the partition state znode."""
        return self._isr_state.isr

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The committed ISR with a pending expansion's new member (see broker.isr)."""
        return self._isr_state.maximal_isr

    @property
    def is_under_replicated(self) -> bool:
        return self.is_leader and len(self.isr) < len(self.replicas)

    def is_under_min_isr(self, min_insync_replicas: int) -> bool:
        return self.is_leader and len(self.isr) < min_insync_replicas

    @property
    def is_offline(self) -> bool:
        """A local replica whose log failed on disk."""
        return self.log is not None and self.log.failed is not None

    # -- the leader's log and its high watermark --------------------------------------

    def _leader_log(self, current_leader_epoch: int, require_leader: bool = True) -> Log:
        """The log to serve from after the epoch and role checks (Kafka's localLogWithEpoch).

        Every produce and fetch passes here: a request at this broker's own epoch skips
        the epoch rule (which answers NONE for it), and the role is read without the
        :attr:`is_leader` property call."""
        local_epoch = self.leader_epoch
        if current_leader_epoch != local_epoch and (
            error := leader_epoch_error(current_leader_epoch, local_epoch)
        ):
            raise PartitionError(
                error,
                f"{self.tp}: request epoch {current_leader_epoch}, broker epoch {local_epoch}",
            )
        if self.log is None or (require_leader and self.leader_id != self.local_broker_id):
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"{self.tp}: broker {self.local_broker_id} is not the leader",
            )
        if self.log.failed is not None:
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR, self.log.failed)
        return self.log

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark if self.log is not None else -1

    @property
    def last_stable_offset(self) -> int:
        """The log's LSO (:mod:`storage.transactions`): read_committed consumers read
        below it; the high watermark while no transaction is open."""
        return self.log.last_stable_offset if self.log is not None else -1

    def maybe_increment_high_watermark(self) -> bool:
        """As leader, move the high watermark up to the smallest log end offset of the
        maximal ISR (``broker.isr.high_watermark``). True when it moved: the caller
        then completes the produces and fetches waiting on this partition.

        Runs on every follower fetch and every append: :attr:`is_leader` and
        :attr:`maximal_isr` are read here without their property calls."""
        lg = self.log
        if lg is None or self.leader_id != self.local_broker_id:
            return False
        followers = self.followers
        follower_ends = [
            followers[replica].log_end_offset
            for replica in self._isr_state.maximal_isr
            if replica in followers
        ]
        current = lg.high_watermark
        new = isr_rules.high_watermark(current, lg.log_end_offset, follower_ends)
        if new <= current:
            return False
        lg.update_high_watermark(new)
        return True

    def __repr__(self) -> str:
        return (
            f"Partition({self.tp}, leader={self.leader_id}, epoch={self.leader_epoch}, "
            f"isr={list(self.isr)}, replicas={list(self.replicas)})"
        )
