"""KafkaController against a real ZooKeeper: topics and partition states, broker failures,
fencing, controlled shutdown, ISR notifications, preferred leaders, a new controller
carrying on (the nodes: tests.integration.controller_nodes; the election itself:
test_controller_election_zk.py)."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest
from kazoo.protocol.states import KazooState

import protocol
from broker.controlled_shutdown import controlled_shutdown_response, request_controlled_shutdown
from client.security import PLAINTEXT
from controller.controller import ControllerConfig, KafkaController
from controller.states import PartitionState
from controller.tcp_channel import ChannelConfig
from protocol import ApiKey, ErrorCode
from protocol.values import NO_LEADER, TopicPartition
from tests.integration.controller_nodes import (
    DEADLINE_S,
    Cluster,
    Node,
    admin,
    cluster,
    side_client,
    states,
)
from tests.integration.zk_fixtures import expire_session
from tests.polling import until
from timer.clock import SystemClock
from timer.scheduler import Scheduler
from zk import codec, paths
from zk.facade import ZkFacade
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    TopicAssignment,
)

__all__ = ["admin", "cluster"]  # fixtures, used by name


async def test_new_topic_partitions_go_online_with_leaders_written(
    cluster: Cluster,
    admin: ZkFacade,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    await cluster(2)
    await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be seen")
    a.channel.sent.clear()
    tid = codec.new_topic_id()
    assignment = TopicAssignment("orders", tid, {0: (1, 2), 1: (2, 1)})
    await admin.create_topic(assignment, {})
    t0, t1 = TopicPartition("orders", 0), TopicPartition("orders", 1)

    async def both_online() -> bool:
        return len(await states(admin, t0, t1)) == 2

    await until(both_online, what="partition states in ZooKeeper")
    st = await admin.get_partition_states([t0, t1])
    assert (st[t0].leader_and_isr.leader, st[t0].leader_and_isr.isr) == (1, (1, 2))
    assert (st[t1].leader_and_isr.leader, st[t1].leader_and_isr.isr) == (2, (2, 1))
    assert st[t0].controller_epoch == a.controller.epoch
    assert a.controller.ctx.partition_state(t0) is PartitionState.ONLINE
    lai = [r for r in a.channel.sent if r.api_key == ApiKey.LEADER_AND_ISR]
    assert {r.broker_id for r in lai} == {1, 2}
    for r in lai:
        (topic,) = r.body.topic_states
        assert topic.topic_id == tid
        assert all(p.is_new for p in topic.partition_states)


async def test_broker_failure_moves_leaders_or_takes_partitions_offline(
    cluster: Cluster,
    zk_connect: str,
    admin: ZkFacade,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    third = await side_client(zk_connect)  # broker 3: registered, no controller of its own
    await third.register_broker(BrokerInfo(3, (EndPoint("h", 3),)), 0)
    await until(lambda: 3 in a.controller.ctx.live_brokers, what="broker 3 to be seen")
    x0, x1 = TopicPartition("x", 0), TopicPartition("x", 1)
    topic = TopicAssignment("x", codec.new_topic_id(), {0: (3, 1), 1: (3,)})
    await admin.create_topic(topic, {})

    async def led_by(tp: TopicPartition, leader: int, isr: tuple[int, ...]) -> bool:
        st = (await states(admin, tp)).get(tp)
        if st is None:
            return False
        return (st.leader_and_isr.leader, st.leader_and_isr.isr) == (leader, isr)

    await until(lambda: led_by(x0, 3, (3, 1)), what="x-0 led by 3")
    await until(lambda: led_by(x1, 3, (3,)), what="x-1 led by 3")

    await third.close()  # broker 3's session ends: its znode goes

    await until(lambda: led_by(x0, 1, (1,)), what="x-0 to fail over to 1")
    # no live ISR member: offline, leader -1, the last ISR member kept for a clean return
    await until(lambda: led_by(x1, NO_LEADER, (3,)), what="x-1 to go offline")
    await until(lambda: a.controller.offline_partition_count == 1, what="one offline partition")
    assert a.controller.ctx.partition_state(x1) is PartitionState.OFFLINE

    back = await side_client(zk_connect)
    try:
        await back.register_broker(BrokerInfo(3, (EndPoint("h", 3),)), 0)
        await until(lambda: led_by(x1, 3, (3,)), what="x-1 back online under broker 3")
        await until(lambda: a.controller.offline_partition_count == 0, what="no offline partition")
        st = (await admin.get_partition_states([x1]))[x1]
        assert st.leader_and_isr.leader_epoch == 2  # 0 created, 1 offline, 2 back
    finally:
        await back.close()


async def test_zombie_controller_is_fenced_and_resigns(
    cluster: Cluster,
    zk_connect: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    assert a.controller.epoch == 1
    other = await side_client(zk_connect)
    try:
        # Another controller's election bumped the epoch while broker 1 was not looking:
        # broker 1 still believes it is controller with epoch 1, a zombie.
        await asyncio.to_thread(
            other.kazoo.set, paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(5)
        )
        tp = TopicPartition("z", 0)
        with caplog.at_level(logging.WARNING, logger="controller.controller"):
            await other.create_topic(TopicAssignment("z", codec.new_topic_id(), {0: (1,)}), {})
            # its write of z-0's state is refused; it resigns, and the vote that follows
            # gives the job (back to broker 1, the only broker) with a fresh epoch
            await until(lambda: a.controller.epoch == 6, what="a fresh election after fencing")
        assert "fenced as controller" in caplog.text

        async def written() -> bool:
            return tp in await states(other, tp)

        await until(written, what="z-0's state written by the new epoch")
        st = (await other.get_partition_states([tp]))[tp]
        # written exactly once, by the new epoch; nothing from the zombie epoch survived
        assert (st.controller_epoch, st.leader_and_isr.zk_version) == (6, 0)
        # versions: created 0, first election 1, the bump 2, the new election 3
        assert await other.get_controller_epoch() == (6, 3)
    finally:
        await other.close()


async def test_controlled_shutdown_moves_leadership_away(
    cluster: Cluster,
    admin: ZkFacade,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    b = await cluster(2)
    await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be seen")
    topic = TopicAssignment("c", codec.new_topic_id(), {0: (2, 1), 1: (1, 2), 2: (2,)})
    await admin.create_topic(topic, {})
    c0, c1, c2 = (TopicPartition("c", p) for p in range(3))

    async def all_online() -> bool:
        return len(await states(admin, c0, c1, c2)) == 3

    await until(all_online, what="c's partitions online")
    await until(
        lambda: a.controller.ctx.partition_state(c2) is PartitionState.ONLINE,
        what="the controller to record them",
    )

    stale = await a.controller.controlled_shutdown(2, b.controller.broker_epoch - 1)
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert (await b.controller.controlled_shutdown(2, -1)).error_code == ErrorCode.NOT_CONTROLLER

    result = await asyncio.wait_for(
        a.controller.controlled_shutdown(2, b.controller.broker_epoch), DEADLINE_S
    )
    assert (result.error_code, result.remaining) == (ErrorCode.NONE, [])
    st = await admin.get_partition_states([c0, c1, c2])
    assert (st[c0].leader_and_isr.leader, st[c0].leader_and_isr.isr) == (1, (1,))
    assert (st[c1].leader_and_isr.leader, st[c1].leader_and_isr.isr) == (1, (1,))
    # a single-replica partition has nowhere to go: it stays with broker 2
    assert st[c2].leader_and_isr.leader == 2


async def test_added_partitions_go_online(
    cluster: Cluster,
    admin: ZkFacade,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    topic = TopicAssignment("grow", codec.new_topic_id(), {0: (1,)})
    await admin.create_topic(topic, {})
    g0, g1, g2 = (TopicPartition("grow", p) for p in range(3))

    async def online(*tps: TopicPartition) -> bool:
        return len(await states(admin, *tps)) == len(tps)

    await until(lambda: online(g0), what="grow-0 online")
    found = await admin.get_topic("grow")
    assert found is not None
    grown = TopicAssignment("grow", topic.topic_id, {0: (1,), 1: (1,), 2: (1,)})
    await admin.set_topic_assignment(grown, found[1])
    await until(lambda: online(g0, g1, g2), what="the added partitions online")
    assert a.controller.ctx.partition_replicas(g2) == (1,)


async def test_isr_change_notifications_reach_every_broker(
    cluster: Cluster,
    admin: ZkFacade,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    await cluster(2)
    await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be seen")
    tp = TopicPartition("i", 0)
    topic = TopicAssignment("i", codec.new_topic_id(), {0: (1, 2)})
    await admin.create_topic(topic, {})

    async def written() -> bool:
        return tp in await states(admin, tp)

    await until(written, what="i-0 online")
    # the leader (broker 1) shrinks its ISR itself and tells the controller
    st = (await states(admin, tp))[tp]
    shrunk = LeaderAndIsr(1, st.leader_and_isr.leader_epoch, (1,), st.leader_and_isr.zk_version)
    raw = codec.encode_partition_state(shrunk, st.controller_epoch)
    await asyncio.to_thread(admin.kazoo.set, paths.partition_state("i", 0), raw, shrunk.zk_version)
    a.channel.sent.clear()
    await admin.propagate_isr_change([tp])

    await until(lambda: a.controller.ctx.leadership[tp].leader_and_isr.isr == (1,), what="new ISR")
    await until(
        lambda: (
            {r.broker_id for r in a.channel.sent if r.api_key == ApiKey.UPDATE_METADATA} == {1, 2}
        ),
        what="UpdateMetadata to both brokers",
    )
    um = next(r for r in a.channel.sent if r.api_key == ApiKey.UPDATE_METADATA)
    assert um.body.topic_states[0].partition_states[0].isr == [1]

    async def consumed() -> bool:
        return await admin.get_isr_change_notifications() == []

    await until(consumed, what="the notification to be deleted")


async def test_controlled_shutdown_request_over_tcp(
    cluster: Cluster,
    admin: ZkFacade,
) -> None:
    """The broker-side helper finds the controller in ZooKeeper and asks it over TCP."""
    holder: list[KafkaController] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # a stand-in for the broker's control-plane handler
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        request = protocol.decode_request(await reader.readexactly(size))
        result = await holder[0].controlled_shutdown(
            request.body.broker_id, request.body.broker_epoch
        )
        frame = protocol.encode_response(
            protocol.make_response(request.header, controlled_shutdown_response(result))
        )
        writer.write(struct.pack(">i", len(frame)) + frame)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        a = await cluster(1, port=server.sockets[0].getsockname()[1])
        holder.append(a.controller)
        await until(lambda: a.controller.is_active, what="broker 1 to be controller")
        b = await cluster(2)
        await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be seen")
        tp = TopicPartition("s", 0)
        topic = TopicAssignment("s", codec.new_topic_id(), {0: (2, 1)})
        await admin.create_topic(topic, {})

        async def led_by_2() -> bool:
            st = (await states(admin, tp)).get(tp)
            return st is not None and st.leader_and_isr.leader == 2

        await until(led_by_2, what="s-0 led by broker 2")
        remaining = await asyncio.wait_for(
            request_controlled_shutdown(
                b.zk, 2, b.controller.broker_epoch, config=ChannelConfig(PLAINTEXT)
            ),
            DEADLINE_S,
        )
        assert remaining == []
        st = (await states(admin, tp))[tp]
        assert (st.leader_and_isr.leader, st.leader_and_isr.isr) == (1, (1,))
    finally:
        server.close()
        await server.wait_closed()


async def test_a_corrupt_topic_znode_is_skipped_not_fatal(
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
    admin: ZkFacade,
) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    with caplog.at_level(logging.ERROR, logger="controller.controller"):
        await asyncio.to_thread(admin.kazoo.create, paths.topic("bad"), b"{not json")
        good = TopicAssignment("good", codec.new_topic_id(), {0: (1,)})
        await admin.create_topic(good, {})
        tp = TopicPartition("good", 0)

        async def online() -> bool:
            return tp in await states(admin, tp)

        await until(online, what="the good topic online")
    assert "ignoring topic bad" in caplog.text
    assert "bad" not in a.controller.ctx.all_topics()


class CuttableProxy:
    """A TCP proxy to ZooKeeper whose connections can be cut and refused for a while,
    as a network blip would: the client sees SUSPENDED, its session stays alive."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.refusing = False
        self.writers: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.writers |= {writer, up_writer}
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    def cut(self) -> None:
        self.refusing = True
        for w in self.writers:
            w.close()
        self.writers.clear()

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def test_a_suspended_connection_stops_nothing_and_watches_come_back(
    cluster: Cluster,
    zk_connect: str,
    admin: ZkFacade,
) -> None:
    host_port, chroot = zk_connect.split("/", 1)
    proxy = CuttableProxy(int(host_port.rsplit(":", 1)[1]))
    proxy_port = await proxy.start()
    try:
        a = await cluster(1, connect=f"127.0.0.1:{proxy_port}/{chroot}", session_s=8.0)
        # cut only after the failover's ZooKeeper reads: one failing half-way resigns
        await until(lambda: a.controller.is_settled, what="broker 1 to be controller")
        session = a.zk.session_id
        proxy.cut()
        await until(lambda: a.zk.kazoo.state == KazooState.SUSPENDED, what="SUSPENDED")
        # created while broker 1 cannot hear: kazoo dropped its watches meanwhile
        topic = TopicAssignment("blip", codec.new_topic_id(), {0: (1,)})
        await admin.create_topic(topic, {})
        assert a.controller.is_active  # SUSPENDED alone resigns nothing
        proxy.refusing = False
        await until(lambda: a.zk.kazoo.state == KazooState.CONNECTED, what="reconnected")
        tp = TopicPartition("blip", 0)

        async def online() -> bool:
            return tp in await states(admin, tp)

        await until(online, what="the topic created during the blip online")
        assert a.zk.session_id == session  # the same session throughout
        assert a.controller.is_active and a.controller.epoch == 1
    finally:
        await proxy.close()


