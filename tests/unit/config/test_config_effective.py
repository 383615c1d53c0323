"""A key's effective value over its layers: topic override, dynamic per-broker config,
dynamic cluster default, static configuration, default; each layer beats the ones below,
a value its key refuses is skipped as if unset, and the memo answers as the function does.
"""

from __future__ import annotations

from types import MappingProxyType

import pytest

from config.effective import ConfigLayers, EffectiveValueMemo, effective_value

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"


def test_with_no_layer_set_the_key_tables_default_applies() -> None:
    empty = ConfigLayers()
    assert effective_value(MIN_ISR, empty) == 1
    assert effective_value(UNCLEAN, empty) is False
    assert effective_value("retention.ms", empty) == 168 * 3_600_000
    assert effective_value("cleanup.policy", empty) == ["delete"]


@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        (ConfigLayers(static={MIN_ISR: "2"}), 2),
        (ConfigLayers(dynamic_default={MIN_ISR: "3"}, static={MIN_ISR: "2"}), 3),
        (
            ConfigLayers(
                dynamic_broker={MIN_ISR: "4"}, dynamic_default={MIN_ISR: "3"}, static={MIN_ISR: "2"}
            ),
            4,
        ),
        (
            ConfigLayers(
                topic={MIN_ISR: "5"},
                dynamic_broker={MIN_ISR: "4"},
                dynamic_default={MIN_ISR: "3"},
                static={MIN_ISR: "2"},
            ),
            5,
        ),
        # a stronger layer that does not set the key leaves it to the weaker ones
        (
            ConfigLayers(
                topic={"retention.ms": "1"}, dynamic_broker={"x": "y"}, static={MIN_ISR: "2"}
            ),
            2,
        ),
    ],
)
def test_each_layer_beats_the_ones_below(layers: ConfigLayers, expected: int) -> None:
    assert effective_value(MIN_ISR, layers) == expected


@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        (ConfigLayers(), False),
        (ConfigLayers(static={UNCLEAN: "true"}), True),
        (ConfigLayers(dynamic_default={UNCLEAN: "true"}), True),
        (ConfigLayers(dynamic_broker={UNCLEAN: "false"}, static={UNCLEAN: "true"}), False),
        (ConfigLayers(topic={UNCLEAN: "false"}, dynamic_default={UNCLEAN: "true"}), False),
        (ConfigLayers(topic={UNCLEAN: " TRUE "}), True),
    ],
)
def test_unclean_leader_election_over_the_layers(layers: ConfigLayers, expected: bool) -> None:
    assert effective_value(UNCLEAN, layers) is expected


def test_an_invalid_value_is_skipped_and_the_next_layer_answers() -> None:
    # refused where it is written; one that got through anyway (another tool) is ignored
    assert effective_value(MIN_ISR, ConfigLayers(topic={MIN_ISR: "0"})) == 1
    assert effective_value(MIN_ISR, ConfigLayers(topic={MIN_ISR: "x"}, static={MIN_ISR: "2"})) == 2
    layers = ConfigLayers(
        topic={UNCLEAN: "yes"}, dynamic_broker={UNCLEAN: "maybe"}, dynamic_default={UNCLEAN: "true"}
    )
    assert effective_value(UNCLEAN, layers) is True
    assert effective_value(MIN_ISR, ConfigLayers(dynamic_default={MIN_ISR: "-1"})) == 1


def test_a_topic_key_defaults_from_its_broker_synonym() -> None:
    layers = ConfigLayers(static={"log.segment.bytes": "2048", "compression.type": "lz4"})
    assert effective_value("segment.bytes", layers) == 2048
    assert effective_value("compression.type", layers) == "lz4"
    # the topic layer holds topic keys only: a broker key there is not the topic's override
    assert effective_value("segment.bytes", ConfigLayers(topic={"log.segment.bytes": "99"})) == (
        1073741824
    )


def test_units_are_resolved_after_the_broker_layers_are_merged() -> None:
    # ms beats hours even when hours comes from a stronger layer (Kafka merges, then picks)
    layers = ConfigLayers(
        dynamic_broker={"log.retention.hours": "2"}, static={"log.retention.ms": "1000"}
    )
    assert effective_value("retention.ms", layers) == 1000
    assert effective_value("log.retention.ms", layers) == 1000
    hours = ConfigLayers(dynamic_default={"log.retention.hours": "2"})
    assert effective_value("retention.ms", hours) == 7_200_000
    forever = ConfigLayers(static={"log.retention.minutes": "-5"})
    assert effective_value("retention.ms", forever) == -1
    assert effective_value("retention.ms", forever.with_topic({"retention.ms": "7"})) == 7


def test_a_broker_key_asked_for_directly_skips_the_topic_layer() -> None:
    layers = ConfigLayers(topic={MIN_ISR: "5"}, static={MIN_ISR: "2"})
    assert effective_value(MIN_ISR, layers) == 5
    assert effective_value("log.flush.interval.ms", ConfigLayers()) == 2**63 - 1
    with pytest.raises(KeyError):
        effective_value("num.io.threads", layers)


def test_the_memo_answers_as_the_function_and_follows_replaced_overrides() -> None:
    broker = ConfigLayers(static=MappingProxyType({MIN_ISR: "2"}))
    memo = EffectiveValueMemo(broker, capacity=2)
    first = MappingProxyType({MIN_ISR: "3"})
    assert memo.value(MIN_ISR, first) == 3
    assert memo.value(MIN_ISR, first) == 3
    assert len(memo) == 1
    replaced = MappingProxyType({MIN_ISR: "4"})  # new overrides: a new mapping
    assert memo.value(MIN_ISR, replaced) == 4
    assert memo.value(UNCLEAN, replaced) is False
    assert len(memo) == 1  # full at two entries: it started again empty
    assert memo.value(MIN_ISR, MappingProxyType({})) == 2
    assert memo.value(MIN_ISR, MappingProxyType({MIN_ISR: "0"})) == 2
    with pytest.raises(ValueError):
        EffectiveValueMemo(broker, capacity=0)
