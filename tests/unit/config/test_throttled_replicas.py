"""The throttled-replica lists: Kafka's validation and which partitions a broker throttles."""

from __future__ import annotations

import pytest

from config.errors import ConfigError
from config.log_keys import TOPIC_KEYS, validate_topic_configs
from config.throttled_replicas import FORMAT_PROBLEM, format_pairs, throttled_on

KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("text", ["", "*", " * ", "0:1", "0:1,1:2, 2:3", "10:101,0:0,"])
def test_accepted_values(key: str, text: str) -> None:
    validate_topic_configs({key: text})


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("text", ["0", "a:1", "0:1:2", "*,0:1", "0-1", "-1:2", "0:1 2:3"])
def test_refused_values_name_the_key_with_kafkas_wording(key: str, text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_topic_configs({key: text})
    assert key in str(caught.value) and FORMAT_PROBLEM in str(caught.value)


@pytest.mark.parametrize("key", KEYS)
def test_the_keys_have_no_broker_synonym_and_an_empty_default(key: str) -> None:
    definition = TOPIC_KEYS[key]
    assert definition.synonym is None
    assert definition.typed_default() == []


def test_a_broker_throttles_the_partitions_paired_with_its_own_id() -> None:
    value = ["0:101", "0:102", "1:102", "3:101"]
    on_101 = throttled_on(value, 101)
    assert [p for p in range(5) if on_101.throttles(p)] == [0, 3]
    on_102 = throttled_on(value, 102)
    assert [p for p in range(5) if on_102.throttles(p)] == [0, 1]
    assert not any(throttled_on(value, 103).throttles(p) for p in range(5))


def test_a_star_throttles_every_partition_on_every_broker() -> None:
    for broker in (0, 7):
        assert all(throttled_on("*", broker).throttles(p) for p in range(10))


@pytest.mark.parametrize("value", [None, "", [], "oops", ["0:1", "x"]])
def test_nothing_is_throttled_by_an_unset_empty_or_invalid_value(value: object) -> None:
    throttled = throttled_on(value, 1)  # type: ignore[arg-type]
    assert not any(throttled.throttles(p) for p in range(5))


def test_text_and_items_parse_alike() -> None:
    assert throttled_on(" 0:1 , 2:1 ", 1) == throttled_on(["0:1", "2:1"], 1)


def test_pairs_are_written_sorted_without_repeats() -> None:
    assert format_pairs([(1, 2), (0, 3), (1, 2), (0, 1)]) == "0:1,0:3,1:2"
    assert format_pairs([]) == ""
