"""KafkaZkClient: Kafka's ZooKeeper layout over kazoo (blocking calls).

Every method blocks on ZooKeeper: asyncio code calls them through ``asyncio.to_thread``
(the controller does; see zk.store). Watch callbacks passed in here are
called on kazoo's own thread: they must only hand an event to the asyncio loop
(``loop.call_soon_threadsafe``), never touch controller state or call back into kazoo.

Fencing: a controller write goes through ``_controller_transaction``, a multi-op whose
first operation checks the zkVersion of /controller_epoch that this controller's
election produced. Kazoo's ``commit()`` does not raise when an operation fails; it
returns one result per operation, exceptions included, so every element is inspected.
If the check fails the whole multi-op was refused and ControllerMovedError is raised.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from protocol.values import TopicPartition
from zk import codec, paths
from zk.errors import BrokerIdInUseError, ControllerMovedError, StateConflictError
from zk.model import (
    INITIAL_CONTROLLER_EPOCH,
    BrokerInfo,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

log = logging.getLogger(__name__)

Watch = Callable[[WatchedEvent], None]

#: Kafka's default reserved.broker.max.id: generated ids start above it.
RESERVED_BROKER_MAX_ID = 1000


class TopicExistsError(Exception):
    pass


class TopicNotFoundError(Exception):
    """The topic has no /brokers/topics znode."""


class TopicAlreadyMarkedForDeletionError(Exception):
    """/admin/delete_topics/<t> exists already: the topic's deletion is pending."""


class ZooKeeperUnavailableError(Exception):
    """No ZooKeeper answered at the configured address."""


@dataclass(frozen=True)
class ControllerElection:
    """The outcome of one attempt to become controller."""

    won: bool
    controller_id: int | None
    epoch: int = 0
    epoch_zk_version: int = 0


