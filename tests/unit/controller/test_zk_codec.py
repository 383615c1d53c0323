"""ZooKeeper payloads: Kafka's JSON shapes, round trips, and clear errors on bad data."""

from __future__ import annotations

import json
import uuid

import pytest

from protocol.uuids import uuid_to_base64
from protocol.values import TopicPartition
from zk import codec, paths
from zk.codec import ProducerIdBlock, ZkDataError
from zk.model import (
    BrokerInfo,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
)


def test_broker_registration_has_kafkas_fields() -> None:
    info = BrokerInfo(
        3,
        (EndPoint("127.0.0.1", 9092), EndPoint("127.0.0.1", 9192, "CONTROLLER_PLANE")),
        rack="r1",
    )
    data = codec.encode_broker(info, 1700000000000)
    obj = json.loads(data)
    assert obj == {
        "features": {},
        "listener_security_protocol_map": {
            "PLAINTEXT": "PLAINTEXT",
            "CONTROLLER_PLANE": "PLAINTEXT",
        },
        "endpoints": ["PLAINTEXT://127.0.0.1:9092", "CONTROLLER_PLANE://127.0.0.1:9192"],
        "jmx_port": -1,
        "port": 9092,
        "host": "127.0.0.1",
        "version": 5,
        "timestamp": "1700000000000",
        "rack": "r1",
    }
    back = codec.decode_broker(3, data, czxid=77)
    assert back.endpoints == info.endpoints and back.rack == "r1" and back.epoch == 77


def test_broker_without_rack_omits_it_and_reads_kafka_payload() -> None:
    kafka = (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://kafka-1:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"kafka-1","version":5,"timestamp":"1690000000000"}'
    )
    info = codec.decode_broker(1, kafka)
    assert info.endpoints == (EndPoint("kafka-1", 9092),) and info.rack is None
    assert "rack" not in json.loads(codec.encode_broker(info, 1))


def test_topic_znode_version_3_with_base64_topic_id() -> None:
    tid = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
    data = codec.encode_topic(TopicAssignment("t", tid, {1: (2, 3), 0: (1, 2)}))
    obj = json.loads(data)
    assert obj == {
        "version": 3,
        "topic_id": "a6e4EJ2tEdGAtADAT9QwyA",
        "partitions": {"0": [1, 2], "1": [2, 3]},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    back = codec.decode_topic("t", data)
    assert back.topic_id == tid and back.partitions == {0: (1, 2), 1: (2, 3)}


def test_topic_without_id_is_refused() -> None:
    with pytest.raises(ZkDataError, match="no topic_id"):
        codec.decode_topic("old", b'{"version":1,"partitions":{"0":[1]}}')


def test_partition_state_round_trip() -> None:
    lai = LeaderAndIsr(2, 5, (2, 1), 9)
    data = codec.encode_partition_state(lai, 4)
    assert json.loads(data) == {
        "controller_epoch": 4,
        "leader": 2,
        "version": 1,
        "leader_epoch": 5,
        "isr": [2, 1],
    }
    tp = TopicPartition("t", 0)
    assert codec.decode_partition_state(tp, data, 9) == LeaderIsrAndControllerEpoch(lai, 4)


@pytest.mark.parametrize(
    "bad",
    [
        b"",
        b"nope",
        b"[]",
        b'{"leader":1}',
        b'{"leader":1,"leader_epoch":0,"controller_epoch":1,"isr":"x"}',
    ],
)
def test_bad_partition_state_names_itself(bad: bytes) -> None:
    with pytest.raises(ZkDataError, match="state of t-0"):
        codec.decode_partition_state(TopicPartition("t", 0), bad, 0)


def test_controller_and_epoch() -> None:
    data = codec.encode_controller(2, 123)
    assert json.loads(data) == {"version": 1, "brokerid": 2, "timestamp": "123"}
    assert codec.decode_controller(data) == 2
    assert codec.decode_controller_epoch(codec.encode_controller_epoch(17)) == 17
    with pytest.raises(ZkDataError):
        codec.decode_controller_epoch(b"x")


def test_cluster_id() -> None:
    cid = codec.new_cluster_id()
    assert len(cid) == 22
    data = codec.encode_cluster_id(cid)
    assert json.loads(data) == {"version": "1", "id": cid}
    assert codec.decode_cluster_id(data) == cid


def test_producer_id_blocks_follow_each_other() -> None:
    first = codec.next_producer_id_block(None, 1)
    assert (first.first, first.last, first.size) == (0, 999, 1000)
    second = codec.next_producer_id_block(first, 2)
    assert (second.broker_id, second.first, second.last) == (2, 1000, 1999)
    data = codec.encode_producer_id_block(second)
    assert json.loads(data) == {
        "version": 1,
        "broker": 2,
        "block_start": "1000",
        "block_end": "1999",
    }
    assert codec.decode_producer_id_block(data) == second
    with pytest.raises(ZkDataError, match="exhausted"):
        codec.next_producer_id_block(ProducerIdBlock(1, 0, 2**63 - 10), 1)


def test_isr_change_and_configs() -> None:
    tps = [TopicPartition("a", 0), TopicPartition("b", 3)]
    data = codec.encode_isr_change(tps)
    assert json.loads(data)["partitions"] == [
        {"topic": "a", "partition": 0},
        {"topic": "b", "partition": 3},
    ]
    assert codec.decode_isr_change(data) == tps
    cfg = codec.encode_entity_config({"retention.ms": "10"})
    assert json.loads(cfg) == {"version": 1, "config": {"retention.ms": "10"}}
    assert codec.decode_topic_config("t", cfg) == {"retention.ms": "10"}
    assert json.loads(codec.encode_config_change("topics/t")) == {
        "version": 2,
        "entity_path": "topics/t",
    }
    change = codec.encode_config_change("brokers/<default>")
    assert codec.decode_config_change(change) == ("brokers", "<default>")
    with pytest.raises(ZkDataError):
        codec.decode_config_change(b'{"version":2,"entity_path":"a/b/c"}')
    assert paths.config_change_sequence("config_change_0000000042") == 42
    assert paths.config_change_sequence("other") == -1


def test_uuid_base64_round_trip_and_never_zero() -> None:
    for _ in range(20):
        u = codec.new_topic_id()
        assert u.int != 0
        assert codec.uuid_from_base64(uuid_to_base64(u)) == u


def test_reassignment_request_round_trips_in_kafkas_shape() -> None:
    targets = {TopicPartition("b", 1): (3, 4), TopicPartition("a", 0): (1, 2)}
    data = codec.encode_reassignment(targets)
    assert json.loads(data) == {
        "version": 1,
        "partitions": [
            {"topic": "a", "partition": 0, "replicas": [1, 2]},
            {"topic": "b", "partition": 1, "replicas": [3, 4]},
        ],
    }
    assert codec.decode_reassignment(data) == targets


def test_reassignment_request_from_kafkas_tool_with_log_dirs_decodes() -> None:
    data = (
        b'{"version":1,"partitions":'
        b'[{"topic":"t","partition":2,"replicas":[1],"log_dirs":["any"]}]}'
    )
    assert codec.decode_reassignment(data) == {TopicPartition("t", 2): (1,)}


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"version":1}',
        b'{"version":1,"partitions":[{"topic":"t","replicas":[1]}]}',
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":"1"}]}',
    ],
)
def test_bad_reassignment_request_is_a_zk_data_error(data: bytes) -> None:
    with pytest.raises(ZkDataError):
        codec.decode_reassignment(data)
