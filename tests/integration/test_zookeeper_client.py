"""ZkFacade against a real ZooKeeper: payloads, ids, conditional and fenced writes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.protocol.states import KazooState

from protocol.values import TopicPartition
from tests.integration.zk_fixtures import expire_session
from tests.polling import wait_until
from zk import codec, paths
from zk.errors import (
    BrokerIdInUseError,
    ControllerMovedError,
    StateConflictError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    TopicNotFoundError,
    ZooKeeperUnavailableError,
)
from zk.facade import ZkFacade
from zk.model import BrokerInfo, EndPoint, LeaderAndIsr, TopicAssignment
from zk.session import ZkSession

NOW = 1_700_000_000_000


MakeZk = Callable[[], ZkFacade]


@pytest.fixture
def zk(zk_connect: str) -> Iterator[MakeZk]:
    """A factory of facades, each with a session of its own (4 s)."""
    clients: list[ZkFacade] = []

    def make() -> ZkFacade:
        c = ZkFacade(ZkSession.connect(zk_connect, session_timeout_s=4.0))
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.session.close()


def broker(bid: int) -> BrokerInfo:
    return BrokerInfo(bid, (EndPoint("127.0.0.1", 9092 + bid),))


async def test_persistent_paths_and_cluster_id(zk: MakeZk) -> None:
    a, b = zk(), zk()
    await a.ensure_persistent_paths()
    for path in paths.PERSISTENT_PATHS:
        assert a.kazoo.exists(path) is not None, path
    first = await a.get_or_create_cluster_id()
    assert await b.get_or_create_cluster_id() == first  # everyone uses the first id written
    data, _ = b.kazoo.get(paths.CLUSTER_ID)
    assert json.loads(data) == {"version": "1", "id": first}


async def test_broker_registration_payload_and_epoch(zk: MakeZk) -> None:
    a = zk()
    epoch = await a.register_broker(broker(1), NOW)
    data, stat = a.kazoo.get(paths.broker(1))
    assert stat.ephemeralOwner == a.session_id
    assert stat.czxid == epoch
    obj = json.loads(data)
    assert obj["version"] == 5 and obj["endpoints"] == ["PLAINTEXT://127.0.0.1:9093"]
    assert obj["host"] == "127.0.0.1" and obj["port"] == 9093 and obj["timestamp"] == str(NOW)
    assert await a.get_broker_ids() == [1]
    info = await a.get_broker(1)
    assert info is not None and info.epoch == epoch and info.endpoints == broker(1).endpoints
    # registering again in the same session is a no-op that returns the same epoch
    assert await a.register_broker(broker(1), NOW) == epoch


async def test_broker_id_owned_by_another_live_session_is_refused(zk: MakeZk) -> None:
    a, b = zk(), zk()
    await a.register_broker(broker(1), NOW)
    with pytest.raises(BrokerIdInUseError, match="broker id 1"):
        await b.register_broker(broker(1), NOW)


async def test_a_live_sessions_registration_is_refused_after_the_wait(
    zk: MakeZk, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = zk(), zk()
    await a.register_broker(broker(1), NOW)
    with pytest.raises(BrokerIdInUseError, match="broker id 1"):
        await b.register_broker(broker(1), NOW, stale_wait_s=0.5)
    assert "registered by session" in caplog.text
    assert await a.get_broker(1) is not None


async def test_registration_left_by_a_killed_process_is_waited_for(
    zk: MakeZk, zk_connect: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A broker killed with -9 leaves its ephemeral registration until ZooKeeper expires
    its session: the next process with the same id waits for that, then registers."""
    a = zk()
    await a.ensure_persistent_paths()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_REGISTRATION, zk_connect],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "registered"
        stale = a.kazoo.exists(paths.broker(7))
        assert stale is not None and stale.ephemeralOwner != a.session_id
    finally:
        holder.kill()  # no goodbye to ZooKeeper: the session lives on until it expires
        holder.wait(30)
    epoch = await a.register_broker(broker(7), NOW, stale_wait_s=30)
    _, stat = a.kazoo.get(paths.broker(7))
    assert stat.ephemeralOwner == a.session_id and stat.czxid == epoch > stale.czxid
    assert f"registered by session 0x{stale.ephemeralOwner:x}, not ours" in caplog.text


#: a process that registers broker 7 with a 4 s session, says so, and waits to be killed
_HOLD_REGISTRATION = """
import sys, threading
from zk import brokers
from zk.model import BrokerInfo, EndPoint
from zk.session import ZkSession
session = ZkSession.connect(sys.argv[1], session_timeout_s=4.0)
brokers.register_broker(session, BrokerInfo(7, (EndPoint("127.0.0.1", 9099),)), 0)
print("registered", flush=True)
threading.Event().wait()
"""
ROOT = Path(__file__).resolve().parents[2]


