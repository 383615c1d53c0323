"""Checkpoint files, meta.properties rules, topic names and log configuration."""

from __future__ import annotations

import os

import pytest

from protocol.values import TopicPartition
from storage.checkpoint import (
    CheckpointError,
    read_epoch_checkpoint,
    read_offset_checkpoint,
    read_partition_metadata,
    write_epoch_checkpoint,
    write_offset_checkpoint,
    write_partition_metadata,
)
from storage.config import LogConfig, LogManagerConfig
from storage.errors import InconsistentMetadataError, InvalidTopicError
from storage.meta import (
    MetaProperties,
    check_cluster_id,
    parse_meta_properties,
    read_meta_properties,
    resolve_broker_id,
    write_meta_properties,
)
from storage.names import parse_partition_dir, partition_dir_name, validate_topic_name

# -- checkpoints ---------------------------------------------------------------------------


def test_offset_checkpoint_round_trip_in_kafkas_text_format(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "recovery-point-offset-checkpoint")
    offsets = {TopicPartition("orders", 1): 877, TopicPartition("orders", 0): 1200}
    write_offset_checkpoint(path, offsets)
    with open(path) as f:
        assert f.read() == "0\n2\norders 0 1200\norders 1 877\n"
    assert read_offset_checkpoint(path) == offsets
    assert os.listdir(tmp_path) == ["recovery-point-offset-checkpoint"]  # no temp left


def test_missing_checkpoint_reads_empty(tmp_path: os.PathLike[str]) -> None:
    assert read_offset_checkpoint(os.path.join(tmp_path, "nope")) == {}


@pytest.mark.parametrize(
    "content",
    ["", "1\n0\n", "0\n2\nt 0 5\n", "0\n1\nt 0\n", "0\n1\nt x 5\n", "0\n1\n.. 0 5\n", "\xff"],
)
def test_corrupt_checkpoint_raises_checkpoint_error(
    tmp_path: os.PathLike[str], content: str
) -> None:
    path = os.path.join(tmp_path, "cp")
    with open(path, "w", encoding="latin-1") as f:
        f.write(content)
    with pytest.raises(CheckpointError):
        read_offset_checkpoint(path)


def test_epoch_checkpoint_and_partition_metadata(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "leader-epoch-checkpoint")
    write_epoch_checkpoint(path, [(0, 0), (4, 120)])
    assert read_epoch_checkpoint(path) == [(0, 0), (4, 120)]
    meta = os.path.join(tmp_path, "partition.metadata")
    write_partition_metadata(meta, "MFHpVGzMTK6BX4Dn5x4tmQ")
    assert read_partition_metadata(meta) == "MFHpVGzMTK6BX4Dn5x4tmQ"
    with open(meta, "w") as f:
        f.write("version: 1\n")
    with pytest.raises(CheckpointError):
        read_partition_metadata(meta)


# -- meta.properties ---------------------------------------------------------------------


def test_meta_properties_round_trip(tmp_path: os.PathLike[str]) -> None:
    dirs = [os.path.join(tmp_path, "a"), os.path.join(tmp_path, "b")]
    write_meta_properties(dirs, 3, "clu")
    found = read_meta_properties([*dirs, os.path.join(tmp_path, "c")])
    assert found[dirs[0]] == found[dirs[1]] == MetaProperties(3, "clu")
    assert found[os.path.join(tmp_path, "c")] is None
    with open(os.path.join(dirs[0], "meta.properties")) as f:
        text = f.read()
    assert "version=0\n" in text and "broker.id=3\n" in text and "cluster.id=clu\n" in text


def test_meta_properties_are_read_with_java_rules() -> None:
    text = "#Written by Kafka\nversion = 0\nbroker.id: 3\ncluster.id=\\u0041b \n"
    assert parse_meta_properties(text, "m") == MetaProperties(3, "Ab")
    with pytest.raises(InconsistentMetadataError, match=r"^m: "):
        parse_meta_properties("broker.id=1\ncluster.id=\\u12", "m")


