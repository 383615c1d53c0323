"""MetadataCache: UpdateMetadata bodies in, consistent snapshots out."""

from __future__ import annotations

import uuid

from broker.metadata_cache import MetadataCache
from protocol.messages import UpdateMetadataRequest as U
from protocol.values import LEADER_DURING_DELETE

TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")


def _broker(i: int, rack: str | None = None) -> U.UpdateMetadataBroker:
    return U.UpdateMetadataBroker(
        id=i,
        endpoints=[
            U.UpdateMetadataEndpoint(
                port=9092 + i, host="127.0.0.1", listener="PLAINTEXT", security_protocol=0
            ),
            U.UpdateMetadataEndpoint(
                port=9192 + i, host="127.0.0.1", listener="CONTROLLER", security_protocol=0
            ),
        ],
        rack=rack,
    )


def _state(
    p: int, leader: int, replicas: list[int], epoch: int = 0
) -> U.UpdateMetadataPartitionState:
    return U.UpdateMetadataPartitionState(
        partition_index=p,
        controller_epoch=1,
        leader=leader,
        leader_epoch=epoch,
        isr=list(replicas),
        zk_version=0,
        replicas=list(replicas),
        offline_replicas=[],
    )


def _update(
    topics: dict[str, list[U.UpdateMetadataPartitionState]],
    brokers: list[int] = [0, 1, 2],  # noqa: B006 -- read only
    controller: int = 1,
    topic_id: uuid.UUID = TOPIC_ID,
) -> U:
    return U(
        controller_id=controller,
        controller_epoch=1,
        broker_epoch=-1,
        topic_states=[
            U.UpdateMetadataTopicState(topic_name=t, topic_id=topic_id, partition_states=ps)
            for t, ps in topics.items()
        ],
        live_brokers=[_broker(b) for b in brokers],
    )


def test_empty_cache_knows_nothing() -> None:
    cache = MetadataCache(0)
    assert cache.alive_brokers() == []
    assert cache.controller_id is None
    assert cache.topic_names() == []
    assert cache.partition("t", 0) is None
    assert cache.topic_id("t") == uuid.UUID(int=0)


def test_update_sets_brokers_controller_and_partitions() -> None:
    cache = MetadataCache(0)
    touched, deleted = cache.update_metadata(
        _update({"t": [_state(0, 0, [0, 1]), _state(1, 1, [1, 2])]})
    )
    assert touched == {"t"} and deleted == []
    assert cache.alive_broker_ids() == [0, 1, 2]
    assert cache.controller_id == 1
    assert cache.alive_endpoint(2, "plaintext") == ("127.0.0.1", 9094)
    assert cache.alive_endpoint(2, "CONTROLLER") == ("127.0.0.1", 9194)
    assert cache.alive_endpoint(7, "PLAINTEXT") is None
    assert cache.num_partitions("t") == 2
    info = cache.partition("t", 1)
    assert info is not None and info.leader == 1 and info.replicas == (1, 2)
    assert cache.topic_id("t") == TOPIC_ID
    assert cache.topic_name(TOPIC_ID) == "t"


def test_later_updates_merge_partitions_and_replace_brokers() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(_update({"t": [_state(0, 0, [0, 1])]}))
    cache.update_metadata(_update({"t": [_state(1, 2, [2, 0])]}, brokers=[0, 2], controller=2))
    assert sorted(cache.partitions("t") or {}) == [0, 1]
    assert cache.alive_broker_ids() == [0, 2]
    assert cache.controller_id == 2


def test_leader_must_be_alive() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(_update({"t": [_state(0, 1, [1]), _state(1, -1, [2])]}, brokers=[0, 2]))
    assert cache.leader("t", 0) is None  # broker 1 is not live
    assert cache.leader("t", 1) is None  # no leader at all
    assert not cache.has_leaders("t", [1])
    assert cache.has_leaders("t", [0])  # a leader is named, even if not live
    assert not cache.has_leaders("t", [0, 5])  # partition 5 unknown


def test_leader_during_delete_removes_partitions_and_the_topic() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(_update({"t": [_state(0, 0, [0]), _state(1, 1, [1])]}))
    _, deleted = cache.update_metadata(_update({"t": [_state(0, LEADER_DURING_DELETE, [0])]}))
    assert deleted == [("t", 0)]
    assert cache.contains_topic("t")
    _, deleted = cache.update_metadata(_update({"t": [_state(1, LEADER_DURING_DELETE, [1])]}))
    assert deleted == [("t", 1)]
    assert not cache.contains_topic("t")
    assert cache.topic_id("t") == uuid.UUID(int=0)


def test_zero_topic_id_keeps_the_known_one() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(_update({"t": [_state(0, 0, [0])]}))
    cache.update_metadata(_update({"t": [_state(0, 1, [0, 1], 1)]}, topic_id=uuid.UUID(int=0)))
    assert cache.topic_id("t") == TOPIC_ID
    info = cache.partition("t", 0)
    assert info is not None and info.leader_epoch == 1


def test_readers_keep_a_consistent_snapshot() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(_update({"t": [_state(0, 0, [0])]}))
    before = cache.snapshot
    cache.update_metadata(_update({"u": [_state(0, 1, [1])]}, brokers=[1]))
    assert set(before.partitions) == {"t"} and set(before.brokers) == {0, 1, 2}
    assert set(cache.snapshot.partitions) == {"t", "u"}


def test_ungrouped_v4_bodies_are_read() -> None:
    cache = MetadataCache(0)
    state = _state(3, 0, [0])
    state.topic_name = "old"
    body = U(
        controller_id=0,
        controller_epoch=1,
        ungrouped_partition_states=[state],
        live_brokers=[_broker(0)],
    )
    cache.update_metadata(body)
    assert cache.num_partitions("old") == 1
