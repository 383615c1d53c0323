"""ReplicaStateMachine: moves replicas between the seven states of ``states``.

Every transition is validated against ``states.REPLICA_TRANSITIONS``. The side effects
of a valid transition are queued on the request batch (LeaderAndIsr to a replica coming
online, StopReplica to one going offline or being deleted); taking an offline replica out
of its partitions' ISRs is a conditional ZooKeeper write through the PartitionStateStore.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable

from controller.context import ControllerContext
from controller.model import PartitionReplica
from controller.request_batch import ControllerRequestBatch
from controller.states import REPLICA_TRANSITIONS, ReplicaState, check_transition
from controller.store import PartitionStateStore
from protocol.values import NO_LEADER
from protocol.values import TopicPartition as TP
from zk.errors import StateConflictError
from zk.model import LeaderAndIsr, LeaderIsrAndControllerEpoch

log = logging.getLogger(__name__)

R = ReplicaState


def without_replica(lai: LeaderAndIsr, replica: int) -> LeaderAndIsr:
    """The state after ``replica`` went offline (pure).

    It loses leadership (leader -1 if it led) and leaves the ISR, except that the last ISR
    member stays: when it returns, a clean election can still pick it.
    """
    leader = NO_LEADER if lai.leader == replica else lai.leader
    isr = lai.isr if len(lai.isr) == 1 else tuple(r for r in lai.isr if r != replica)
    return lai.new_leader_and_isr(leader, isr)


def stranded_replicas(ctx: ControllerContext) -> list[PartitionReplica]:
    """Replicas on brokers that are not live but still lead their partition or share its
    ISR with others (pure). A new controller finds these when a broker died before it
    took over, or during its election: no broker-change event will ever name them, so it
    takes them offline itself, as Kafka's replica state machine does at startup."""
    found = []
    for tp, st in sorted(ctx.leadership.items()):
        lai = st.leader_and_isr
        for r in ctx.partition_replicas(tp):
            if ctx.is_replica_online(r, include_shutting_down=True):
                continue
            # the last ISR member of a leaderless partition stays: nothing to change
            if r == lai.leader or (r in lai.isr and len(lai.isr) > 1):
                found.append(PartitionReplica(tp, r))
    return found


