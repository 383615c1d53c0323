"""Kafka's rule for DescribeConfigs synonyms (broker.config.synonyms), and the entries
broker.config.describe builds with it."""

from __future__ import annotations

from broker.config import BrokerConfig, ConfigSource, describe_topic_config
from broker.config.synonyms import listed_synonyms, synonym_keys

DYN, DYN_DEFAULT, STATIC, DEFAULT = (
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG,
    ConfigSource.DEFAULT_CONFIG,
)
RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
DEFAULTS = {"log.retention.hours": "168"}  # ms and minutes default to null: never listed


def test_synonym_keys_name_unit_groups_whole_and_fallbacks_one_way() -> None:
    for key in RETENTION:
        assert synonym_keys(key) == RETENTION
    assert synonym_keys("log.roll.hours") == ("log.roll.ms", "log.roll.hours")
    assert synonym_keys("log.flush.interval.ms") == (
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
    )
    assert synonym_keys("log.flush.scheduler.interval.ms") == ("log.flush.scheduler.interval.ms",)
    assert synonym_keys("num.io.threads") == ("num.io.threads",)


def test_a_key_set_nowhere_lists_nothing_though_its_group_is_set() -> None:
    layers = [
        ({}, DYN),
        ({}, DYN_DEFAULT),
        ({"log.retention.hours": "1"}, STATIC),
        (DEFAULTS, DEFAULT),
    ]
    assert listed_synonyms("log.retention.ms", RETENTION, layers) == []


def test_layers_go_strongest_first_and_keys_in_group_order_within_a_layer() -> None:
    layers = [
        ({"log.retention.hours": "5"}, DYN),
        ({}, DYN_DEFAULT),
        ({"log.retention.hours": "2", "log.retention.ms": "1000"}, STATIC),
        (DEFAULTS, DEFAULT),
    ]
    # the dynamic hours precede the first log.retention.ms and are cut
    assert listed_synonyms("log.retention.ms", RETENTION, layers) == [
        ("log.retention.ms", "1000", STATIC),
        ("log.retention.hours", "2", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]
    # the hours key starts at its own first appearance
    assert listed_synonyms("log.retention.hours", RETENTION, layers) == [
        ("log.retention.hours", "5", DYN),
        ("log.retention.ms", "1000", STATIC),
        ("log.retention.hours", "2", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    ]


def test_a_plain_key_lists_each_layer_setting_it_then_its_default() -> None:
    layers = [({"num.io.threads": "6"}, DYN), ({}, DYN_DEFAULT), ({}, STATIC)]
    layers.append(({"num.io.threads": "8"}, DEFAULT))
    assert listed_synonyms("num.io.threads", ("num.io.threads",), layers) == [
        ("num.io.threads", "6", DYN),
        ("num.io.threads", "8", DEFAULT),
    ]


def test_topic_retention_over_a_broker_that_sets_only_hours() -> None:
    config = BrokerConfig.from_properties({"log.retention.hours": "24"})
    entries = {e.name: e for e in describe_topic_config(config, {})}
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.synonyms) == (
        str(24 * 3_600_000),
        DEFAULT,
        (),
    )
    overridden = {e.name: e for e in describe_topic_config(config, {"retention.ms": "5000"})}
    assert overridden["retention.ms"].synonyms == (
        ("retention.ms", "5000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
    )
    assert overridden["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    # a key with a default of its own lists it
    segment = entries["segment.bytes"]
    assert segment.synonyms == (("log.segment.bytes", "1073741824", DEFAULT),)
    assert entries["flush.ms"].synonyms == ()  # log.flush.interval.ms has no default


def test_topic_retention_over_a_broker_that_sets_ms_lists_the_group_after_it() -> None:
    config = BrokerConfig.from_properties({"log.retention.ms": "7000", "log.retention.hours": "3"})
    retention = {e.name: e for e in describe_topic_config(config, {})}["retention.ms"]
    assert (retention.value, retention.source) == ("7000", STATIC)
    assert retention.synonyms == (
        ("log.retention.ms", "7000", STATIC),
        ("log.retention.hours", "3", STATIC),
        ("log.retention.hours", "168", DEFAULT),
    )
