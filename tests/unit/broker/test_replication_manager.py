"""The fetcher manager's pure parts: which fetcher a partition goes to and where its
leader is reached."""

from __future__ import annotations

from broker.replication.fetcher import LeaderEndpoint
from broker.replication.manager import fetcher_id_for, java_string_hash, resolve_leader_endpoint
from protocol.values import TopicPartition


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("topic") == 110546223
    # int32 wraparound: a long name's hash goes negative in Java
    assert java_string_hash("__consumer_offsets") < 0


def test_fetcher_id_is_kafkas_and_stable() -> None:
    # Kafka: abs(31 * "topic".hashCode + p) % 3, with 31 * 110546223 wrapping to int32
    assert [fetcher_id_for(TopicPartition("topic", p), 3) for p in range(6)] == [
        1, 0, 2, 1, 0, 2,
    ]  # fmt: skip
    tp = TopicPartition("orders", 5)
    assert fetcher_id_for(tp, 4) == fetcher_id_for(TopicPartition("orders", 5), 4)
    assert {fetcher_id_for(TopicPartition("t", p), 1) for p in range(50)} == {0}


def test_partitions_spread_over_the_fetchers() -> None:
    ids = [fetcher_id_for(TopicPartition("events", p), 4) for p in range(40)]
    assert set(ids) == {0, 1, 2, 3}


def test_leader_endpoint_prefers_the_metadata_caches_inter_broker_listener() -> None:
    cache = {1: ("10.0.0.1", 9092)}
    live = {1: ("10.0.0.1", 9192), 2: ("10.0.0.2", 9092)}
    assert resolve_leader_endpoint(1, live, cache.get) == LeaderEndpoint(1, "10.0.0.1", 9092)
    # not in the cache yet: the address LeaderAndIsr gave
    assert resolve_leader_endpoint(2, live, cache.get) == LeaderEndpoint(2, "10.0.0.2", 9092)
    assert resolve_leader_endpoint(3, live, cache.get) is None