class ReplicaStateMachine:
    def __init__(self, ctx: ControllerContext, store: PartitionStateStore) -> None:
        self.ctx = ctx
        self.store = store

    def initialize_states(self) -> None:
        """After failover: replicas on live brokers are Online, the others Ineligible."""
        for tp in self.ctx.all_partitions():
            for r in self.ctx.partition_replicas(tp):
                pr = PartitionReplica(tp, r)
                if self.ctx.is_replica_online(r, include_shutting_down=True):
                    self.ctx.replica_states[pr] = R.ONLINE
                else:
                    # Kafka's choice: an offline replica cannot be deleted until it returns
                    self.ctx.replica_states[pr] = R.DELETION_INELIGIBLE

    async def handle_state_changes(
        self,
        replicas: Iterable[PartitionReplica],
        target: ReplicaState,
        batch: ControllerRequestBatch,
    ) -> list[PartitionReplica]:
        """Apply ``target`` to each replica whose transition is valid; return the refused."""
        refused: list[PartitionReplica] = []
        valid: list[PartitionReplica] = []
        for pr in replicas:
            if check_transition(REPLICA_TRANSITIONS, pr, self.ctx.replica_state(pr), target):
                valid.append(pr)
            else:
                refused.append(pr)
        if target is R.NEW:
            refused += self._to_new(valid, batch)
        elif target is R.ONLINE:
            self._to_online(valid, batch)
        elif target is R.OFFLINE:
            await self._to_offline(valid, batch)
        else:
            for pr in valid:
                if target is R.DELETION_STARTED:
                    batch.add_stop_replica(pr.replica, pr.tp, delete=True)
                self._set(pr, target)
        return refused

    def _set(self, pr: PartitionReplica, target: ReplicaState) -> None:
        log.debug("replica %s: %s -> %s", pr, self.ctx.replica_state(pr), target)
        if target is R.NON_EXISTENT:
            self.ctx.replica_states.pop(pr, None)
        else:
            self.ctx.replica_states[pr] = target

    def _to_new(
        self, replicas: list[PartitionReplica], batch: ControllerRequestBatch
    ) -> list[PartitionReplica]:
        refused = []
        for pr in replicas:
            st = self.ctx.leadership.get(pr.tp)
            if st is not None:
                if st.leader_and_isr.leader == pr.replica:
                    log.error("replica %s is the leader of its partition: not made New", pr)
                    refused.append(pr)
                    continue
                batch.add_leader_and_isr(
                    self.ctx, [pr.replica], pr.tp, st, self.ctx.partition_replicas(pr.tp), True
                )
            self._set(pr, R.NEW)
        return refused

    def _to_online(self, replicas: list[PartitionReplica], batch: ControllerRequestBatch) -> None:
        for pr in replicas:
            if self.ctx.replica_state(pr) is not R.NEW:
                st = self.ctx.leadership.get(pr.tp)
                if st is not None:
                    batch.add_leader_and_isr(
                        self.ctx, [pr.replica], pr.tp, st, self.ctx.partition_replicas(pr.tp), False
                    )
            self._set(pr, R.ONLINE)

    async def _to_offline(
        self, replicas: list[PartitionReplica], batch: ControllerRequestBatch
    ) -> None:
        by_broker: dict[int, list[TP]] = defaultdict(list)
        for pr in replicas:
            batch.add_stop_replica(pr.replica, pr.tp, delete=False)
            by_broker[pr.replica].append(pr.tp)
        for broker_id, tps in sorted(by_broker.items()):
            updated = await self._remove_from_isr(broker_id, tps)
            for tp, st in updated.items():
                if not self.ctx.is_topic_queued_for_deletion(tp.topic):
                    replicas_of_tp = self.ctx.partition_replicas(tp)
                    others = [
                        r
                        for r in replicas_of_tp
                        if r != broker_id and self.ctx.is_replica_online(r, True)
                    ]
                    batch.add_leader_and_isr(self.ctx, others, tp, st, replicas_of_tp, False)
            for tp in tps:
                self._set(PartitionReplica(tp, broker_id), R.OFFLINE)
            # partitions whose state did not change still need fresh metadata everywhere
            batch.add_update_metadata(self.ctx.live_or_shutting_down_ids(), set(tps))

    async def _remove_from_isr(
        self, broker_id: int, tps: list[TP], retries: int = 1, read_all: bool = False
    ) -> dict[TP, LeaderIsrAndControllerEpoch]:
        """Take ``broker_id`` out of the ISR (and leadership) of ``tps``, deciding on the
        partition state znodes as they are now, not only on the context: a leader writes
        its ISR changes to ZooKeeper itself and the controller learns of them only from
        the batched ``/isr_change_notification`` seconds later, so the context may not
        yet show a follower the leader has just let back in -- trusting it would leave a
        dead broker in that ISR until the leader's replica.lag.time.max.ms runs out, with
        every acks=all produce waiting on it.

        So the partitions whose context shows ``broker_id`` outside the ISR are read
        from ZooKeeper first. Those whose context shows it leading or in the ISR are
        written from the context without a read: each write is conditional on the
        zkVersion the context holds, so a state changed since (the leader's ISR write)
        comes back as a conflict, and conflicts are read (``read_all``) and decided
        again. A broker failure over thousands of partitions thus reads only what may be
        stale rather than every state (the read was a third of the controller's failover
        time)."""
        known = {tp: self.ctx.leadership.get(tp) for tp in tps}
        current = {
            tp: st
            for tp, st in known.items()
            if st is not None
            and not read_all
            and (broker_id == st.leader_and_isr.leader or broker_id in st.leader_and_isr.isr)
        }
        unsure = [tp for tp, st in known.items() if st is not None and tp not in current]
        if unsure:
            current.update(await self.store.read_states(unsure))
        planned: dict[TP, LeaderAndIsr] = {}
        for tp, st in current.items():
            self.ctx.put_leadership(tp, st)
            lai = st.leader_and_isr
            if broker_id not in lai.isr and lai.leader != broker_id:
                continue
            planned[tp] = without_replica(lai, broker_id)
        if not planned:
            return {}
        results = await self.store.update_states(planned, self.ctx.epoch, self.ctx.epoch_zk_version)
        done: dict[TP, LeaderIsrAndControllerEpoch] = {}
        conflicts = []
        for tp, result in results.items():
            if isinstance(result, StateConflictError):
                conflicts.append(tp)
            elif isinstance(result, Exception):
                log.error(
                    "could not remove replica %s from the ISR of %s: %s", broker_id, tp, result
                )
            else:
                done[tp] = LeaderIsrAndControllerEpoch(result, self.ctx.epoch)
                self.ctx.put_leadership(tp, done[tp])
        if conflicts and retries > 0:  # written meanwhile: decide again on what is there now
            done.update(
                await self._remove_from_isr(broker_id, conflicts, retries - 1, read_all=True)
            )
        return done
