"""Which partition of ``__consumer_offsets`` a group lives in, exactly as Kafka picks it.

Kafka's rule (GroupMetadataManager.partitionFor) is
``Utils.abs(groupId.hashCode()) % partitionCount``:

- ``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` over the string's UTF-16 code
  units (a character outside the Basic Multilingual Plane counts as its two surrogates),
  in int32 arithmetic that wraps around;
- ``Utils.abs`` is not Java's ``Math.abs``: it maps ``Integer.MIN_VALUE`` (whose negation
  does not fit an int32) to 0 rather than leaving it negative.

Every client and every broker must agree on the result, or a group would be coordinated
by one broker while its commits sit in another's partition; hence the care over what
looks like a detail. ``partitionCount`` is the partition count of the existing topic (the
``offsets.topic.num.partitions`` setting only shapes the topic when it is created).
"""

from __future__ import annotations

_INT32 = 1 << 32
_INT32_MIN = -(1 << 31)


def java_string_hash(value: str) -> int:
    """Java's ``String.hashCode`` of ``value``, as a signed int32."""
    h = 0
    data = value.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - _INT32 if h >= 1 << 31 else h


def kafka_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: the absolute value of an int32, with ``Integer.MIN_VALUE``
    mapped to 0."""
    return 0 if value == _INT32_MIN else abs(value)


def partition_for(group_id: str, partition_count: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` among ``partition_count``."""
    if partition_count < 1:
        raise ValueError(f"partition count must be positive, got {partition_count}")
    return kafka_abs(java_string_hash(group_id)) % partition_count
