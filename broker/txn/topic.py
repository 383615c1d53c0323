"""Creating ``__transaction_state`` on first use, and where a transactional id lives.

The topic is made the first time a client looks for a transaction coordinator
(FindCoordinator with key type 1), by whichever broker is asked, through the path any
auto-created topic takes (broker.admin.topics: plan, then one ZooKeeper multi-op); the
controller elects its leaders, and their LeaderAndIsr makes each leader load its
partitions (broker.txn.store).

Its shape comes from the broker's settings at that moment:
``transaction.state.log.num.partitions`` partitions,
``transaction.state.log.replication.factor`` replicas, ``cleanup.policy=compact``,
``min.insync.replicas`` = ``transaction.state.log.min.isr``, ``segment.bytes`` =
``transaction.state.log.segment.bytes`` and no unclean election. As in Kafka (and as for
``__consumer_offsets``), it is not created while fewer brokers are alive than its
replication factor: the client is answered COORDINATOR_NOT_AVAILABLE (retriable) until
there are enough.

A transactional id's partition is ``abs(javaHashCode(id)) % partitionCount``, with Java's
String.hashCode and Kafka's abs (broker.group.partitioner: the same rule as groups').
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from broker.config import BrokerConfig
from broker.group.offsets_topic import create_internal_topic
from broker.group.partitioner import partition_for
from zk.facade import ZkFacade

log = logging.getLogger(__name__)

TRANSACTION_TOPIC = "__transaction_state"


def txn_partition_for(transactional_id: str, partition_count: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id``."""
    return partition_for(transactional_id, partition_count)


def txn_topic_settings(config: BrokerConfig) -> tuple[int, int, dict[str, str]]:
    """Partitions, replication factor and topic configs of ``__transaction_state``."""
    return (
        config.get_int("transaction.state.log.num.partitions"),
        config.get_int("transaction.state.log.replication.factor"),
        {
            "cleanup.policy": "compact",
            "min.insync.replicas": str(config.get_int("transaction.state.log.min.isr")),
            "segment.bytes": str(config.get_int("transaction.state.log.segment.bytes")),
            "unclean.leader.election.enable": "false",
        },
    )


async def create_txn_topic(zk: ZkFacade, config: BrokerConfig, live_brokers: Sequence[int]) -> int:
    """Create the topic unless it exists (broker.group.offsets_topic's
    create_internal_topic, as __consumer_offsets is made)."""
    partitions, factor, configs = txn_topic_settings(config)
    return await create_internal_topic(
        zk, TRANSACTION_TOPIC, "transaction.state.log.replication.factor", partitions,
        factor, configs, live_brokers,
    )  # fmt: skip