async def test_graceful_shutdown_hands_over_at_once(cluster: Cluster) -> None:
    a = await cluster(1)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    b = await cluster(2)
    await until(lambda: b.controller.active_controller_id == 1, what="broker 2 to follow")
    await asyncio.wait_for(a.controller.shutdown(), DEADLINE_S)
    assert not a.controller.is_active
    # /controller was deleted, not left to expire with the session
    await until(lambda: b.controller.is_active, what="broker 2 to take over", timeout=3.0)
    assert b.controller.epoch == 2


async def move_leader_away_and_back_into_isr(
    a: Node, b: Node, cluster: Cluster, admin: ZkFacade, tp: TopicPartition
) -> None:
    """Leave ``tp`` led by broker 1 with broker 2 (its preferred replica) restarted and
    back in the ISR, as after a controlled shutdown, a restart and a catch-up."""

    async def led_by(leader: int) -> bool:
        st = (await states(admin, tp)).get(tp)
        return st is not None and st.leader_and_isr.leader == leader

    await until(lambda: led_by(2), what=f"{tp} led by its preferred replica 2")
    result = await a.controller.controlled_shutdown(2, b.controller.broker_epoch)
    assert result.error_code == ErrorCode.NONE
    await until(lambda: led_by(1), what=f"{tp} led by 1")
    await b.controller.shutdown()
    await b.zk.close()
    await until(lambda: 2 not in a.controller.ctx.live_brokers, what="broker 2 to be gone")
    await cluster(2)
    await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be back")
    # broker 2 caught up again: the leader writes the ISR back and notifies the controller
    st = (await states(admin, tp))[tp]
    lai = st.leader_and_isr
    grown = LeaderAndIsr(lai.leader, lai.leader_epoch, (1, 2), lai.zk_version)
    raw = codec.encode_partition_state(grown, st.controller_epoch)
    await asyncio.to_thread(
        admin.kazoo.set, paths.partition_state(tp.topic, 0), raw, lai.zk_version
    )
    await admin.propagate_isr_change([tp])


