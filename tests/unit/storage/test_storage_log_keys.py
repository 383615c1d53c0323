"""The log keys, declared once: fallbacks between broker keys, topic overrides, TopicConfigs."""

from __future__ import annotations

import pytest

from config.effective import ConfigLayers
from config.errors import ConfigError
from config.log_keys import BROKER_LOG_KEYS, TOPIC_KEYS, broker_value
from storage.config import LogConfig, LogManagerConfig
from storage.retention import roll_jitter_ms
from storage.topic_configs import TopicConfigs


def test_every_topic_key_has_a_declared_broker_synonym() -> None:
    assert all(d.synonym in BROKER_LOG_KEYS for d in TOPIC_KEYS.values() if d.synonym)
    # a key without a synonym has a default of its own
    assert all(d.default is not None for d in TOPIC_KEYS.values() if d.synonym is None)


def test_flush_ms_falls_back_to_the_flush_scheduler_interval() -> None:
    config = LogConfig.from_broker_props({"log.flush.scheduler.interval.ms": "2000"})
    assert config.flush_ms == 2000
    assert LogConfig.from_broker_props({"log.flush.interval.ms": "5"}).flush_ms == 5
    manager = LogManagerConfig.from_broker_props({"log.flush.scheduler.interval.ms": "2000"})
    assert manager.flush_scheduler_interval_ms == 2000


def test_segment_jitter_ms_comes_from_the_broker_and_topic_keys() -> None:
    config = LogConfig.from_broker_props({"log.roll.jitter.hours": "1"})
    assert config.segment_jitter_ms == 3_600_000
    assert config.with_overrides({"segment.jitter.ms": "7"}).segment_jitter_ms == 7
    with pytest.raises(ConfigError, match=r"segment\.jitter\.ms"):
        config.with_overrides({"segment.jitter.ms": "-1"})


def test_roll_jitter_is_a_share_of_the_jitter_below_segment_ms() -> None:
    assert roll_jitter_ms(0.5, 1_000, 400) == 200
    assert roll_jitter_ms(0.5, 100, 400) == 50
    assert roll_jitter_ms(0.9, 1_000, 0) == 0


def test_retention_negative_in_any_unit_is_forever() -> None:
    assert broker_value({"log.retention.minutes": -5}, "log.retention.ms") == -1
    assert broker_value({"log.retention.hours": 2}, "log.retention.ms") == 7_200_000


def test_topic_configs_tell_listeners_of_changes_and_forget_deleted_topics() -> None:
    configs = TopicConfigs()
    changed: list[str] = []
    configs.listen(changed.append)
    assert configs.get("t") is None and configs.overrides("t") == {}
    configs.set("t", {"retention.ms": "1"})
    configs.set("t", {"retention.ms": "1"})  # unchanged: nobody told
    configs.set("t", {"retention.ms": "2"})
    assert changed == ["t", "t"]
    configs.forget("t")
    assert not configs.knows("t")


def test_log_config_is_each_keys_effective_value_over_the_layers() -> None:
    broker = ConfigLayers(
        dynamic_broker={"min.insync.replicas": "3"},
        dynamic_default={"log.retention.hours": "2", "log.segment.bytes": "4096"},
        static={"log.segment.bytes": "2048", "min.insync.replicas": "2"},
    )
    default = LogConfig.from_layers(broker)
    assert (default.min_insync_replicas, default.segment_bytes) == (3, 4096)
    assert default.retention_ms == 7_200_000
    overrides = {"min.insync.replicas": "4", "retention.ms": "10", "other.key": "x"}
    # a topic override beats every broker layer: applying the overrides to the broker's
    # config gives what the layers give with the topic's on top
    assert default.with_overrides(overrides) == LogConfig.from_layers(broker.with_topic(overrides))
    assert default.with_overrides(overrides).min_insync_replicas == 4
    assert LogConfig().min_insync_replicas == 1
    with pytest.raises(ConfigError, match=r"min\.insync\.replicas"):
        default.with_overrides({"min.insync.replicas": "0"})
    with pytest.raises(ConfigError, match=r"log\.segment\.bytes"):
        LogConfig.from_broker_props({"log.segment.bytes": "1"})
