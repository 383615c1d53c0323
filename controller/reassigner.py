"""PartitionReassigner: the controller's side of partition reassignment (Kafka's KIP-455).

The decisions are controller.reassignment_rules's (the replica sets, validation, which phase a
partition is in, the steps of each phase); this module carries them out on the context,
the state machines, ZooKeeper and the request batch. It runs only on the controller's
event task, like every other handler.

Where reassignments come from:

- the AlterPartitionReassignments API (``alter``): validated per partition, answered once
  each partition's START phase was carried out; an API request for a partition also
  drops that partition from /admin/reassign_partitions (the newest request wins);
- /admin/reassign_partitions (``on_zk_request``), the pre-API way: read when a new znode
  appears (a creation is told from the controller's own rewrites by its czxid) and at
  failover. Its entries are removed as their partitions complete; the znode goes when
  it is empty. Entries that cannot start (unknown partitions, malformed lists) are
  removed at once. Liveness is not checked there, as in Kafka: a replica on a broker
  that is down starts when the broker comes back (``resume_for_brokers``);
- the topic znodes themselves: a partition with adding/removing replicas is being
  reassigned, so a new controller resumes all of them (``on_controller_failover``).

Progress: each reassigning partition's state znode is watched; a change (or an ISR change
notification naming it) re-reads its ISR, and once every target replica is in it the
COMPLETE phase runs. The ISR is the leaders' word: a new replica joins it once it has
copied the log up to the high watermark, so the old replicas are never removed before the
new ones hold every acknowledged record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable

from kazoo.protocol.states import EventType, WatchedEvent

from controller import events as ev
from controller.election_strategies import ElectionStrategy
from controller.model import PartitionReplica
from controller.parts import ControllerHandler, ControllerParts
from controller.reassignment_rules import (
    PHASE_STEPS,
    LeaderMove,
    Phase,
    ReassignmentError,
    ReplicaAssignment,
    Step,
    leader_move,
    phase_of,
    plan_reassignment,
    unneeded_replicas,
    validate_target,
)
from controller.request_batch import ControllerRequestBatch
from controller.states import PartitionState, ReplicaState
from protocol import ErrorCode
from protocol.values import TopicPartition
from zk.codec import ZkDataError
from zk.errors import ControllerMovedError, StateConflictError
from zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicAssignment

log = logging.getLogger(__name__)


#: per partition: None when it started, else why it was refused
Outcomes = dict[TopicPartition, ReassignmentError | None]

UNKNOWN_PARTITION = ReassignmentError(
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
)
NO_REASSIGNMENT = ReassignmentError(
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No reassignment is in progress for this partition."
)


class PartitionReassigner(ControllerHandler):
    def __init__(self, parts: ControllerParts) -> None:
        super().__init__(parts)
        #: czxid of the /admin/reassign_partitions znode last acted on
        self._handled_request: int | None = None
        #: one watch callback per partition (kazoo keeps watchers in a set)
        self._isr_watches: dict[TopicPartition, Callable[[WatchedEvent], None]] = {}

    def reset(self) -> None:
        """Forget what was handled (this broker stopped being the controller)."""
        self._handled_request = None

    # -- watches (kazoo's thread: enqueue only) ---------------------------------------------

    def _on_request_watch(self, event: WatchedEvent) -> None:
        if event.type != EventType.NONE:
            self.events.put_threadsafe(ev.ZkPartitionReassignment())

    def _isr_watch(self, tp: TopicPartition) -> Callable[[WatchedEvent], None]:
        if tp not in self._isr_watches:

            def on_state(event: WatchedEvent) -> None:
                if event.type == EventType.CHANGED:
                    self.events.put_threadsafe(ev.PartitionReassignmentIsrChange(tp))

            self._isr_watches[tp] = on_state
        return self._isr_watches[tp]

    def rearm_events(self) -> list[ev.ControllerEvent]:
        """After a reconnection (kazoo dropped its watches): events that read again."""
        return [
            ev.ZkPartitionReassignment(),
            *(ev.PartitionReassignmentIsrChange(tp) for tp in sorted(self.ctx.reassignments)),
        ]

    # -- sources ----------------------------------------------------------------------------

    async def alter(self, targets: dict[TopicPartition, tuple[int, ...] | None]) -> Outcomes:
        """AlterPartitionReassignments: start (or replace, or cancel) each partition's."""
        outcomes: Outcomes = {}
        plans: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in targets.items():
            if not self._exists(tp):
                outcomes[tp] = UNKNOWN_PARTITION
                continue
            current = self.ctx.full_assignment(tp)
            if target is not None:
                error = validate_target(current, target, self.ctx.live_broker_ids())
                if error is not None:
                    outcomes[tp] = error
                    continue
            plan = plan_reassignment(current, target)
            if plan is None:
                outcomes[tp] = NO_REASSIGNMENT
                continue
            plans[tp] = plan
        await self._drop_requests(lambda tp, _: tp in plans)
        outcomes.update(await self._trigger(plans))
        return outcomes

    def ongoing(
        self, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment]:
        """ListPartitionReassignments: the ongoing ones among ``partitions`` (None: all)."""
        wanted = self.ctx.reassignments if partitions is None else partitions
        return {tp: self.ctx.reassignments[tp] for tp in wanted if tp in self.ctx.reassignments}

    async def on_request_event(self) -> None:
        """The znode's watch fired (or the watches are re-armed)."""
        await self.on_zk_request()

    async def on_zk_request(self) -> set[TopicPartition]:
        """Act on /admin/reassign_partitions if it is a request not seen yet (and re-arm
        its watch); returns the partitions it started."""
        try:
            found = await self.zk.get_partition_reassignment(self._on_request_watch)
        except ZkDataError as exc:
            log.error("ignoring /admin/reassign_partitions: %s", exc)
            return set()
        if found is None:
            return set()
        targets, czxid = found
        if czxid == self._handled_request:
            return set()  # our own rewrite of a request already acted on
        self._handled_request = czxid
        log.info("controller: reassignment requested in ZooKeeper for %s", sorted(targets))
        refused: Outcomes = {}
        plans: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in targets.items():
            if not self._exists(tp):
                refused[tp] = UNKNOWN_PARTITION
                continue
            current = self.ctx.full_assignment(tp)
            error = validate_target(current, target, live_brokers=None)
            if error is not None:
                refused[tp] = error
                continue
            plans[tp] = current.reassign_to(target)
        outcomes = await self._trigger(plans)
        refused.update({tp: err for tp, err in outcomes.items() if err is not None})
        if refused:
            log.warning("reassignments in ZooKeeper refused: %s", refused)
            await self._drop_requests(lambda tp, _: tp in refused)
        return {tp for tp, err in outcomes.items() if err is None}

    async def on_controller_failover(self) -> None:
        """Requests written while nobody was controller, then every reassignment the
        topic znodes show in progress."""
        started = await self.on_zk_request()
        ongoing = {tp: a for tp, a in self.ctx.reassignments.items() if tp not in started}
        if ongoing:
            log.info("controller: resuming reassignments of %s", sorted(ongoing))
        await self._trigger(ongoing)

    async def resume_for_brokers(self, brokers: Collection[int]) -> None:
        """Brokers (re)started: resume the reassignments whose targets are on them."""
        await self._trigger(
            {
                tp: a
                for tp, a in self.ctx.reassignments.items()
                if any(r in brokers for r in a.target_replicas)
            }
        )

    async def on_isr_change(self, partitions: Iterable[TopicPartition]) -> None:
        """A reassigning partition's ISR may have grown: complete it if it has."""
        batch = ControllerRequestBatch()
        for tp in sorted(set(partitions)):
            assignment = self.ctx.reassignments.get(tp)
            if assignment is None:
                continue  # completed meanwhile: its watch fired one last time
            isr = await self._read_isr(tp)
            if isr is not None and phase_of(assignment, isr) is Phase.COMPLETE:
                await self._reassign(tp, assignment, batch)
        self.send(batch)

    # -- carrying a reassignment out ----------------------------------------------------------

    def _exists(self, tp: TopicPartition) -> bool:
        return bool(self.ctx.partition_replicas(tp)) and not self.ctx.is_topic_queued_for_deletion(
            tp.topic
        )

    async def _trigger(self, plans: dict[TopicPartition, ReplicaAssignment]) -> Outcomes:
        """Run each partition's reassignment; a failure costs that partition only
        (except losing the controllership, which ends the event)."""
        outcomes: Outcomes = {}
        batch = ControllerRequestBatch()
        for tp, plan in sorted(plans.items()):
            try:
                await self._reassign(tp, plan, batch)
                outcomes[tp] = None
            except ControllerMovedError:
                raise
            except Exception as exc:
                log.exception("reassignment of %s failed", tp)
                outcomes[tp] = ReassignmentError(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
        self.send(batch)
        return outcomes

    async def _reassign(
        self, tp: TopicPartition, plan: ReplicaAssignment, batch: ControllerRequestBatch
    ) -> None:
        """Kafka's onPartitionReassignment: record ``plan``, then run the steps of the
        phase the partition's ISR puts it in."""
        current = self.ctx.full_assignment(tp)
        if current != plan:
            await self._write_topic(tp.topic, {tp: plan})
            self.ctx.set_full_assignment(tp, plan)
            unneeded = unneeded_replicas(current, plan)
            if unneeded:
                await self._stop_replicas(tp, unneeded, batch)
        isr = await self._read_isr(tp)  # also arms the watch on its state
        phase = phase_of(plan, isr if isr is not None else ())
        log.info("reassignment of %s: %s (%s)", tp, phase.value, plan)
        for step in PHASE_STEPS[phase]:
            await self._run(step, tp, plan, batch)

    async def _run(
        self, step: Step, tp: TopicPartition, plan: ReplicaAssignment, batch: ControllerRequestBatch
    ) -> None:
        adding = [PartitionReplica(tp, r) for r in plan.adding]
        if step is Step.BUMP_EPOCH_AND_SEND:
            state = await self._bump_leader_epoch(tp)
            if state is not None:
                self._send_leader_and_isr(batch, tp, state, plan.origin_replicas, is_new=False)
                self._send_leader_and_isr(batch, tp, state, plan.adding, is_new=True)
        elif step is Step.START_ADDING:
            fresh = [pr for pr in adding if self.ctx.replica_state(pr) is ReplicaState.NON_EXISTENT]
            await self.replica_sm.handle_state_changes(fresh, ReplicaState.NEW, batch)
        elif step is Step.ONLINE_ADDING:
            await self.replica_sm.handle_state_changes(adding, ReplicaState.ONLINE, batch)
        elif step is Step.MOVE_LEADER:
            await self._move_leader(tp, plan.completed(), batch)
        elif step is Step.STOP_REMOVING:
            await self._stop_replicas(tp, plan.removing, batch)
        elif step is Step.WRITE_TARGET:
            await self._write_topic(tp.topic, {})
        elif step is Step.FORGET:
            target = plan.target_replicas
            await self._drop_requests(lambda p, replicas: p == tp and tuple(replicas) == target)
            log.info("reassignment of %s to %s completed", tp, list(target))
        elif step is Step.UPDATE_METADATA:
            batch.add_update_metadata(self.ctx.live_or_shutting_down_ids(), {tp})

    async def _move_leader(
        self, tp: TopicPartition, completed: ReplicaAssignment, batch: ControllerRequestBatch
    ) -> None:
        """RS = TRS in memory; then a leader outside TRS (or dead) is replaced by the
        first live target replica in the ISR, or the leader stays with a new epoch."""
        self.ctx.set_full_assignment(tp, completed)
        st = self.ctx.leadership.get(tp)
        if st is None:
            return
        leader = st.leader_and_isr.leader
        move = leader_move(completed.replicas, leader, self.ctx.is_replica_online(leader))
        if move is LeaderMove.ELECT:
            failures = await self.partition_sm.handle_state_changes(
                [tp], PartitionState.ONLINE, batch, ElectionStrategy.REASSIGN
            )
            for failed, why in failures.items():
                log.warning("reassignment of %s: no leader among the targets: %s", failed, why)
            return
        state = await self._bump_leader_epoch(tp)
        if state is not None:
            self._send_leader_and_isr(batch, tp, state, completed.replicas, is_new=False)

    async def _stop_replicas(
        self, tp: TopicPartition, brokers: Iterable[int], batch: ControllerRequestBatch
    ) -> None:
        """Offline (out of the ISR, StopReplica), then deleted (StopReplica with delete)."""
        prs = [PartitionReplica(tp, r) for r in brokers]
        for target in (
            ReplicaState.OFFLINE,
            ReplicaState.DELETION_STARTED,
            ReplicaState.DELETION_SUCCESSFUL,
            ReplicaState.NON_EXISTENT,
        ):
            await self.replica_sm.handle_state_changes(prs, target, batch)

    def _send_leader_and_isr(
        self,
        batch: ControllerRequestBatch,
        tp: TopicPartition,
        state: LeaderIsrAndControllerEpoch,
        brokers: Iterable[int],
        is_new: bool,
    ) -> None:
        recipients = [
            b for b in brokers if self.ctx.is_replica_online(b, include_shutting_down=True)
        ]
        if recipients:
            replicas = self.ctx.partition_replicas(tp)
            batch.add_leader_and_isr(self.ctx, recipients, tp, state, replicas, is_new)

    # -- ZooKeeper ----------------------------------------------------------------------------

    async def _read_isr(self, tp: TopicPartition) -> tuple[int, ...] | None:
        """The partition's state as ZooKeeper has it now (kept in the context), its
        watch armed; the ISR, or None when the partition has no state."""
        st = await self.zk.watch_partition_state(tp, self._isr_watch(tp))
        if st is None:
            return None
        self.ctx.put_leadership(tp, st)
        return st.leader_and_isr.isr

    async def _bump_leader_epoch(
        self,
        tp: TopicPartition,
        retries: int = 2,
    ) -> LeaderIsrAndControllerEpoch | None:
        """Write the same leader and ISR with the next leader epoch, conditionally on the
        state's version; re-read on a conflict."""
        store = self.partition_sm.store
        for _ in range(retries + 1):
            st = self.ctx.leadership.get(tp)
            if st is None:
                return None
            lai = st.leader_and_isr
            planned: LeaderAndIsr = lai.new_leader_and_isr(lai.leader, lai.isr)
            results = await store.update_states(
                {tp: planned}, self.ctx.epoch, self.ctx.epoch_zk_version
            )
            result = results[tp]
            if isinstance(result, StateConflictError):
                fresh = await store.read_states([tp])
                if tp in fresh:
                    self.ctx.put_leadership(tp, fresh[tp])
                continue
            if isinstance(result, Exception):
                raise result
            written = LeaderIsrAndControllerEpoch(result, self.ctx.epoch)
            self.ctx.put_leadership(tp, written)
            return written
        log.warning("reassignment of %s: its state kept changing; leader epoch not bumped", tp)
        return None

    async def _write_topic(
        self, topic: str, overrides: dict[TopicPartition, ReplicaAssignment]
    ) -> None:
        """Write the topic znode from the context, with ``overrides`` for some partitions."""
        partitions: dict[int, tuple[int, ...]] = {}
        adding: dict[int, tuple[int, ...]] = {}
        removing: dict[int, tuple[int, ...]] = {}
        for tp in self.ctx.partitions_for_topic(topic):
            full = overrides.get(tp) or self.ctx.full_assignment(tp)
            partitions[tp.partition] = full.replicas
            if full.adding:
                adding[tp.partition] = full.adding
            if full.removing:
                removing[tp.partition] = full.removing
        assignment = TopicAssignment(topic, self.ctx.topic_ids[topic], partitions, adding, removing)
        await self.zk.set_topic_assignment_as_controller(assignment, self.ctx.epoch_zk_version)

    async def _drop_requests(self, drop: Callable[[TopicPartition, tuple[int, ...]], bool]) -> None:
        """Remove the entries ``drop`` selects from /admin/reassign_partitions."""
        try:
            found = await self.zk.get_partition_reassignment()
        except ZkDataError:
            return
        if found is None:
            return
        targets, _ = found
        kept = {tp: r for tp, r in targets.items() if not drop(tp, r)}
        if len(kept) != len(targets):
            await self.zk.set_partition_reassignment(kept, self.ctx.epoch_zk_version)