async def test_reregistration_after_session_expiry(zk: MakeZk, zk_connect: str) -> None:
    a = zk()
    first = await a.register_broker(broker(1), NOW)
    old_session = a.session_id
    expire_session(zk_connect, a.kazoo)
    wait_until(lambda: a.kazoo.state == KazooState.CONNECTED, 15, "a new session")
    second = await a.register_broker(broker(1), NOW)
    assert a.session_id != old_session
    assert second > first
    _, stat = a.kazoo.get(paths.broker(1))
    assert stat.ephemeralOwner == a.session_id


async def test_generated_broker_ids_are_unique_and_above_reserved(zk: MakeZk) -> None:
    a, b = zk(), zk()
    ids = [await a.generate_broker_id(), await b.generate_broker_id(), await a.generate_broker_id()]
    assert ids == [1001, 1002, 1003]


async def test_topic_creation_writes_config_and_assignment(zk: MakeZk) -> None:
    a = zk()
    await a.ensure_persistent_paths()
    tid = codec.new_topic_id()
    assignment = TopicAssignment("orders", tid, {0: (1, 2), 1: (2, 1)})
    await a.create_topic(assignment, {"retention.ms": "1000"})
    found = await a.get_topic("orders")
    assert found is not None and found[0] == assignment
    assert await a.get_topic_config("orders") == {"retention.ms": "1000"}
    assert await a.get_topics() == ["orders"]
    with pytest.raises(TopicExistsError):
        await a.create_topic(TopicAssignment("orders", codec.new_topic_id(), {0: (1,)}), {})
    assert await a.get_topic("orders") == found  # the id never changes


async def test_many_topics_are_written_and_read_in_one_call_each(zk: MakeZk) -> None:
    """create_topics answers per topic (one that exists is TopicExistsError, the others
    are written with their configs); get_topic_list and get_topic_configs read many."""
    a = zk()
    await a.ensure_persistent_paths()
    await a.create_topic(TopicAssignment("b", codec.new_topic_id(), {0: (1,)}), {})
    new = [
        (TopicAssignment(name, codec.new_topic_id(), {0: (1, 2)}), {"retention.ms": str(i)})
        for i, name in enumerate(["a", "b", "c"])
    ]
    written = await a.create_topics(new)
    assert written["a"] is None and written["c"] is None
    assert isinstance(written["b"], TopicExistsError)
    found = await a.get_topic_list(["a", "b", "c", "missing"])
    assert found["a"] is not None and not isinstance(found["a"], Exception)
    assert found["a"][0] == new[0][0] and found["missing"] is None
    assert found["b"] is not None and not isinstance(found["b"], Exception)
    assert found["b"][0] != new[1][0]  # the first writer's assignment stays
    assert await a.get_topic_configs(["a", "c", "missing"]) == {
        "a": {"retention.ms": "0"},
        "c": {"retention.ms": "2"},
        "missing": {},
    }


async def test_controller_election_multi_op(zk: MakeZk) -> None:
    a, b = zk(), zk()
    won = await a.try_become_controller(1, NOW)
    assert (won.won, won.controller_id, won.epoch) == (True, 1, 1)
    lost = await b.try_become_controller(2, NOW)
    assert (lost.won, lost.controller_id) == (False, 1)
    assert await a.get_controller_epoch() == (1, won.epoch_zk_version)
    _, stat = a.kazoo.get(paths.CONTROLLER)
    assert stat.ephemeralOwner == a.session_id
    await a.close()
    again = await b.try_become_controller(2, NOW)
    assert (again.won, again.epoch) == (True, 2)


async def test_partition_state_writes_are_conditional(zk: MakeZk) -> None:
    a = zk()
    election = await a.try_become_controller(1, NOW)
    v = election.epoch_zk_version
    tp = TopicPartition("t", 0)
    created = await a.create_partition_states({tp: LeaderAndIsr(1, 0, (1, 2))}, 1, v)
    assert created[tp] == LeaderAndIsr(1, 0, (1, 2), 0)
    again = await a.create_partition_states({tp: LeaderAndIsr(2, 0, (2,))}, 1, v)
    assert isinstance(again[tp], StateConflictError)
    updated = await a.update_partition_states({tp: LeaderAndIsr(2, 1, (2,), 0)}, 1, v)
    assert updated[tp] == LeaderAndIsr(2, 1, (2,), 1)
    stale = await a.update_partition_states({tp: LeaderAndIsr(1, 2, (1,), 0)}, 1, v)
    assert isinstance(stale[tp], StateConflictError)
    state = (await a.get_partition_states([tp]))[tp]
    assert state.leader_and_isr == LeaderAndIsr(2, 1, (2,), 1) and state.controller_epoch == 1


