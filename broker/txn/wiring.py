"""Building the transaction coordinator from the broker's services (for broker.assembly).

What it is made of: the store over ``__transaction_state`` (its partition count the
metadata cache's once the topic exists), the marker channel (leaders from the metadata
cache; WriteTxnMarkers sent over the inter-broker listener with the broker's inter-broker
``ClientSecurity``, ``request.timeout.ms`` per request, retried every
``transaction.marker.retry.backoff.ms``), the producer id allocator shared with
idempotent producers, AddOffsetsToTxn's group partitions from the group store, and the
two periodic tasks for the broker's scheduler (:func:`txn_tasks`): ``transaction-abort`` (every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``) and
``transactionalId-expiration`` (every
``transaction.remove.expired.transaction.cleanup.interval.ms``). The settings are read
once, here; the topic's shape is read from the configuration as it is when the topic is
created.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.admin.topics import OFFSETS_TOPIC
from broker.apis.services import BrokerBasics
from broker.blocking import in_thread
from broker.group.manager import GroupMetadataManager
from broker.producer_id_manager import ProducerIdManager
from broker.replica_manager import ReplicaManager
from broker.security.inter_broker import inter_broker_security
from broker.txn.coordinator import TransactionCoordinator, TxnConfig
from broker.txn.markers import MarkerChannel
from broker.txn.sender import LocalWriter, TcpMarkerSender
from broker.txn.store import TransactionStateManager, TxnStoreConfig
from broker.txn.topic import TRANSACTION_TOPIC, create_txn_topic
from broker.txn.verification import PartitionVerifier
from client.connection import ConnectionConfig
from protocol.values import TopicPartition
from storage import TaskSpec
from zk.facade import ZkFacade


def build_transaction_coordinator(
    basics: BrokerBasics,
    zk: ZkFacade,
    replicas: ReplicaManager,
    producer_ids: ProducerIdManager,
    group_store: GroupMetadataManager,
) -> tuple[TransactionStateManager, TransactionCoordinator]:
    """The store and the coordinator, bound to each other, and
    the ReplicaManager's leadership changes told to the store after whoever heard of them
    before (the group store)."""
    config, cache = basics.config, basics.metadata_cache
    store = TransactionStateManager(
        replicas,
        basics.clock,
        TxnStoreConfig.from_broker(config),
        topic_partition_count=lambda: cache.num_partitions(TRANSACTION_TOPIC),
        run_in_thread=in_thread,
    )
    listener = config.inter_broker_listener_name
    sender = TcpMarkerSender(
        lambda broker_id: cache.alive_endpoint(broker_id, listener),
        ConnectionConfig(
            client_id=f"broker-{basics.broker_id}-txn-markers",
            request_timeout_s=config.get_int("request.timeout.ms") / 1000,
            security=inter_broker_security(config),
        ),
    )
    markers = MarkerChannel(
        lambda tp: cache.leader(tp.topic, tp.partition),
        cache.contains_topic,
        sender,
        retry_backoff_ms=config.get_int("transaction.marker.retry.backoff.ms"),
    )
    txn_config = TxnConfig.from_broker(config)
    coordinator = TransactionCoordinator(
        store,
        producer_ids,
        markers,
        basics.clock,
        txn_config,
        offsets_partition_of=lambda g: TopicPartition(OFFSETS_TOPIC, group_store.partition_for(g)),
        partition_exists=lambda tp: cache.partition(tp.topic, tp.partition) is not None,
        create_topic=lambda: create_txn_topic(zk, basics.config, cache.alive_broker_ids()),
    )
    store.listener = coordinator  # back-reference
    before = replicas.on_leadership_change

    def on_leadership_change(
        leaders: Mapping[TopicPartition, int], followers: Mapping[TopicPartition, int]
    ) -> None:
        if before is not None:
            before(leaders, followers)
        store.on_leadership_change(leaders, followers)

    replicas.on_leadership_change = on_leadership_change  # back-reference
    return store, coordinator


def serve_markers_locally(
    coordinator: TransactionCoordinator, broker_id: int, writer: LocalWriter
) -> None:
    """Markers for partitions led by this broker go to ``writer`` in-process
    (broker.txn.sender) instead of over a loopback connection."""
    sender = coordinator.markers.sender
    if isinstance(sender, TcpMarkerSender):
        sender.serve_locally(broker_id, writer)


def txn_tasks(coordinator: TransactionCoordinator) -> list[TaskSpec]:
    """The coordinator's periodic tasks, for the broker's table of scheduled tasks."""
    config = coordinator.config
    return [
        TaskSpec("transaction-abort", coordinator.abort_timed_out,
                 config.abort_interval_ms, config.abort_interval_ms, False),
        TaskSpec("transactionalId-expiration", coordinator.expire_ids,
                 config.expiry_interval_ms, config.expiry_interval_ms, False),
    ]  # fmt: skip


def build_partition_verifier(
    basics: BrokerBasics, store: TransactionStateManager, coordinator: TransactionCoordinator
) -> PartitionVerifier:
    """The leaders' KIP-890 check (broker.txn.verification): a transactional id's
    coordinator is the leader of its ``__transaction_state`` partition in the metadata
    cache; this broker's own coordinator answers in-process."""
    config, cache = basics.config, basics.metadata_cache

    def coordinator_of(transactional_id: str) -> int | None:
        return cache.leader(TRANSACTION_TOPIC, store.partition_for(transactional_id))

    listener = config.inter_broker_listener_name
    return PartitionVerifier(
        basics.broker_id,
        coordinator_of,
        lambda broker_id: cache.alive_endpoint(broker_id, listener),
        coordinator.verify_partitions,
        ConnectionConfig(
            client_id=f"broker-{basics.broker_id}-txn-verification",
            request_timeout_s=config.get_int("request.timeout.ms") / 1000,
            security=inter_broker_security(config),
        ),
    )