def test_broker_id_rules() -> None:
    one = {"/a": MetaProperties(1, "c"), "/b": None}
    assert resolve_broker_id(one, None) == 1  # from disk when the config has none
    assert resolve_broker_id(one, 1) == 1
    assert resolve_broker_id({"/a": None}, 4) == 4
    assert resolve_broker_id({"/a": None}, None) is None  # to be generated
    with pytest.raises(InconsistentMetadataError, match=r"configured broker.id 2 .* broker.id 1"):
        resolve_broker_id(one, 2)
    two = {"/a": MetaProperties(1, "c"), "/b": MetaProperties(2, "c")}
    with pytest.raises(InconsistentMetadataError, match=r"/a has 1, /b has 2"):
        resolve_broker_id(two, None)
    clusters = {"/a": MetaProperties(1, "x"), "/b": MetaProperties(1, "y")}
    with pytest.raises(InconsistentMetadataError, match=r"/a has x, /b has y"):
        resolve_broker_id(clusters, None)


def test_cluster_id_must_match() -> None:
    found = {"/a": MetaProperties(1, "x")}
    check_cluster_id(found, "x")
    with pytest.raises(InconsistentMetadataError, match=r"y does not match cluster\.id x"):
        check_cluster_id(found, "y")


# -- names and config ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "a/b", "a b", "ü", "../etc"])
def test_invalid_topic_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)
    with pytest.raises(InvalidTopicError):
        partition_dir_name(TopicPartition(name, 0))


def test_partition_dir_names() -> None:
    validate_topic_name("a" * 249)
    assert partition_dir_name(TopicPartition("my-topic.v1_x", 3)) == "my-topic.v1_x-3"
    assert parse_partition_dir("my-topic.v1_x-3") == TopicPartition("my-topic.v1_x", 3)
    assert parse_partition_dir("t-0.abcdef-delete") is None
    assert parse_partition_dir("t-x") is None
    assert parse_partition_dir("meta.properties") is None


def test_log_config_from_broker_props_and_topic_overrides() -> None:
    c = LogConfig.from_broker_props(
        {"log.segment.bytes": "1024", "log.retention.hours": "1", "log.roll.ms": "500"}
    )
    assert (c.segment_bytes, c.retention_ms, c.segment_ms) == (1024, 3_600_000, 500)
    assert LogConfig.from_broker_props({"log.retention.minutes": "2"}).retention_ms == 120_000
    assert LogConfig.from_broker_props({"log.retention.ms": "-1"}).retention_ms == -1
    o = c.with_overrides({"retention.bytes": "99", "min.insync.replicas": "2"})
    assert o.retention_bytes == 99 and o.segment_bytes == 1024
    with pytest.raises(ValueError, match=r"segment\.bytes"):
        c.with_overrides({"segment.bytes": "big"})
    m = LogManagerConfig.from_broker_props(
        {"log.dirs": "/a, /b", "num.recovery.threads.per.data.dir": "4"}
    )
    assert m.log_dirs == ("/a", "/b") and m.num_recovery_threads_per_data_dir == 4


def test_ensure_meta_properties_end_to_end(tmp_path: os.PathLike[str]) -> None:
    from storage.meta import ensure_meta_properties

    dirs = [os.path.join(tmp_path, "a"), os.path.join(tmp_path, "b")]
    assert ensure_meta_properties(dirs, None, "c1", lambda: 1001) == 1001  # generated
    assert ensure_meta_properties(dirs, None, "c1", lambda: 7) == 1001  # from disk now
    assert ensure_meta_properties(dirs, 1001, "c1", lambda: 7) == 1001
    with pytest.raises(InconsistentMetadataError):
        ensure_meta_properties(dirs, 5, "c1", lambda: 7)
    with pytest.raises(InconsistentMetadataError):
        ensure_meta_properties(dirs, None, "other-cluster", lambda: 7)
    third = os.path.join(tmp_path, "c")
    assert ensure_meta_properties([*dirs, third], None, "c1", lambda: 7) == 1001
    assert read_meta_properties([third])[third] == MetaProperties(1001, "c1")
