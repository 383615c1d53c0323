"""Preferred leaders: moving leadership back to each partition's first replica, and the
leader elections an admin asks for.

Three ways in, all run by the active controller only:

- the periodic leader-imbalance check (``auto.leader.rebalance.enable``): ``schedule``
  arms it on the broker's Scheduler when this broker becomes controller (first 5 s after
  the failover, as Kafka does, then every ``leader.imbalance.check.interval.seconds``)
  and ``cancel`` disarms it when it resigns; each run enqueues an
  AutoPreferredLeaderElection event, so the check itself runs on the event task and
  picks (controller.preferred_leader_rules) the partitions of brokers whose share of
  not-preferred-led partitions exceeds ``leader.imbalance.per.broker.percentage``;
- /admin/preferred_replica_election, the pre-API way an operator asks: read (re-arming
  its watch), the known partitions elected, the znode deleted fenced by the epoch;
- the ElectLeaders request (``on_elect_leaders``): PREFERRED elections with the
  preferred-replica strategy, UNCLEAN ones with the offline strategy allowed to go
  outside the ISR; each partition's outcome is the request's answer.

Runs on the controller's event task only, except ``watch`` (kazoo's thread; it only
enqueues) and the scheduled check (the scheduler's; it only enqueues).
"""

from __future__ import annotations

import logging

from kazoo.protocol.states import EventType, WatchedEvent

from controller import events as ev
from controller.elect_leaders import ElectionOutcome, ElectionType, failed, triage
from controller.election_strategies import ElectionStrategy
from controller.parts import ControllerHandler, ControllerParts
from controller.preferred_leader_rules import partitions_to_rebalance, preferred_candidates
from controller.request_batch import ControllerRequestBatch
from controller.states import PartitionState
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from timer.scheduler import ScheduledTask, Scheduler

log = logging.getLogger(__name__)

#: Kafka runs the first imbalance check this long after a failover
FIRST_CHECK_DELAY_MS = 5_000


class PreferredLeaders(ControllerHandler):
    """The controller's preferred-leader elections, periodic and requested."""

    def __init__(
        self,
        parts: ControllerParts,
        scheduler: Scheduler | None,
        task_name: str,
        auto_rebalance: bool,
        check_interval_ms: int,
        imbalance_percentage: int,
    ) -> None:
        super().__init__(parts)
        #: runs the periodic check while we are controller (None: no periodic check)
        self.scheduler = scheduler
        self.task_name = task_name
        self.auto_rebalance = auto_rebalance
        self.check_interval_ms = check_interval_ms
        self.imbalance_percentage = imbalance_percentage
        self._task: ScheduledTask | None = None

    # -- the periodic check ----------------------------------------------------------------------

    def schedule(self) -> None:
        """Arm the periodic leader-imbalance check (this broker became controller)."""
        if self.scheduler is None or not self.auto_rebalance:
            return
        self._task = self.scheduler.schedule(
            self.task_name,
            lambda: self.events.put(ev.AutoPreferredLeaderElection()),
            delay_ms=min(FIRST_CHECK_DELAY_MS, self.check_interval_ms),
            period_ms=self.check_interval_ms,
        )

    def cancel(self) -> None:
        """Disarm it (this broker resigned)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def on_auto_rebalance(self) -> None:
        """The AutoPreferredLeaderElection event: the check is due."""
        await self._elect_preferred(partitions_to_rebalance(self.ctx, self.imbalance_percentage))

    # -- /admin/preferred_replica_election ---------------------------------------------------

    def watch(self, event: WatchedEvent) -> None:
        if event.type in (EventType.CREATED, EventType.CHANGED):
            self.events.put_threadsafe(ev.PreferredReplicaElection())

    async def on_preferred_replica_election(self) -> None:
        """The PreferredReplicaElection event (and a new controller's first look, which
        arms the watch)."""
        requested = await self.zk.get_preferred_replica_election(self.watch)
        if requested is None:
            return
        known = [tp for tp in requested if tp in self.ctx.leadership]
        await self._elect_preferred(preferred_candidates(self.ctx, known))
        await self.zk.delete_preferred_replica_election(self.ctx.epoch_zk_version)

    async def _elect_preferred(self, partitions: list[TopicPartition]) -> None:
        if not partitions:
            return
        log.info("controller: preferred leaders for %s", [str(tp) for tp in partitions])
        batch = ControllerRequestBatch()
        failures = await self.partition_sm.handle_state_changes(
            partitions, PartitionState.ONLINE, batch, ElectionStrategy.PREFERRED_REPLICA
        )
        for tp, why in failures.items():
            log.info("preferred leader election for %s failed: %s", tp, why)
        self.send(batch)

    # -- ElectLeaders ----------------------------------------------------------------------------

    async def on_elect_leaders(self, event: ev.ElectLeaders) -> None:
        """Kafka's replica leader election by an admin request: preferred elections with
        the preferred-replica strategy, unclean ones with the offline strategy allowed to
        go outside the ISR."""
        kind = ElectionType(event.election_type)
        requested = self.ctx.all_partitions() if event.partitions is None else event.partitions
        to_elect, outcomes = triage(self.ctx, requested, kind)
        if to_elect:
            log.info(
                "controller: %s leader election for %s", kind.name, [str(tp) for tp in to_elect]
            )
        batch = ControllerRequestBatch()
        if kind is ElectionType.PREFERRED:
            failures = await self.partition_sm.handle_state_changes(
                to_elect, PartitionState.ONLINE, batch, ElectionStrategy.PREFERRED_REPLICA
            )
        else:
            failures = await self.partition_sm.handle_state_changes(
                to_elect, PartitionState.ONLINE, batch, ElectionStrategy.OFFLINE, allow_unclean=True
            )
        self.send(batch)
        for tp in to_elect:
            st = self.ctx.leadership.get(tp)
            if tp in failures or st is None:
                outcomes[tp] = failed(kind, failures.get(tp, "no leadership known"))
            else:
                outcomes[tp] = ElectionOutcome(ErrorCode.NONE, leader=st.leader_and_isr.leader)
        event.reply.set_result(outcomes)