async def test_auto_leader_rebalance_moves_leadership_back(
    cluster: Cluster,
    admin: ZkFacade,
) -> None:
    scheduler = Scheduler(SystemClock(), threads=1)
    scheduler.start()
    try:
        config = ControllerConfig(leader_imbalance_check_interval_ms=200)
        a = await cluster(1, config=config, scheduler=scheduler)
        await until(lambda: a.controller.is_active, what="broker 1 to be controller")
        b = await cluster(2)
        await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be seen")
        tp = TopicPartition("pref", 0)
        topic = TopicAssignment("pref", codec.new_topic_id(), {0: (2, 1)})
        await admin.create_topic(topic, {})
        await move_leader_away_and_back_into_isr(a, b, cluster, admin, tp)

        async def back_to_2() -> bool:
            st = (await states(admin, tp)).get(tp)
            return st is not None and st.leader_and_isr.leader == 2

        await until(back_to_2, what="the periodic check to move leadership back to 2")
    finally:
        await scheduler.shutdown()


async def test_requested_preferred_replica_election(
    cluster: Cluster,
    admin: ZkFacade,
) -> None:
    config = ControllerConfig(auto_leader_rebalance_enable=False)
    a = await cluster(1, config=config)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    b = await cluster(2)
    await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be seen")
    tp = TopicPartition("ask", 0)
    topic = TopicAssignment("ask", codec.new_topic_id(), {0: (2, 1)})
    await admin.create_topic(topic, {})
    await move_leader_away_and_back_into_isr(a, b, cluster, admin, tp)
    await until(lambda: a.controller.ctx.leadership[tp].leader_and_isr.isr == (1, 2), what="ISR")
    await admin.request_preferred_replica_election([tp])

    async def done() -> bool:
        st = (await states(admin, tp)).get(tp)
        gone = await admin.get_preferred_replica_election() is None
        return gone and st is not None and st.leader_and_isr.leader == 2

    await until(done, what="leader 2 and the request consumed")


