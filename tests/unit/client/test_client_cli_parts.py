"""Pure parts of the commands: producer batching, topic output, consumer start offsets."""

from __future__ import annotations

import argparse
import uuid

import pytest

from client.admin import ConfigEntry
from client.cluster_view import PartitionInfo, TopicInfo
from client.produce import partition_for_key
from protocol.records import Compression, read_batch
from protocol.uuids import uuid_to_base64
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from tools.command import CommandError
from tools.console_consumer import starting_point
from tools.console_producer import Accumulator, ProducerSettings
from tools.topics import (
    format_partition,
    format_topic,
    parse_assignment,
)


def settings(**kw: object) -> ProducerSettings:
    return ProducerSettings(**kw)  # type: ignore[arg-type]


def test_a_batch_goes_when_full() -> None:
    acc = Accumulator(settings(batch_size=200, linger_ms=1000), partitions=1)
    ready = []
    for _i in range(10):
        ready += acc.add(0, 5, None, b"x" * 30, [])
    assert len(ready) >= 2
    for _, batch in ready:
        assert batch.builder.uncompressed_size >= 200
    rest = acc.drain()
    total = sum(len(b.builder) for _, b in ready + rest)
    assert total == 10


def test_a_batch_goes_when_its_linger_expires() -> None:
    acc = Accumulator(settings(batch_size=10_000, linger_ms=100), partitions=1)
    acc.add(1000, 5, None, b"a", [])
    acc.add(1050, 5, None, b"b", [])
    assert acc.next_deadline_ms() == 1100
    assert acc.due(1099) == []
    ((partition, batch),) = acc.due(1100)
    _header, records = read_batch(batch.builder.build())
    assert partition == 0 and [r.value for r in records] == [b"a", b"b"]
    assert acc.next_deadline_ms() is None


def test_keys_pick_partitions_unkeyed_records_stick_then_rotate() -> None:
    acc = Accumulator(settings(batch_size=10_000, linger_ms=0), partitions=4)
    assert acc.partition_for(b"user-1") == partition_for_key(b"user-1", 4)
    acc.add(0, 1, None, b"a", [])
    acc.add(0, 1, None, b"b", [])
    assert acc.partition_for(None) == 0
    ((p, batch),) = acc.due(0)
    assert p == 0 and len(batch.builder) == 2
    assert acc.partition_for(None) == 1  # the sticky partition moved on
    fixed = Accumulator(settings(), partitions=4, fixed_partition=3)
    assert fixed.partition_for(b"user-1") == 3 and fixed.partition_for(None) == 3


def test_producer_settings_from_flags_and_properties() -> None:
    args = argparse.Namespace(
        producer_property=["acks=1", "linger.ms=5", "compression.type=lz4", "foo=bar"],
        request_required_acks=None, compression_codec=None, batch_size=None, timeout=None,
        request_timeout_ms=None,
    )  # fmt: skip
    s = ProducerSettings.from_args(args)
    assert (s.acks, s.linger_ms, s.compression, s.batch_size) == (1, 5, Compression.LZ4, 16384)
    assert s.warnings and "'foo'" in s.warnings[0]
    args.compression_codec = "gzip"
    args.request_required_acks = "all"
    s = ProducerSettings.from_args(args)
    assert (s.acks, s.compression) == (-1, Compression.GZIP)


def test_topic_ids_print_as_kafka_prints_them() -> None:
    tid = uuid.UUID("2fa3c4ba-5bd6-4b58-bb06-6fa6c1bd3c19")
    text = uuid_to_base64(tid)
    assert len(text) == 22 and "=" not in text
    import base64

    assert base64.urlsafe_b64decode(text + "==") == tid.bytes


def test_describe_lines() -> None:
    p0 = PartitionInfo(0, 1, 0, (1, 2), (1, 2))
    p1 = PartitionInfo(1, -1, 3, (2, 0), (), offline=(2, 0))
    info = TopicInfo("orders", uuid.UUID(int=1), False, {0: p0, 1: p1})
    configs = [
        ConfigEntry("retention.ms", "1000", 1, False, False),
        ConfigEntry("segment.bytes", "1073741824", 5, False, False),
        ConfigEntry("secret", "x", 1, False, True),
    ]
    assert format_topic(info, configs) == (
        f"Topic: orders\tTopicId: {uuid_to_base64(uuid.UUID(int=1))}\tPartitionCount: 2\t"
        "ReplicationFactor: 2\tConfigs: retention.ms=1000,secret=******"
    )
    assert format_partition("orders", p0) == (
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2"
    )
    assert format_partition("orders", p1) == (
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,0\tIsr: \tOffline: 2,0"
    )


def test_replica_assignment() -> None:
    assert parse_assignment("0:1,1:2,2:0") == {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    with pytest.raises(CommandError):
        parse_assignment("0:x")
    with pytest.raises(CommandError, match="twice"):
        parse_assignment("1:1")


def test_consumer_starting_points() -> None:
    assert starting_point(None, False, None) == LATEST_TIMESTAMP
    assert starting_point(None, True, None) == EARLIEST_TIMESTAMP
    assert starting_point("earliest", False, None) == EARLIEST_TIMESTAMP
    assert starting_point("17", False, 0) == 17
    with pytest.raises(ValueError, match="partition is required"):
        starting_point("17", False, None)
    with pytest.raises(ValueError, match="conflicts"):
        starting_point("latest", True, None)
    with pytest.raises(ValueError, match="earliest, latest or a number"):
        starting_point("soon", False, 0)


def test_perf_producer_props_override_the_flags() -> None:
    from tools.main import build_parser
    from tools.perf import apply_producer_props

    args = build_parser().parse_args(
        ["perf", "produce", "--bootstrap-server", "h:1", "--topic", "t", "--num-records", "5",
         "--acks", "1", "--producer-props", "acks=all", "linger.ms=5", "batch.size=65536",
         "compression.type=zstd"]
    )  # fmt: skip
    apply_producer_props(args)
    assert (args.acks, args.linger_ms, args.batch_size, args.compression) == (
        "all", 5.0, 65536, "zstd",
    )  # fmt: skip
    args.producer_props = ["buffer.memory=1"]
    with pytest.raises(ValueError, match="not supported"):
        apply_producer_props(args)
