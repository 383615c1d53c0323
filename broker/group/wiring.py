"""Building the group coordinator from the broker's services (for broker.assembly).

Two objects, each built by a start-up step of its own (the coordinator's purgatories
start between them):

- the store over ``__consumer_offsets`` (:func:`build_group_store`): its partition count
  the metadata cache's once the topic exists, the topic created on first use with the
  broker's settings as they are then (broker.group.offsets_topic), told of the
  ReplicaManager's leadership changes (the first to hear of them: the transaction store
  chains itself after it), watched by the metrics;
- the coordinator of the classic group protocol over the store's groups
  (:func:`build_group_coordinator`), told by the store when groups load and unload, its
  rebalances, commits and group states counted by the metrics.

The settings are read once, here.
"""

from __future__ import annotations

from broker.admin.topics import OFFSETS_TOPIC
from broker.apis.services import BrokerBasics
from broker.group.coordinator import GroupConfig, GroupCoordinator
from broker.group.delayed import DelayedHeartbeat
from broker.group.manager import GroupMetadataManager, OffsetsConfig
from broker.group.offsets_topic import create_offsets_topic
from broker.metrics import BrokerMetrics
from broker.replica_manager import ReplicaManager
from timer import DelayedOperation, DelayedOperationPurgatory
from zk.facade import ZkFacade


def build_group_store(
    basics: BrokerBasics, zk: ZkFacade, replicas: ReplicaManager, metrics: BrokerMetrics
) -> GroupMetadataManager:
    cache = basics.metadata_cache
    store = GroupMetadataManager(
        replicas,
        basics.clock,
        OffsetsConfig.from_broker(basics.config),
        topic_partition_count=lambda: cache.num_partitions(OFFSETS_TOPIC),
        create_offsets_topic=lambda: create_offsets_topic(
            zk, basics.config, cache.alive_broker_ids()
        ),
    )
    replicas.on_leadership_change = store.on_leadership_change  # back-reference
    metrics.watch_group_store(store)
    return store


def build_group_coordinator(
    basics: BrokerBasics,
    store: GroupMetadataManager,
    rebalances: DelayedOperationPurgatory[DelayedOperation],
    heartbeats: DelayedOperationPurgatory[DelayedHeartbeat],
    metrics: BrokerMetrics,
) -> GroupCoordinator:
    coordinator = GroupCoordinator(
        store,
        GroupConfig.from_values(basics.config.get_int),
        basics.clock,
        rebalances,
        heartbeats,
        on_rebalance=metrics.group_rebalances.labels().inc,
        on_offsets_committed=metrics.group_offset_commits.labels().inc,
    )
    store.listener = coordinator  # back-reference
    metrics.watch_groups(lambda: {state.value: n for state, n in coordinator.states().items()})
    return coordinator
