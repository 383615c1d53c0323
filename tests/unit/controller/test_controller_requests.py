"""Request batches and the LeaderAndIsr / UpdateMetadata / StopReplica bodies they build."""

from __future__ import annotations

import uuid

import protocol
from controller.context import ControllerContext
from controller.request_batch import ControllerRequestBatch
from controller.request_bodies import build_update_metadata
from protocol import ApiKey
from protocol.values import TopicPartition
from tests.fakes.controller import RecordingChannelManager
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)

TID = uuid.UUID("11111111-2222-3333-4444-555555555555")
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def make_ctx() -> ControllerContext:
    ctx = ControllerContext()
    ctx.epoch = 3
    ctx.add_live_brokers(
        [
            BrokerInfo(1, (EndPoint("127.0.0.1", 9092),), rack="r1", epoch=41),
            BrokerInfo(2, (EndPoint("127.0.0.1", 9093),), epoch=42),
        ]
    )
    ctx.set_topic(TopicAssignment("t", TID, {0: (1, 2), 1: (2, 3)}))
    ctx.put_leadership(T0, LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1, 2), 6), 3))
    ctx.put_leadership(T1, LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 0, (2,), 1), 2))
    return ctx


def round_trip(req: protocol.Request) -> protocol.Request:
    return protocol.decode_request(protocol.encode_request(req))


def sent_batch(ctx: ControllerContext) -> RecordingChannelManager:
    channel = RecordingChannelManager()
    for b in ctx.live_brokers.values():
        channel.add_broker(b)
    batch = ControllerRequestBatch()
    batch.add_leader_and_isr(ctx, [1, 2], T0, ctx.leadership[T0], (1, 2), is_new=True)
    batch.add_leader_and_isr(ctx, [2, 3], T1, ctx.leadership[T1], (2, 3), is_new=False)
    batch.add_stop_replica(2, T1, delete=False)
    batch.send(ctx, channel, controller_id=1)
    assert batch.is_empty()
    return channel


def test_batch_sends_one_request_per_broker_and_api_to_live_brokers_only() -> None:
    channel = sent_batch(make_ctx())
    sent = [(r.broker_id, r.api_key, r.api_version) for r in channel.sent]
    assert sent == [
        (1, ApiKey.LEADER_AND_ISR, 5),
        (2, ApiKey.LEADER_AND_ISR, 5),
        (1, ApiKey.UPDATE_METADATA, 7),
        (2, ApiKey.UPDATE_METADATA, 7),
        (2, ApiKey.STOP_REPLICA, 3),
    ]  # broker 3 is not live: nothing for it


def test_leader_and_isr_body_carries_topic_id_and_encodes() -> None:
    ctx = make_ctx()
    channel = sent_batch(ctx)
    lai = next(r for r in channel.sent if r.broker_id == 2 and r.api_key == ApiKey.LEADER_AND_ISR)
    req = round_trip(protocol.make_request(ApiKey.LEADER_AND_ISR, 5, 7, "controller-1", lai.body))
    body = req.body
    assert (body.controller_id, body.controller_epoch, body.broker_epoch) == (1, 3, 42)
    (topic,) = body.topic_states
    assert topic.topic_name == "t" and topic.topic_id == TID
    states = {p.partition_index: p for p in topic.partition_states}
    assert (states[0].leader, states[0].leader_epoch, states[0].isr) == (1, 4, [1, 2])
    assert (states[0].partition_epoch, states[0].replicas, states[0].is_new) == (6, [1, 2], True)
    assert (states[1].leader, states[1].controller_epoch, states[1].is_new) == (2, 2, False)
    assert sorted((ll.broker_id, ll.port) for ll in body.live_leaders) == [(1, 9092), (2, 9093)]


def test_update_metadata_lists_brokers_and_offline_replicas() -> None:
    ctx = make_ctx()
    _, version, body = build_update_metadata(ctx, 1, [T0, T1])
    req = round_trip(protocol.make_request(ApiKey.UPDATE_METADATA, version, 1, None, body))
    b = req.body
    assert [(x.id, x.rack, [(e.host, e.port, e.listener, e.security_protocol)
             for e in x.endpoints]) for x in b.live_brokers] == [
        (1, "r1", [("127.0.0.1", 9092, "PLAINTEXT", 0)]),
        (2, None, [("127.0.0.1", 9093, "PLAINTEXT", 0)]),
    ]  # fmt: skip
    (topic,) = b.topic_states
    assert topic.topic_id == TID
    p1 = next(p for p in topic.partition_states if p.partition_index == 1)
    assert (p1.leader, p1.zk_version, p1.replicas, p1.offline_replicas) == (2, 1, [2, 3], [3])


def test_update_metadata_is_addressed_to_each_broker_epoch() -> None:
    channel = sent_batch(make_ctx())
    epochs = {
        r.broker_id: r.body.broker_epoch
        for r in channel.sent
        if r.api_key == ApiKey.UPDATE_METADATA
    }
    assert epochs == {1: 41, 2: 42}


def test_stop_replica_body() -> None:
    ctx = make_ctx()
    channel = sent_batch(ctx)
    (stop,) = channel.take(ApiKey.STOP_REPLICA)
    req = round_trip(protocol.make_request(ApiKey.STOP_REPLICA, 3, 2, None, stop.body))
    (topic,) = req.body.topic_states
    (p,) = topic.partition_states
    assert (topic.topic_name, p.partition_index, p.leader_epoch, p.delete_partition) == (
        "t",
        1,
        0,
        False,
    )
    ctx.topics_to_delete.add("t")
    batch = ControllerRequestBatch()
    batch.add_stop_replica(2, T1, delete=True)
    batch.send(ctx, channel, 1)
    (stop,) = channel.take(ApiKey.STOP_REPLICA)
    p = stop.body.topic_states[0].partition_states[0]
    assert (p.leader_epoch, p.delete_partition) == (-2, True)


def test_leader_and_isr_keeps_is_new_within_one_batch() -> None:
    ctx = make_ctx()
    batch = ControllerRequestBatch()
    batch.add_leader_and_isr(ctx, [1], T0, ctx.leadership[T0], (1, 2), is_new=True)
    batch.add_leader_and_isr(ctx, [1], T0, ctx.leadership[T0], (1, 2), is_new=False)
    assert batch.leader_and_isr[1][T0].is_new
    assert batch.update_metadata_brokers == {1, 2}
