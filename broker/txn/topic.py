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
import random
from collections.abc import Collection, Sequence

from broker.admin.topics import AdminError, create_topic, existing_topics, plan_topic
from broker.config import BrokerConfig
from broker.group.offsets_topic import creation_error
from broker.group.partitioner import partition_for
from protocol.errors import ErrorCode
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
    """Create the topic unless it exists: NONE once written (or already there),
    COORDINATOR_NOT_AVAILABLE when too few brokers are alive, or the AdminError's code
    of a refused plan. Raises what ZooKeeper raises (the caller logs it)."""
    partitions, factor, configs = txn_topic_settings(config)
    error = creation_error(len(live_brokers), factor)
    if error != ErrorCode.NONE:
        log.error(
            "not creating %s: %d brokers are alive, transaction.state.log.replication.factor is %d",
            TRANSACTION_TOPIC,
            len(live_brokers),
            factor,
        )
        return error
    existing: Collection[str] = set(await existing_topics(zk))
    if TRANSACTION_TOPIC in existing:
        return ErrorCode.NONE
    try:
        plan = plan_topic(
            TRANSACTION_TOPIC,
            partitions,
            factor,
            {},
            configs,
            live_brokers=live_brokers,
            existing_topics=existing,
            default_partitions=partitions,
            default_replication_factor=factor,
            rng=random.Random(),
        )
        await create_topic(zk, plan)
    except AdminError as exc:
        if exc.error_code == ErrorCode.TOPIC_ALREADY_EXISTS:
            return ErrorCode.NONE
        log.error("creating %s failed: %s", TRANSACTION_TOPIC, exc.message)
        return exc.error_code
    log.info(
        "created %s with %d partitions, replication factor %d",
        TRANSACTION_TOPIC,
        partitions,
        factor,
    )
    return ErrorCode.NONE
