"""PartitionStateMachine: moves partitions between the four states of ``states``.

It validates every transition against ``states.PARTITION_TRANSITIONS`` and, for the move
to Online, decides the leader with the election strategies (controller.election_strategies), writes
the decision through the PartitionStateStore, then records it in the context and queues
LeaderAndIsr for the replicas. Nothing is recorded unless the write succeeded.

Unclean elections: the offline strategy runs clean first; for a partition left without
an eligible ISR member, the election is run again allowing an out-of-sync leader when the
caller forces it (ElectLeaders of type unclean) or when ``unclean_policy(topic)`` says the
topic allows it (an awaitable: it reads the topic's config). Otherwise the partition
stays Offline with its leadership untouched; ``unclean_leader_elections`` counts the
unclean elections written. An election is decided on the context's cached state; one
that finds a leader is written conditionally on the state's zkVersion (a conflict means
the state moved: it is read again and decided again), and one that finds none reads the
state again before it gives up, since a stale ISR would otherwise keep the partition
offline although an in-sync replica lives.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from controller.context import ControllerContext
from controller.election_strategies import (
    Election,
    ElectionStrategy,
    controlled_shutdown_leader,
    offline_partition_leader,
    preferred_replica_leader,
    reassign_partition_leader,
)
from controller.request_batch import ControllerRequestBatch
from controller.states import PARTITION_TRANSITIONS, PartitionState, check_transition
from controller.store import PartitionStateStore
from protocol.values import NO_LEADER, TopicPartition
from zk.errors import StateConflictError
from zk.model import INITIAL_LEADER_EPOCH, LeaderAndIsr, LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)

#: partition -> why it could not reach the target state
Failures = dict[TopicPartition, str]

#: topic -> may its partitions elect a leader outside the ISR? (may read ZooKeeper)
UncleanPolicy = Callable[[str], Awaitable[bool]]


def elect(
    ctx: ControllerContext,
    tp: TopicPartition,
    current: LeaderAndIsr,
    strategy: ElectionStrategy,
    unclean_enabled: bool,
) -> Election:
    """Run one strategy on the context's view of a partition (pure)."""
    assignment = ctx.partition_replicas(tp)
    live = ctx.eligible_replicas(tp)
    if strategy is ElectionStrategy.OFFLINE:
        return offline_partition_leader(assignment, current.isr, live, unclean_enabled)
    if strategy is ElectionStrategy.REASSIGN:
        return reassign_partition_leader(assignment, current.isr, live)
    if strategy is ElectionStrategy.PREFERRED_REPLICA:
        return preferred_replica_leader(assignment, current.isr, live)
    return controlled_shutdown_leader(
        assignment, current.isr, ctx.live_or_shutting_down_ids(), ctx.shutting_down
    )