async def test_a_new_controller_carries_on_what_was_pending(
    cluster: Cluster, admin: ZkFacade, zk_connect: str
) -> None:
    """ISR change notifications and a preferred-election request written while no
    controller works are handled by the next one at failover, and partitions left
    without a leader are elected."""
    config = ControllerConfig(auto_leader_rebalance_enable=False)
    a = await cluster(1, config=config)
    await until(lambda: a.controller.is_active, what="broker 1 to be controller")
    b = await cluster(2, config=config)
    await until(lambda: 2 in a.controller.ctx.live_brokers, what="broker 2 to be seen")
    isr_tp, led_by_1 = TopicPartition("fo", 0), TopicPartition("fo", 1)
    topic = TopicAssignment("fo", codec.new_topic_id(), {0: (2, 1), 1: (1, 2)})
    await admin.create_topic(topic, {})

    async def online() -> bool:
        return len(await states(admin, isr_tp, led_by_1)) == 2

    await until(online, what="fo online")
    # the controller stops working but keeps /controller (a hung process)
    await a.controller.events.shutdown(timeout_s=10)
    # meanwhile: the leader of fo-0 shrinks its ISR and says so; an operator asks for a
    # preferred election
    st = (await states(admin, isr_tp))[isr_tp].leader_and_isr
    shrunk = LeaderAndIsr(2, st.leader_epoch, (2,), st.zk_version)
    raw = codec.encode_partition_state(shrunk, a.controller.epoch)
    await asyncio.to_thread(admin.kazoo.set, paths.partition_state("fo", 0), raw, st.zk_version)
    await admin.propagate_isr_change([isr_tp])
    await admin.request_preferred_replica_election([isr_tp])
    # its session ends: broker 2 takes over, and broker 1's partitions lose their leader
    await asyncio.to_thread(expire_session, zk_connect, a.zk.kazoo)
    await until(lambda: b.controller.is_active, what="broker 2 to take over")

    async def pending_handled() -> bool:
        notes = await admin.get_isr_change_notifications()
        asked = await admin.get_preferred_replica_election()
        return notes == [] and asked is None

    await until(pending_handled, what="the pending znodes consumed")
    assert b.controller.ctx.leadership[isr_tp].leader_and_isr.isr == (2,)

    async def elected() -> bool:
        st = (await states(admin, led_by_1)).get(led_by_1)
        return st is not None and st.leader_and_isr.leader == 2

    await until(elected, what="fo-1 elected at failover")
    assert b.controller.offline_partition_count == 0