async def test_state_writes_go_per_topic_and_a_refused_topic_answers_per_partition(
    zk: MakeZk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topic's partitions are written in chunked multi-ops; one conflicting partition
    refuses its chunk, which is then written one partition at a time: the others still
    succeed and only that one answers StateConflictError."""
    monkeypatch.setattr("zk.partition_states.MULTI_PARTITIONS", 2)
    a = zk()
    election = await a.try_become_controller(1, NOW)
    v = election.epoch_zk_version
    tps = [TopicPartition("c", p) for p in range(5)]
    # partition 3 exists already: its chunk (2 and 3) is refused and retried one by one
    await a.create_partition_states({tps[3]: LeaderAndIsr(9, 0, (9,))}, 1, v)
    created = await a.create_partition_states({tp: LeaderAndIsr(1, 0, (1, 2)) for tp in tps}, 1, v)
    assert isinstance(created[tps[3]], StateConflictError)
    assert {tp: created[tp] for tp in tps if tp != tps[3]} == {
        tp: LeaderAndIsr(1, 0, (1, 2), 0) for tp in tps if tp != tps[3]
    }
    # partition 1 at a stale zkVersion: only it conflicts, the rest are rewritten
    updates = {tp: LeaderAndIsr(2, 1, (2,), 0) for tp in tps}
    updates[tps[1]] = LeaderAndIsr(2, 1, (2,), 7)
    updated = await a.update_partition_states(updates, 1, v)
    assert isinstance(updated[tps[1]], StateConflictError)
    assert {tp: updated[tp] for tp in tps if tp != tps[1]} == {
        tp: LeaderAndIsr(2, 1, (2,), 1) for tp in tps if tp != tps[1]
    }
    states = await a.get_partition_states(tps)
    assert states[tps[1]].leader_and_isr == LeaderAndIsr(1, 0, (1, 2), 0)
    assert states[tps[4]].leader_and_isr == LeaderAndIsr(2, 1, (2,), 1)


async def test_leader_isr_write_is_conditional_on_its_zk_version(zk: MakeZk) -> None:
    controller, leader = zk(), zk()
    election = await controller.try_become_controller(1, NOW)
    tp = TopicPartition("t", 0)
    await controller.create_partition_states(
        {tp: LeaderAndIsr(1, 3, (1, 2, 3))}, election.epoch, election.epoch_zk_version
    )
    # no controller epoch check: a leader is not the controller
    shrunk = await leader.update_leader_and_isr(tp, LeaderAndIsr(1, 3, (1, 2), 0), election.epoch)
    assert shrunk == LeaderAndIsr(1, 3, (1, 2), 1)
    state = (await controller.get_partition_states([tp]))[tp]
    assert state.leader_and_isr == shrunk and state.controller_epoch == election.epoch
    # the same write sent again (a retry after a lost connection) is recognised as done
    assert (
        await leader.update_leader_and_isr(tp, LeaderAndIsr(1, 3, (1, 2), 0), election.epoch)
        == shrunk
    )
    with pytest.raises(StateConflictError):  # another change at the old version
        await leader.update_leader_and_isr(tp, LeaderAndIsr(1, 3, (1,), 0), election.epoch)
    with pytest.raises(StateConflictError):  # no such partition
        await leader.update_leader_and_isr(
            TopicPartition("t", 9), LeaderAndIsr(1, 3, (1,), 0), election.epoch
        )


async def test_zombie_controller_writes_are_fenced(zk: MakeZk) -> None:
    zombie, successor = zk(), zk()
    old = await zombie.try_become_controller(1, NOW)
    tp = TopicPartition("t", 0)
    await zombie.create_partition_states(
        {tp: LeaderAndIsr(1, 0, (1,))}, old.epoch, old.epoch_zk_version
    )
    # the successor takes over as a new controller would once the zombie's session is gone
    successor.kazoo.delete(paths.CONTROLLER)
    new = await successor.try_become_controller(2, NOW)
    assert new.won and new.epoch == old.epoch + 1
    with pytest.raises(ControllerMovedError):
        await zombie.update_partition_states(
            {tp: LeaderAndIsr(1, 1, (1,), 0)}, old.epoch, old.epoch_zk_version
        )
    with pytest.raises(ControllerMovedError):
        await zombie.create_partition_states(
            {TopicPartition("t", 1): LeaderAndIsr(1, 0, (1,))}, old.epoch, old.epoch_zk_version
        )
    # nothing the zombie tried reached ZooKeeper
    states = await successor.get_partition_states([tp, TopicPartition("t", 1)])
    assert list(states) == [tp] and states[tp].leader_and_isr.zk_version == 0
    ok = await successor.update_partition_states(
        {tp: LeaderAndIsr(2, 1, (2,), 0)}, new.epoch, new.epoch_zk_version
    )
    assert ok[tp] == LeaderAndIsr(2, 1, (2,), 1)


async def test_a_deleted_topics_znodes_go_in_one_fenced_multi_op(zk: MakeZk) -> None:
    admin, controller, successor = zk(), zk(), zk()
    await admin.ensure_persistent_paths()
    await admin.create_topic(
        TopicAssignment("doomed", codec.new_topic_id(), {0: (1, 2), 1: (2, 1)}),
        {"retention.ms": "1000"},
    )
    await admin.create_topic(TopicAssignment("kept", codec.new_topic_id(), {0: (1,)}), {})
    old = await controller.try_become_controller(1, NOW)
    tps = {TopicPartition("doomed", p): LeaderAndIsr(1, 0, (1, 2)) for p in (0, 1)}
    await controller.create_partition_states(tps, old.epoch, old.epoch_zk_version)
    with pytest.raises(TopicNotFoundError):
        await admin.mark_topic_for_deletion("never")
    await admin.mark_topic_for_deletion("doomed")
    with pytest.raises(TopicAlreadyMarkedForDeletionError):
        await admin.mark_topic_for_deletion("doomed")
    assert await admin.get_topic_deletions() == ["doomed"]

    # a successor took over: the old controller's delete is refused whole
    successor.kazoo.delete(paths.CONTROLLER)
    new = await successor.try_become_controller(2, NOW)
    with pytest.raises(ControllerMovedError):
        await controller.delete_topic_znodes("doomed", old.epoch_zk_version)
    assert admin.kazoo.exists(paths.partition_state("doomed", 1)) is not None
    assert await admin.get_topic_config("doomed") == {"retention.ms": "1000"}

    await successor.delete_topic_znodes("doomed", new.epoch_zk_version)
    for path in (paths.topic("doomed"), paths.topic_config("doomed"), paths.delete_topic("doomed")):
        assert admin.kazoo.exists(path) is None, path
    assert await admin.get_topics() == ["kept"] and await admin.get_topic_deletions() == []
    await successor.delete_topic_znodes("doomed", new.epoch_zk_version)  # nothing left: no error

    admin.kazoo.create(paths.delete_topic("ghost"), b"")
    with pytest.raises(ControllerMovedError):
        await controller.delete_topic_deletions(["ghost"], old.epoch_zk_version)
    await successor.delete_topic_deletions(["ghost", "gone-meanwhile"], new.epoch_zk_version)
    assert await admin.get_topic_deletions() == []


async def test_isr_change_notifications(zk: MakeZk) -> None:
    a = zk()
    election = await a.try_become_controller(1, NOW)
    await a.propagate_isr_change([TopicPartition("t", 0)])
    await a.propagate_isr_change([TopicPartition("t", 1), TopicPartition("u", 0)])
    names = await a.get_isr_change_notifications()
    assert len(names) == 2 and all(n.startswith("isr_change_") for n in names)
    assert await a.read_isr_change_notification(names[1]) == [
        TopicPartition("t", 1),
        TopicPartition("u", 0),
    ]
    await a.delete_isr_change_notifications(names, election.epoch_zk_version)
    assert await a.get_isr_change_notifications() == []


async def test_producer_id_blocks_from_racing_clients_never_overlap(zk: MakeZk) -> None:
    clients = [zk(), zk()]
    blocks: list[list[codec.ProducerIdBlock]] = [[], []]

    async def allocate(i: int) -> None:
        for _ in range(15):
            blocks[i].append(await clients[i].allocate_producer_id_block(broker_id=i + 1))

    # each claim runs on a worker thread of the facade: the two clients race in ZooKeeper
    await asyncio.wait_for(asyncio.gather(allocate(0), allocate(1)), 60)
    everything = sorted(blocks[0] + blocks[1], key=lambda b: b.first)
    assert len(everything) == 30
    # contiguous, disjoint blocks of 1000 from 0: no id handed out twice, none skipped
    assert [(b.first, b.last) for b in everything] == [
        (i * 1000, i * 1000 + 999) for i in range(30)
    ]
    assert all(b.broker_id == 1 for b in blocks[0]) and all(b.broker_id == 2 for b in blocks[1])
    data, _ = clients[0].kazoo.get(paths.LATEST_PRODUCER_ID_BLOCK)
    assert json.loads(data) == {
        "version": 1,
        "broker": everything[-1].broker_id,
        "block_start": "29000",
        "block_end": "29999",
    }


async def test_zookeeper_down_gives_a_clear_error() -> None:
    from tools.zookeeper_server import free_port

    hosts = f"127.0.0.1:{free_port()}"
    with pytest.raises(ZooKeeperUnavailableError, match=f"ZooKeeper at {hosts}"):
        await ZkFacade.connect(hosts, session_timeout_s=4.0, connect_timeout_s=1.0)
