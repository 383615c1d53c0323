"""A group's offsets partition is the one Kafka picks: Java's String.hashCode, Kafka's
Utils.abs, modulo the partition count."""

from __future__ import annotations

import pytest

from broker.group.partitioner import java_string_hash, kafka_abs, partition_for

# Values Java prints for "<s>".hashCode() (a JShell session; they follow from the
# definition s[0]*31^(n-1) + ... + s[n-1] in wrapping int32 arithmetic).
JAVA_HASHES = {
    "": 0,
    "a": 97,
    "hello": 99162322,
    "my-group": -1906497762,
    "console-consumer-12345": 158455506,
    "é": 233,
    # outside the BMP: two UTF-16 code units, 0xD83D and 0xDE00
    "\U0001f600": 1772899,
}

#: strings whose hashCode is Integer.MIN_VALUE (well-known collisions of Java's hash;
#: the test below recomputes them rather than trusting the list)
MIN_VALUE_GROUP_IDS = ("polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES")


@pytest.mark.parametrize(("text", "expected"), sorted(JAVA_HASHES.items()))
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


@pytest.mark.parametrize("group_id", MIN_VALUE_GROUP_IDS)
def test_a_group_id_hashing_to_min_value_goes_to_partition_zero(group_id: str) -> None:
    assert java_string_hash(group_id) == -(2**31)
    assert kafka_abs(java_string_hash(group_id)) == 0
    # Java's Math.abs would leave it negative (and Java's % then answers -48)
    assert partition_for(group_id, 50) == 0
    assert partition_for(group_id, 7) == 0


def test_kafka_abs_is_abs_elsewhere() -> None:
    assert kafka_abs(-5) == 5
    assert kafka_abs(5) == 5
    assert kafka_abs(-(2**31) + 1) == 2**31 - 1


def test_partition_for_uses_the_absolute_hash_modulo_the_count() -> None:
    # "my-group": |-1906497762| = 1906497762; 1906497762 % 50 = 12
    assert partition_for("my-group", 50) == 12
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("anything", 1) == 0


def test_a_partition_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError):
        partition_for("g", 0)