class PartitionStateMachine:
    def __init__(
        self,
        ctx: ControllerContext,
        store: PartitionStateStore,
        unclean_leader_election: bool = False,
        unclean_policy: UncleanPolicy | None = None,
    ) -> None:
        self.ctx = ctx
        self.store = store
        #: the broker's setting, used when there is no ``unclean_policy``
        self.unclean_leader_election = unclean_leader_election
        self.unclean_policy = unclean_policy
        #: unclean elections written since this object was made (a controller metric)
        self.unclean_leader_elections = 0

    def initialize_states(self) -> None:
        """After failover: Online if the leader is alive, New if never led, else Offline."""
        for tp in self.ctx.all_partitions():
            st = self.ctx.leadership.get(tp)
            if st is None:
                self.ctx.partition_states[tp] = PartitionState.NEW
            elif self.ctx.is_replica_online(st.leader_and_isr.leader, include_shutting_down=True):
                self.ctx.partition_states[tp] = PartitionState.ONLINE
            else:
                self.ctx.partition_states[tp] = PartitionState.OFFLINE

    async def trigger_online_partition_state_change(
        self, batch: ControllerRequestBatch
    ) -> Failures:
        """Try to bring every New or Offline partition online (not topics being deleted)."""
        candidates = [
            tp
            for tp in self.ctx.partitions_in_states(PartitionState.NEW, PartitionState.OFFLINE)
            if not self.ctx.is_topic_queued_for_deletion(tp.topic)
        ]
        return await self.handle_state_changes(candidates, PartitionState.ONLINE, batch)

    async def handle_state_changes(
        self,
        partitions: Iterable[TopicPartition],
        target: PartitionState,
        batch: ControllerRequestBatch,
        strategy: ElectionStrategy = ElectionStrategy.OFFLINE,
        *,
        allow_unclean: bool = False,
    ) -> Failures:
        """Move ``partitions`` to ``target``; for Online, elect with ``strategy``
        (``allow_unclean``: the offline strategy may pick an out-of-sync replica whatever
        the topic's config says)."""
        failures: Failures = {}
        valid: list[TopicPartition] = []
        for tp in partitions:
            current = self.ctx.partition_state(tp)
            if check_transition(PARTITION_TRANSITIONS, tp, current, target):
                valid.append(tp)
            else:
                failures[tp] = f"invalid transition from {current} to {target}"
        if target is PartitionState.ONLINE:
            new = [tp for tp in valid if self.ctx.partition_state(tp) is PartitionState.NEW]
            new_set = set(new)
            existing = [tp for tp in valid if tp not in new_set]
            failures.update(await self._initialize_leaders(new, batch))
            failures.update(
                await self._elect_leaders(existing, strategy, batch, allow_unclean=allow_unclean)
            )
        else:
            for tp in valid:
                self._set_state(tp, target)
        return failures

    def _set_state(self, tp: TopicPartition, target: PartitionState) -> None:
        log.debug("partition %s: %s -> %s", tp, self.ctx.partition_state(tp), target)
        if target is PartitionState.NON_EXISTENT:
            self.ctx.partition_states.pop(tp, None)
        else:
            self.ctx.partition_states[tp] = target

    async def _initialize_leaders(
        self, partitions: list[TopicPartition], batch: ControllerRequestBatch
    ) -> Failures:
        """New partitions: leader = first live assigned replica, ISR = the live replicas."""
        failures: Failures = {}
        planned: dict[TopicPartition, LeaderAndIsr] = {}
        for tp in partitions:
            live = tuple(r for r in self.ctx.partition_replicas(tp) if r in self.ctx.live_brokers)
            if not live:
                failures[tp] = "no assigned replica is alive"
                continue
            planned[tp] = LeaderAndIsr(live[0], INITIAL_LEADER_EPOCH, live)
        if not planned:
            return failures
        results = await self.store.create_states(planned, self.ctx.epoch, self.ctx.epoch_zk_version)
        for tp, result in results.items():
            if isinstance(result, Exception):
                failures[tp] = f"could not create the state znode: {result}"
                continue
            self._record(tp, result, batch, is_new=True)
        return failures

    async def _elect_leaders(
        self,
        partitions: list[TopicPartition],
        strategy: ElectionStrategy,
        batch: ControllerRequestBatch,
        retries: int = 1,
        allow_unclean: bool = False,
    ) -> Failures:
        failures: Failures = {}
        planned: dict[TopicPartition, LeaderAndIsr] = {}
        unclean: set[TopicPartition] = set()
        leaderless: list[TopicPartition] = []
        policy_by_topic: dict[str, bool] = {}
        for tp in partitions:
            st = self.ctx.leadership.get(tp)
            if st is None:
                failures[tp] = "no leadership known"
                continue
            current = st.leader_and_isr
            if st.controller_epoch > self.ctx.epoch:
                # a newer controller wrote this: we are a zombie, let the write fence us
                log.warning("%s was written by controller epoch %s", tp, st.controller_epoch)
            election = elect(self.ctx, tp, current, strategy, False)
            if (
                election.leader is None
                and strategy is ElectionStrategy.OFFLINE
                and (allow_unclean or await self._unclean_allowed(tp.topic, policy_by_topic))
            ):
                election = elect(self.ctx, tp, current, strategy, True)
            if election.leader is None:
                if retries > 0:  # decided on the cached state: confirmed below first
                    leaderless.append(tp)
                else:
                    self._no_leader(tp, strategy, failures)
                continue
            if election.unclean:
                unclean.add(tp)
            planned[tp] = current.new_leader_and_isr(election.leader, election.isr)
        if leaderless:
            failures.update(
                await self._confirm_leaderless(leaderless, strategy, batch, retries, allow_unclean)
            )
        if not planned:
            return failures
        results = await self.store.update_states(planned, self.ctx.epoch, self.ctx.epoch_zk_version)
        conflicts: list[TopicPartition] = []
        for tp, result in results.items():
            if isinstance(result, StateConflictError):
                conflicts.append(tp)
            elif isinstance(result, Exception):
                failures[tp] = f"could not write the state znode: {result}"
            else:
                if tp in unclean:
                    self.unclean_leader_elections += 1
                    log.warning(
                        "unclean leader election for %s: %s leads, out of sync; records the "
                        "last ISR acknowledged may be lost",
                        tp,
                        result.leader,
                    )
                self._record(tp, result, batch, is_new=False)
        if conflicts:
            # someone else (a leader changing its ISR) wrote first: re-read and re-decide
            fresh = await self.store.read_states(conflicts)
            for tp in conflicts:
                if tp in fresh:
                    self.ctx.put_leadership(tp, fresh[tp])
            if retries > 0:
                failures.update(
                    await self._elect_leaders(
                        conflicts, strategy, batch, retries - 1, allow_unclean=allow_unclean
                    )
                )
            else:
                failures.update({tp: "partition state kept changing" for tp in conflicts})
        return failures

    def _no_leader(
        self, tp: TopicPartition, strategy: ElectionStrategy, failures: Failures
    ) -> None:
        failures[tp] = f"no eligible leader ({strategy.value})"
        if strategy is ElectionStrategy.OFFLINE:
            self._set_state(tp, PartitionState.OFFLINE)

    async def _confirm_leaderless(
        self,
        partitions: list[TopicPartition],
        strategy: ElectionStrategy,
        batch: ControllerRequestBatch,
        retries: int,
        allow_unclean: bool,
    ) -> Failures:
        """Partitions the cached state left without an eligible leader. A leader may have
        grown the ISR in ZooKeeper since the controller last read it (its ISR change
        notification is still on its way, or the leader died before sending it): an
        election that finds a leader is written conditionally and so corrects itself on
        a conflict, but one that finds none writes nothing and would leave the partition
        offline for good on a stale ISR. So their states are read again and those that
        changed are elected once more; the others are offline indeed."""
        failures: Failures = {}
        fresh = await self.store.read_states(partitions)
        changed: list[TopicPartition] = []
        for tp in partitions:
            cached = self.ctx.leadership.get(tp)
            now = fresh.get(tp)
            if now is not None and (
                cached is None or now.leader_and_isr.zk_version != cached.leader_and_isr.zk_version
            ):
                self.ctx.put_leadership(tp, now)
                changed.append(tp)
            else:
                self._no_leader(tp, strategy, failures)
        if changed:
            failures.update(
                await self._elect_leaders(
                    changed, strategy, batch, retries - 1, allow_unclean=allow_unclean
                )
            )
        return failures

    async def _unclean_allowed(self, topic: str, cache: dict[str, bool]) -> bool:
        """The topic's unclean.leader.election.enable, looked up once per topic per call."""
        if topic not in cache:
            if self.unclean_policy is None:
                cache[topic] = self.unclean_leader_election
            else:
                cache[topic] = await self.unclean_policy(topic)
        return cache[topic]

    def _record(
        self,
        tp: TopicPartition,
        lai: LeaderAndIsr,
        batch: ControllerRequestBatch,
        is_new: bool,
    ) -> None:
        state = LeaderIsrAndControllerEpoch(lai, self.ctx.epoch)
        self.ctx.put_leadership(tp, state)
        self._set_state(
            tp, PartitionState.ONLINE if lai.leader != NO_LEADER else PartitionState.OFFLINE
        )
        replicas = self.ctx.partition_replicas(tp)
        recipients = [
            r for r in replicas if self.ctx.is_replica_online(r, include_shutting_down=True)
        ]
        batch.add_leader_and_isr(self.ctx, recipients, tp, state, replicas, is_new)