class KafkaZkClient:
    """Not thread safe for its own bookkeeping (``_past_sessions``): use from one thread at
    a time (the controller's event task, through to_thread, is the only caller)."""

    def __init__(self, client: KazooClient) -> None:
        self.kazoo = client
        #: session ids this process used before: their leftover ephemerals are ours to remove
        self._past_sessions: set[int] = set()

    @classmethod
    def connect(
        cls, hosts: str, session_timeout_s: float = 18.0, connect_timeout_s: float = 15.0
    ) -> KafkaZkClient:
        """Connect (blocking); ZooKeeperUnavailableError, with the address, if it is down."""
        client = KazooClient(hosts=hosts, timeout=session_timeout_s)
        try:
            client.start(timeout=connect_timeout_s)
        except KazooTimeoutError as exc:
            client.close()
            raise ZooKeeperUnavailableError(
                f"could not connect to ZooKeeper at {hosts} within {connect_timeout_s:g}s"
            ) from exc
        return cls(client)

    def close(self) -> None:
        self.kazoo.stop()
        self.kazoo.close()

    @property
    def session_id(self) -> int | None:
        cid = self.kazoo.client_id
        return int(cid[0]) if cid else None

    # -- generic helpers ----------------------------------------------------------------

    def _get(self, path: str, watch: Watch | None = None) -> tuple[bytes, ZnodeStat] | None:
        try:
            data, stat = self.kazoo.get(path, watch=watch)
        except NoNodeError:
            # with a watch, arm an existence watch instead, so creation is noticed
            if watch is not None and self.kazoo.exists(path, watch=watch) is not None:
                return self._get(path, watch)
            return None
        return bytes(data or b""), stat

    def _children(self, path: str, watch: Watch | None = None) -> list[str]:
        try:
            return sorted(self.kazoo.get_children(path, watch=watch))
        except NoNodeError:
            return []

    def ensure_persistent_paths(self) -> None:
        """Create Kafka's top-level persistent znodes (idempotent)."""
        for path in paths.PERSISTENT_PATHS:
            self.kazoo.ensure_path(path)

    # -- cluster id ---------------------------------------------------------------------

    def get_or_create_cluster_id(self, proposed: str | None = None) -> str:
        found = self._get(paths.CLUSTER_ID)
        if found is not None:
            return codec.decode_cluster_id(found[0])
        cluster_id = proposed or codec.new_cluster_id()
        try:
            self.kazoo.create(paths.CLUSTER_ID, codec.encode_cluster_id(cluster_id), makepath=True)
            return cluster_id
        except NodeExistsError:
            # another broker won the race: everybody uses the first id written
            data, _ = self.kazoo.get(paths.CLUSTER_ID)
            return codec.decode_cluster_id(data)

    # -- brokers ------------------------------------------------------------------------

    def generate_broker_id(self, reserved_max_id: int = RESERVED_BROKER_MAX_ID) -> int:
        """A cluster-unique broker id: /brokers/seqid's new dataVersion + reserved max.

        An unconditional set_data bumps the znode's version atomically, so two brokers
        starting at once get different ids.
        """
        self.kazoo.ensure_path(paths.BROKER_SEQID)
        stat = self.kazoo.set(paths.BROKER_SEQID, b"", version=-1)
        return int(stat.version) + reserved_max_id

    def register_broker(
        self,
        info: BrokerInfo,
        timestamp_ms: int,
        attempts: int = 5,
        stale_wait_s: float = 0.0,
    ) -> int:
        """Create the ephemeral /brokers/ids/<id>; return the broker epoch (its czxid).

        NodeExists is expected after a lost session: if the znode belongs to our current
        session (a retried create that had succeeded) it is ours; if it belongs to one of
        our own expired sessions it is removed and the create retried. If another session
        owns it, that may be this broker's previous process, killed so recently that
        ZooKeeper has not expired its session yet: we wait, up to ``stale_wait_s`` in all,
        for the znode to go (a watch wakes us), then create it. Only when it is still there
        after that is the id taken by a live broker: BrokerIdInUseError.
        """
        path = paths.broker(info.id)
        data = codec.encode_broker(info, timestamp_ms)
        self.kazoo.ensure_path(paths.BROKER_IDS)
        deadline = time.monotonic() + stale_wait_s
        while attempts > 0:
            session = self.session_id
            try:
                self.kazoo.create(path, data, ephemeral=True)
            except NodeExistsError:
                stat = self.kazoo.exists(path)
                if stat is None:
                    attempts -= 1
                    continue  # it just went away: try again
                if stat.ephemeralOwner == session:
                    return int(stat.czxid)
                if stat.ephemeralOwner in self._past_sessions:
                    log.info("removing broker %s's registration from an expired session", info.id)
                    with contextlib.suppress(NoNodeError, BadVersionError):
                        self.kazoo.delete(path, version=stat.version)
                    attempts -= 1
                    continue
                if self._wait_until_gone(path, stat.ephemeralOwner, deadline):
                    continue  # not an attempt used: the znode expired as expected
                raise BrokerIdInUseError(
                    f"broker id {info.id} is registered by another session "
                    f"(0x{stat.ephemeralOwner:x}): is another broker using it?"
                ) from None
            stat = self.kazoo.exists(path)
            if stat is None or stat.ephemeralOwner != self.session_id:
                attempts -= 1
                continue  # the session changed between create and exists: do it again
            if session is not None:
                self._past_sessions.add(session)
            return int(stat.czxid)
        raise BrokerIdInUseError(f"could not register broker {info.id}: too many attempts")

    def _wait_until_gone(self, path: str, owner: int, deadline: float) -> bool:
        """Block until the znode at ``path`` is deleted (True) or ``deadline`` passes."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        log.warning(
            "%s is registered by session 0x%x, not ours: if it is this broker's previous run "
            "(a crash or kill), ZooKeeper removes it when that session expires; waiting up "
            "to %.1fs for that before registering",
            path,
            owner,
            remaining,
        )
        gone = threading.Event()

        def on_event(event: WatchedEvent) -> None:
            gone.set()  # any change (normally the deletion): look again

        if self.kazoo.exists(path, watch=on_event) is None:
            return True
        gone.wait(remaining)
        if self.kazoo.exists(path) is None:
            log.info("%s expired: registering", path)
            return True
        return time.monotonic() < deadline  # changed but still there: look again

    def deregister_broker(self, broker_id: int) -> None:
        try:
            stat = self.kazoo.exists(paths.broker(broker_id))
            if stat is not None and stat.ephemeralOwner == self.session_id:
                self.kazoo.delete(paths.broker(broker_id), version=stat.version)
        except (NoNodeError, BadVersionError):
            pass

    def get_broker_ids(self, watch: Watch | None = None) -> list[int]:
        return sorted(int(c) for c in self._children(paths.BROKER_IDS, watch) if c.isdigit())

    def get_broker(self, broker_id: int) -> BrokerInfo | None:
        found = self._get(paths.broker(broker_id))
        if found is None:
            return None
        data, stat = found
        return codec.decode_broker(broker_id, data, int(stat.czxid))

    def get_brokers(self, ids: Iterable[int]) -> dict[int, BrokerInfo]:
        out = {}
        for bid in ids:
            try:
                info = self.get_broker(bid)
            except codec.ZkDataError as exc:
                log.error("ignoring broker %s: %s", bid, exc)  # as if it were not registered
                continue
            if info is not None:
                out[bid] = info
        return out

    # -- topics -------------------------------------------------------------------------

    def create_topic(self, assignment: TopicAssignment, config: Mapping[str, str]) -> None:
        """Write a new topic's config and assignment together (one multi-op).

        The config goes first so that whoever sees the topic can read its config. A
        topic that exists already raises TopicExistsError and writes nothing.
        """
        self.kazoo.ensure_path(paths.CONFIG_TOPICS)
        self.kazoo.ensure_path(paths.BROKER_TOPICS)
        tx = self.kazoo.transaction()
        config_path = paths.topic_config(assignment.topic)
        if self.kazoo.exists(config_path) is None:
            tx.create(config_path, codec.encode_entity_config(dict(config)))
        else:
            tx.set_data(config_path, codec.encode_entity_config(dict(config)))
        tx.create(paths.topic(assignment.topic), codec.encode_topic(assignment))
        results = tx.commit()
        failure = _first_failure(results)
        if isinstance(failure, NodeExistsError):
            raise TopicExistsError(assignment.topic)
        if failure is not None:
            raise failure

    def set_topic_assignment(self, assignment: TopicAssignment, expected_version: int) -> int:
        """Rewrite a topic's assignment (CreatePartitions); conditional on its version."""
        stat = self.kazoo.set(
            paths.topic(assignment.topic), codec.encode_topic(assignment), version=expected_version
        )
        return int(stat.version)

    def get_topics(self, watch: Watch | None = None) -> list[str]:
        return self._children(paths.BROKER_TOPICS, watch)

    def set_topic_assignment_as_controller(
        self, assignment: TopicAssignment, epoch_zk_version: int
    ) -> None:
        """The controller rewrites a topic's assignment (a reassignment's RS and its
        adding/removing replicas): any znode version, fenced on the controller epoch."""
        self.controller_write(
            [("set", paths.topic(assignment.topic), codec.encode_topic(assignment), -1)],
            epoch_zk_version,
        )

    def get_topic(
        self, topic: str, watch: Watch | None = None
    ) -> tuple[TopicAssignment, int] | None:
        """The topic's assignment and its znode version (for conditional rewrites)."""
        found = self._get(paths.topic(topic), watch)
        if found is None:
            return None
        return codec.decode_topic(topic, found[0]), int(found[1].version)

    def get_topic_config(self, topic: str) -> dict[str, str]:
        found = self._get(paths.topic_config(topic))
        return {} if found is None else codec.decode_topic_config(topic, found[0])

    def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        """The dynamic config of /config/<type>/<name>; empty when there is none."""
        path = paths.entity_config(entity_type, name)
        found = self._get(path)
        return {} if found is None else codec.decode_entity_config(path, found[0])

    def set_entity_config(self, entity_type: str, name: str, config: Mapping[str, str]) -> str:
        """Replace the dynamic config of /config/<type>/<name> and announce it with a
        sequential /config/changes/config_change_ notification, in one multi-op (so no
        broker reads a notification before the config it points at). Returns the
        notification's name."""
        path = paths.entity_config(entity_type, name)
        self.kazoo.ensure_path(paths.CONFIG_CHANGES)
        self.kazoo.ensure_path(f"{paths.CONFIG}/{entity_type}")
        tx = self.kazoo.transaction()
        data = codec.encode_entity_config(dict(config))
        if self.kazoo.exists(path) is None:
            tx.create(path, data)
        else:
            tx.set_data(path, data)
        tx.create(
            f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
            codec.encode_config_change(f"{entity_type}/{name}"),
            sequence=True,
        )
        results = tx.commit()
        failure = _first_failure(results)
        if failure is not None:
            raise failure
        return str(results[-1]).rsplit("/", 1)[-1]

    def get_config_changes(self, watch: Watch | None = None) -> list[str]:
        """The config change notifications, oldest first (names sort by sequence)."""
        return [
            c
            for c in self._children(paths.CONFIG_CHANGES, watch)
            if paths.config_change_sequence(c) >= 0
        ]

    def read_config_change(self, name: str) -> tuple[str, str, int] | None:
        """(entity type, entity name, creation time in ms) of one notification; None when
        it is gone (purged meanwhile)."""
        found = self._get(f"{paths.CONFIG_CHANGES}/{name}")
        if found is None:
            return None
        entity_type, entity = codec.decode_config_change(found[0])
        return entity_type, entity, int(found[1].ctime)

    def delete_config_changes(self, names: Iterable[str]) -> None:
        """Purge notifications; one deleted meanwhile (by another broker) is skipped."""
        for name in names:
            with contextlib.suppress(NoNodeError):
                self.kazoo.delete(f"{paths.CONFIG_CHANGES}/{name}")

    def get_topic_deletions(self, watch: Watch | None = None) -> list[str]:
        return self._children(paths.DELETE_TOPICS, watch)

    def mark_topic_for_deletion(self, topic: str) -> None:
        """Queue ``topic`` for the controller: create /admin/delete_topics/<t> (what
        DeleteTopics writes). TopicNotFoundError when the topic does not exist,
        TopicAlreadyMarkedForDeletionError when it is queued already."""
        if self.kazoo.exists(paths.topic(topic)) is None:
            raise TopicNotFoundError(topic)
        try:
            self.kazoo.create(paths.delete_topic(topic), b"", makepath=True)
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(topic) from None

    def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None:
        """The controller drops /admin/delete_topics/<t> entries, fenced on its epoch;
        one per multi-op, so an entry already gone fails alone (and is ignored)."""
        if topics:
            ops = {t: [("delete", paths.delete_topic(t), -1)] for t in topics}
            self._controller_transactions(ops, epoch_zk_version)

    def delete_topic_znodes(self, topic: str, epoch_zk_version: int, attempts: int = 3) -> None:
        """Remove every znode of a deleted topic in one multi-op fenced on the controller
        epoch: /brokers/topics/<t> with its partition and state znodes (children before
        parents, as ZooKeeper deletes only leaves), /config/topics/<t> and
        /admin/delete_topics/<t>. The tree is listed first; if it changed before the
        multi-op ran (a znode gone, or a new child), it is listed again."""
        for attempt in range(attempts):
            ops: list[tuple[Any, ...]] = [
                ("delete", p, -1) for p in self._subtree_leaves_first(paths.topic(topic))
            ]
            for path in (paths.topic_config(topic), paths.delete_topic(topic)):
                if self.kazoo.exists(path) is not None:
                    ops.append(("delete", path, -1))
            if not ops:
                return
            failure = _first_failure(self.controller_write(ops, epoch_zk_version))
            if failure is None:
                return
            if attempt + 1 == attempts or not isinstance(failure, NoNodeError | NotEmptyError):
                raise failure

    def _subtree_leaves_first(self, path: str) -> list[str]:
        """``path`` and every znode under it, each listed after its children."""
        try:
            children = self.kazoo.get_children(path)
        except NoNodeError:
            return []
        out: list[str] = []
        for child in sorted(children):
            out += self._subtree_leaves_first(f"{path}/{child}")
        out.append(path)
        return out

    # -- partition states ---------------------------------------------------------------

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        pending = [
            (tp, self.kazoo.get_async(paths.partition_state(tp.topic, tp.partition)))
            for tp in partitions
        ]
        out = {}
        for tp, result in pending:
            try:
                data, stat = result.get()
            except NoNodeError:
                continue
            try:
                out[tp] = codec.decode_partition_state(tp, bytes(data), int(stat.version))
            except codec.ZkDataError as exc:
                log.error("ignoring the state of %s: %s", tp, exc)
        return out

    def create_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> dict[TopicPartition, LeaderAndIsr | Exception]:
        self._ensure_partition_parents(states)
        ops = {
            tp: [
                ("create", paths.partition_state(tp.topic, tp.partition),
                 codec.encode_partition_state(lai, controller_epoch))
            ]
            for tp, lai in states.items()
        }  # fmt: skip
        results = self._controller_transactions(ops, epoch_zk_version)
        out: dict[TopicPartition, LeaderAndIsr | Exception] = {}
        for tp, res in results.items():
            if isinstance(res, Exception):
                out[tp] = StateConflictError(str(tp)) if isinstance(res, NodeExistsError) else res
            else:
                out[tp] = states[tp].with_zk_version(0)
        return out

    def _ensure_partition_parents(self, partitions: Iterable[TopicPartition]) -> None:
        """Create ``.../partitions`` once per topic, then every ``.../partitions/<p>`` with
        all creates in flight at once. Structural, empty znodes: harmless for a zombie to
        create, so they are not epoch-checked; the state znodes below them are."""
        tps = list(partitions)
        for topic in sorted({tp.topic for tp in tps}):
            self.kazoo.ensure_path(paths.topic_partitions(topic))
        pending = [self.kazoo.create_async(paths.partition(tp.topic, tp.partition)) for tp in tps]
        for result in pending:
            with contextlib.suppress(NodeExistsError):
                result.get()

    def update_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> dict[TopicPartition, LeaderAndIsr | Exception]:
        ops = {
            tp: [
                ("set", paths.partition_state(tp.topic, tp.partition),
                 codec.encode_partition_state(lai, controller_epoch), lai.zk_version)
            ]
            for tp, lai in states.items()
        }  # fmt: skip
        results = self._controller_transactions(ops, epoch_zk_version)
        out: dict[TopicPartition, LeaderAndIsr | Exception] = {}
        for tp, res in results.items():
            if isinstance(res, BadVersionError | NoNodeError):
                out[tp] = StateConflictError(f"{tp}: {type(res).__name__}")
            elif isinstance(res, Exception):
                out[tp] = res
            else:
                out[tp] = states[tp].with_zk_version(int(res.version))  # res: the ZnodeStat
        return out

    def update_leader_and_isr(
        self, tp: TopicPartition, lai: LeaderAndIsr, controller_epoch: int
    ) -> LeaderAndIsr:
        """A leader's write of its new ISR (ZooKeeper mode): set the partition state
        conditionally on ``lai.zk_version``, without the controller's epoch check (a
        broker is not the controller). Returns the state with its new zkVersion.

        Raises StateConflictError when the znode is at another version or gone: the
        controller changed it. A version mismatch whose znode already holds exactly this
        state is our own earlier write that went through before a lost connection made
        kazoo send it again (Kafka's checkLeaderAndIsrZkData): success."""
        path = paths.partition_state(tp.topic, tp.partition)
        data = codec.encode_partition_state(lai, controller_epoch)
        try:
            stat = self.kazoo.set(path, data, version=lai.zk_version)
        except NoNodeError:
            raise StateConflictError(f"{tp}: no partition state") from None
        except BadVersionError:
            already = self._state_if_equal(tp, path, lai, controller_epoch)
            if already is None:
                raise StateConflictError(f"{tp}: not at zkVersion {lai.zk_version}") from None
            return already
        return lai.with_zk_version(int(stat.version))

    def _state_if_equal(
        self, tp: TopicPartition, path: str, lai: LeaderAndIsr, controller_epoch: int
    ) -> LeaderAndIsr | None:
        """The partition state at ``path`` if it is ``lai`` written by ``controller_epoch``
        (any zkVersion), else None."""
        found = self._get(path)
        if found is None:
            return None
        try:
            st = codec.decode_partition_state(tp, found[0], int(found[1].version))
        except codec.ZkDataError:
            return None
        now = st.leader_and_isr
        wanted = (lai.leader, lai.leader_epoch, lai.isr, controller_epoch)
        same = (now.leader, now.leader_epoch, now.isr, st.controller_epoch) == wanted
        return now if same else None

    # -- controller election ------------------------------------------------------------

    def get_controller_id(self, watch: Watch | None = None) -> int | None:
        """The active controller's broker id; with ``watch``, armed on /controller either way."""
        found = self._get(paths.CONTROLLER, watch)
        return None if found is None else codec.decode_controller(found[0])

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, zkVersion of /controller_epoch), or None before the first election."""
        found = self._get(paths.CONTROLLER_EPOCH)
        if found is None:
            return None
        return codec.decode_controller_epoch(found[0]), int(found[1].version)

    def try_become_controller(self, broker_id: int, timestamp_ms: int) -> ControllerElection:
        """Create /controller and bump /controller_epoch in one multi-op.

        Either both happen or neither: there is never a controller whose epoch was not
        bumped, nor a bumped epoch without a controller. Losing returns the winner's id.
        """
        for _ in range(10):
            current = self.get_controller_epoch()
            if current is None:
                with contextlib.suppress(NodeExistsError):
                    self.kazoo.create(
                        paths.CONTROLLER_EPOCH,
                        codec.encode_controller_epoch(INITIAL_CONTROLLER_EPOCH),
                    )
                continue
            epoch, version = current
            tx = self.kazoo.transaction()
            tx.create(
                paths.CONTROLLER, codec.encode_controller(broker_id, timestamp_ms), ephemeral=True
            )
            tx.set_data(paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(epoch + 1), version)
            results = tx.commit()
            failure = _first_failure(results)
            if failure is None:
                stat = results[1]
                return ControllerElection(True, broker_id, epoch + 1, int(stat.version))
            if isinstance(failure, NodeExistsError):
                found = self._get(paths.CONTROLLER)
                if found is None:
                    continue  # it went away meanwhile: try again
                data, stat = found
                winner = codec.decode_controller(data)
                if stat.ephemeralOwner == self.session_id and winner == broker_id:
                    # our own earlier attempt succeeded (e.g. retried after a connection loss)
                    mine = self.get_controller_epoch()
                    if mine is not None:
                        return ControllerElection(True, broker_id, mine[0], mine[1])
                return ControllerElection(False, winner)
            if isinstance(failure, BadVersionError):
                continue  # somebody bumped the epoch between our read and our write
            raise failure
        return ControllerElection(False, self.get_controller_id())

    def resign_controller(self, broker_id: int, timeout_s: float = 5.0) -> bool:
        """Delete /controller if it is ours (a clean shutdown or a fenced controller).

        Bounded: a shutdown must not hang on a ZooKeeper that cannot be reached (the
        session's expiry removes the znode then anyway). True if it was deleted.
        """
        try:
            data, stat = self.kazoo.get_async(paths.CONTROLLER).get(timeout=timeout_s)
            if (
                codec.decode_controller(bytes(data)) != broker_id
                or stat.ephemeralOwner != self.session_id
            ):
                return False
            self.kazoo.delete_async(paths.CONTROLLER, version=stat.version).get(timeout=timeout_s)
            return True
        except (NoNodeError, BadVersionError, codec.ZkDataError):
            return False
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("could not remove /controller: %s", exc or type(exc).__name__)
            return False

    def _controller_transactions(
        self, ops_by_key: Mapping[Any, Sequence[tuple[Any, ...]]], epoch_zk_version: int
    ) -> dict[Any, Any]:
        """Run one epoch-checked multi-op per key, all in flight at once.

        Returns, per key, the result of its (single) operation or its exception. Raises
        ControllerMovedError if any multi-op failed its /controller_epoch check.
        """
        pending = []
        for key, ops in ops_by_key.items():
            tx = self.kazoo.transaction()
            tx.check(paths.CONTROLLER_EPOCH, epoch_zk_version)
            for op in ops:
                _add_op(tx, op)
            pending.append((key, tx.commit_async()))
        out: dict[Any, Any] = {}
        fenced = False
        for key, result in pending:
            try:
                results = result.get()
            except SessionExpiredError as exc:
                raise ControllerMovedError("ZooKeeper session expired") from exc
            check = results[0]
            if isinstance(check, Exception) and not isinstance(check, RolledBackError):
                fenced = True  # the epoch check itself failed: the whole multi-op refused
                out[key] = check
                continue
            failure = _first_failure(results[1:])
            if failure is not None:
                out[key] = failure
            else:
                out[key] = results[1] if len(results) == 2 else list(results[1:])
        if fenced:
            raise ControllerMovedError(
                f"/controller_epoch is no longer at zkVersion {epoch_zk_version}"
            )
        return out

    def controller_write(self, ops: Sequence[tuple[Any, ...]], epoch_zk_version: int) -> list[Any]:
        """One epoch-checked multi-op of ``ops``; returns the per-op results (no check)."""
        results = self._controller_transactions({0: ops}, epoch_zk_version)[0]
        return list(results) if isinstance(results, list) else [results]

    # -- notifications ------------------------------------------------------------------

    def get_isr_change_notifications(self, watch: Watch | None = None) -> list[str]:
        return [
            c
            for c in self._children(paths.ISR_CHANGE_NOTIFICATION, watch)
            if c.startswith(paths.ISR_CHANGE_PREFIX)
        ]

    def read_isr_change_notification(self, name: str) -> list[TopicPartition]:
        found = self._get(f"{paths.ISR_CHANGE_NOTIFICATION}/{name}")
        return [] if found is None else codec.decode_isr_change(found[0])

    def delete_isr_change_notifications(self, names: Sequence[str], epoch_zk_version: int) -> None:
        if names:
            ops = [("delete", f"{paths.ISR_CHANGE_NOTIFICATION}/{n}", -1) for n in names]
            # a notification deleted meanwhile only fails its own multi-op: ignore it
            self._controller_transactions({n: [op] for n, op in zip(names, ops)}, epoch_zk_version)

    def propagate_isr_change(self, partitions: Iterable[TopicPartition]) -> str:
        """Used by a leader that changed ISRs: queue a notification for the controller."""
        self.kazoo.ensure_path(paths.ISR_CHANGE_NOTIFICATION)
        return str(
            self.kazoo.create(
                f"{paths.ISR_CHANGE_NOTIFICATION}/{paths.ISR_CHANGE_PREFIX}",
                codec.encode_isr_change(partitions),
                sequence=True,
            )
        )

    def get_preferred_replica_election(
        self, watch: Watch | None = None
    ) -> list[TopicPartition] | None:
        """The partitions an operator asked to move back to their preferred leader."""
        found = self._get(paths.PREFERRED_REPLICA_ELECTION, watch)
        return None if found is None else codec.decode_isr_change(found[0])

    def delete_preferred_replica_election(self, epoch_zk_version: int) -> None:
        self._controller_transactions(
            {0: [("delete", paths.PREFERRED_REPLICA_ELECTION, -1)]}, epoch_zk_version
        )

    def request_preferred_replica_election(self, partitions: Iterable[TopicPartition]) -> None:
        """What an admin tool writes; NodeExists while a previous request is pending."""
        self.kazoo.create(
            paths.PREFERRED_REPLICA_ELECTION, codec.encode_partition_list(partitions), makepath=True
        )

    # -- partition reassignment ---------------------------------------------------------

    def get_partition_reassignment(
        self, watch: Watch | None = None
    ) -> tuple[dict[TopicPartition, tuple[int, ...]], int] | None:
        """The targets in /admin/reassign_partitions and the znode's czxid (which tells
        one request from the next), None when there is none; with ``watch``, armed
        either way (so its creation is noticed). ZkDataError when it is not readable."""
        found = self._get(paths.REASSIGN_PARTITIONS, watch)
        if found is None:
            return None
        return codec.decode_reassignment(found[0]), int(found[1].czxid)

    def set_partition_reassignment(
        self, targets: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
    ) -> None:
        """The controller rewrites /admin/reassign_partitions with what is left of it
        (deleted when nothing is); fenced on the controller epoch. A znode that went
        away meanwhile is left alone."""
        if not targets:
            ops: list[tuple[Any, ...]] = [("delete", paths.REASSIGN_PARTITIONS, -1)]
        else:
            ops = [("set", paths.REASSIGN_PARTITIONS, codec.encode_reassignment(targets), -1)]
        results = self._controller_transactions({0: ops}, epoch_zk_version)
        failure = results[0]
        if isinstance(failure, Exception) and not isinstance(failure, NoNodeError):
            raise failure

    def request_partition_reassignment(
        self, targets: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """What an admin writes (the pre-API way); NodeExists while one is pending."""
        self.kazoo.create(
            paths.REASSIGN_PARTITIONS, codec.encode_reassignment(targets), makepath=True
        )

    def watch_partition_state(
        self, tp: TopicPartition, watch: Watch
    ) -> LeaderIsrAndControllerEpoch | None:
        """A partition's state, with ``watch`` armed on its znode (a reassigning
        partition's ISR is followed this way)."""
        found = self._get(paths.partition_state(tp.topic, tp.partition), watch)
        if found is None:
            return None
        return codec.decode_partition_state(tp, found[0], int(found[1].version))

    # -- producer ids -------------------------------------------------------------------

    def allocate_producer_id_block(
        self, broker_id: int, size: int = codec.PRODUCER_ID_BLOCK_SIZE, attempts: int = 100
    ) -> codec.ProducerIdBlock:
        """Claim the next block of producer ids for ``broker_id``.

        Read the last block handed out and write the next one conditionally on the
        znode's version: of two brokers racing, one write fails with BadVersion and that
        broker reads again, so no id is ever handed out twice.
        """
        self.kazoo.ensure_path(paths.LATEST_PRODUCER_ID_BLOCK)
        for _ in range(attempts):
            data, stat = self.kazoo.get(paths.LATEST_PRODUCER_ID_BLOCK)
            previous = codec.decode_producer_id_block(bytes(data)) if data else None
            block = codec.next_producer_id_block(previous, broker_id, size)
            try:
                self.kazoo.set(
                    paths.LATEST_PRODUCER_ID_BLOCK,
                    codec.encode_producer_id_block(block),
                    version=stat.version,
                )
                return block
            except BadVersionError:
                continue
        raise RuntimeError(f"could not allocate a producer id block in {attempts} attempts")


def _add_op(tx: TransactionRequest, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "create":
        tx.create(op[1], op[2])
    elif kind == "set":
        tx.set_data(op[1], op[2], op[3])
    elif kind == "delete":
        tx.delete(op[1], op[2])
    elif kind == "check":
        tx.check(op[1], op[2])
    else:
        raise ValueError(f"unknown operation {kind!r}")


def _first_failure(results: Sequence[Any]) -> Exception | None:
    """The exception that made a multi-op fail (kazoo marks the others RolledBackError)."""
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, RolledBackError):
            return r
    for r in results:
        if isinstance(r, Exception):
            return r
    return None
