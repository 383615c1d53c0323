"""The transaction coordinator when the leader epoch of a ``__transaction_state``
partition it leads is bumped while it stays the leader (the controller takes a dead
follower out of the ISR that way): what was written under the old epoch is read back
under the new one, and a prepared transaction completes, whether its completion was
being written at the bump (that write is refused, NOT_COORDINATOR: the partition is
reloaded and its markers resumed) or its markers were still owed.

On the real ReplicaManager and logs of tests.unit.broker.test_txn_coordinator, with its
fake marker sender; a follower in the ISR that never fetches holds an acks=all write."""

from __future__ import annotations

import asyncio

from broker.txn.states import TxnState
from broker.txn.topic import TRANSACTION_TOPIC
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from tests.unit.broker.broker_helpers import partition_state
from tests.unit.broker.test_txn_coordinator import (  # noqa: F401 (replicas, setup: fixtures)
    DEADLINE_S,
    T0,
    TX,
    Setup,
    begin,
    replicas,
    setup,
)

STATE_0 = TopicPartition(TRANSACTION_TOPIC, 0)


async def lead_with(s: Setup, epoch: int, isr: tuple[int, ...]) -> None:
    """Broker 0 leads partition 0 at ``epoch`` with ``isr`` (followers never fetch)."""
    state = partition_state(STATE_0, epoch=epoch, isr=isr, replicas=(0, 1))
    await s.replicas.rm.become_leader_or_follower(1, 1, [state], {})
    await s.store.wait_loaded(0)


async def test_a_completion_written_across_a_bump_is_read_back(setup: Setup) -> None:  # noqa: F811
    s = setup
    s.sender.unreachable = {1, 2}  # the markers are owed until the follower is in
    pid, epoch = await begin(s)
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    await lead_with(s, 1, (0, 1))  # a follower joins: writes wait for it now
    assert s.store.coordinator_epoch(0) == 1 and s.state() is TxnState.PREPARE_COMMIT
    s.sender.unreachable = set()
    # every marker is written; the completion waits for the follower
    await s.until(lambda: s.coordinator.markers.queued() == 0 and s.coordinator.completed == 0)
    assert s.state() is TxnState.PREPARE_COMMIT
    await lead_with(s, 2, (0,))  # the follower died: out of the ISR, under a new epoch
    await s.until(lambda: s.state() is TxnState.COMPLETE_COMMIT)
    assert s.store.coordinator_epoch(0) == 2
    # the producer goes on
    added = await s.coordinator.add_partitions(TX, pid, epoch, [T0])
    assert added == {T0: ErrorCode.NONE}


async def test_a_held_add_is_written_with_the_completion_resumed_after_a_bump(
    setup: Setup,  # noqa: F811
) -> None:
    s = setup
    s.sender.unreachable = {1, 2}
    pid, epoch = await begin(s)
    assert await s.coordinator.end_txn(TX, pid, epoch, True) == ErrorCode.NONE
    add = asyncio.ensure_future(s.coordinator.add_partitions(TX, pid, epoch, [T0]))
    await s.until(lambda: s.coordinator.markers.retries > 0)
    assert not add.done()
    await lead_with(s, 1, (0,))  # reloaded: the markers resume under epoch 1
    s.sender.sent.clear()
    s.sender.unreachable = set()
    assert await asyncio.wait_for(add, DEADLINE_S) == {T0: ErrorCode.NONE}
    meta = s.store.get(TX)
    assert meta is not None and meta.state is TxnState.ONGOING and meta.partitions == {T0}
    assert s.logged()[-1] == [TxnState.COMPLETE_COMMIT, TxnState.ONGOING]
    resent = [m for _, req in s.sender.sent for m in req.markers]
    assert resent and {m.coordinator_epoch for m in resent} == {1}
