"""The replication throttle of a reassignment: what ``reassign-partitions --throttle`` sets
and what ``--verify`` clears, as Kafka's tool does it.

``--execute --throttle N`` (bytes/s) throttles only the traffic the reassignment adds:

- on each topic of the file, ``leader.replication.throttled.replicas`` lists every
  current replica of its partitions in the file (any of them may be the leader the new
  replicas copy from) and ``follower.replication.throttled.replicas`` the replicas
  moving in (in the target, not in the current list); both as ``partition:broker``
  pairs, set (replaced) with IncrementalAlterConfigs;
- on each broker taking part (a current or incoming replica of a partition of the file),
  ``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate`` are
  set to N.

``--verify``, once no partition of the file is still being reassigned, deletes the rates
on every broker of the cluster and both lists on every topic of the file, so that a
forgotten throttle cannot hold back later replication. While any partition still moves,
it leaves them in place and says so. ``--cancel`` deletes them too, once it has cancelled
what was in progress (a cancelled move needs no throttle). ``--preserve-throttles`` keeps
them, in both.

The pure half (which pairs, which brokers) is separate from the requests, for the unit
tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, TextIO

from client import KafkaClient
from client.admin import DELETE, SET, incremental_alter_configs
from config.throttled_replicas import format_pairs
from protocol.values import TopicPartition

#: Kafka's resource types (DescribeConfigs / IncrementalAlterConfigs)
TOPIC_RESOURCE: Final = 2
BROKER_RESOURCE: Final = 4

LEADER_REPLICAS: Final = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS: Final = "follower.replication.throttled.replicas"
RATE_KEYS: Final = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")

VERIFY_WARNING: Final = (
    "Warning: You must run --verify periodically, until the reassignment completes, "
    "to ensure the throttle is removed."
)


def moves(
    plan: Mapping[TopicPartition, Sequence[int]], current: Mapping[TopicPartition, Sequence[int]]
) -> dict[TopicPartition, tuple[list[int], list[int]]]:
    """Each partition of the plan: (its current replicas, the replicas moving in). As in
    Kafka's tool, every partition of the file counts, moving or not."""
    out: dict[TopicPartition, tuple[list[int], list[int]]] = {}
    for tp, target in plan.items():
        now = list(current.get(tp, ()))
        out[tp] = (now, [b for b in target if b not in now])
    return out


def topic_throttles(
    plan: Mapping[TopicPartition, Sequence[int]], current: Mapping[TopicPartition, Sequence[int]]
) -> dict[str, dict[str, str]]:
    """Per topic of the plan: the two throttled-replica lists to set."""
    leader: dict[str, list[tuple[int, int]]] = {}
    follower: dict[str, list[tuple[int, int]]] = {}
    for tp, (now, incoming) in moves(plan, current).items():
        leader.setdefault(tp.topic, []).extend((tp.partition, b) for b in now)
        follower.setdefault(tp.topic, []).extend((tp.partition, b) for b in incoming)
    return {
        topic: {
            LEADER_REPLICAS: format_pairs(leader[topic]),
            FOLLOWER_REPLICAS: format_pairs(follower.get(topic, [])),
        }
        for topic in sorted(leader)
    }


def throttled_brokers(
    plan: Mapping[TopicPartition, Sequence[int]], current: Mapping[TopicPartition, Sequence[int]]
) -> list[int]:
    """The brokers taking part in the moves: every current and target replica."""
    brokers: set[int] = set()
    for now, incoming in moves(plan, current).values():
        brokers.update(now)
        brokers.update(incoming)
    return sorted(brokers)


async def set_throttles(
    client: KafkaClient,
    plan: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
    rate: int,
    out: TextIO,
) -> None:
    """``--execute --throttle``: the lists on the topics, the rates on the brokers."""
    for topic, lists in topic_throttles(plan, current).items():
        ops = [(key, SET, value) for key, value in lists.items()]
        await incremental_alter_configs(client, TOPIC_RESOURCE, topic, ops)
    for broker in throttled_brokers(plan, current):
        ops = [(key, SET, str(rate)) for key in RATE_KEYS]
        await incremental_alter_configs(client, BROKER_RESOURCE, str(broker), ops)
    print(f"The inter-broker throttle limit was set to {rate} B/s", file=out)


async def clear_throttles(
    client: KafkaClient, topics: Iterable[str], brokers: Iterable[int], out: TextIO
) -> None:
    """``--verify`` of a completed reassignment, or ``--cancel``: every rate and list
    removed."""
    broker_ids = sorted(brokers)
    print(f"Clearing broker-level throttles on brokers {','.join(map(str, broker_ids))}", file=out)
    for broker in broker_ids:
        ops = [(key, DELETE, None) for key in RATE_KEYS]
        await incremental_alter_configs(client, BROKER_RESOURCE, str(broker), ops)
    for topic in sorted(set(topics)):
        print(f"Clearing topic-level throttles on topic {topic}", file=out)
        ops = [(key, DELETE, None) for key in (LEADER_REPLICAS, FOLLOWER_REPLICAS)]
        await incremental_alter_configs(client, TOPIC_RESOURCE, topic, ops)
