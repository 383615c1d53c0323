"""Creating ``__consumer_offsets`` on first use.

The topic is made the first time a client looks for a group coordinator (FindCoordinator)
or names it in a Metadata request, by whichever broker is asked, through the same path as
any auto-created topic (broker.admin.topics: plan, then one ZooKeeper multi-op); the
controller then elects its leaders, and their LeaderAndIsr makes each leader load its
partitions' groups.

Its shape comes from the broker's ``offsets.topic.*`` settings at that moment:
``offsets.topic.num.partitions`` partitions, ``offsets.topic.replication.factor``
replicas, ``cleanup.policy=compact`` and ``offsets.topic.segment.bytes`` segments. As in
Kafka, it is not created while fewer brokers are alive than its replication factor asks
for -- a topic with fewer replicas than configured would stay under-replicated for good --
and the client is answered COORDINATOR_NOT_AVAILABLE (retriable) meanwhile; so is it
while the topic is being created and its leaders elected.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Collection, Sequence

from broker.admin.topics import (
    OFFSETS_TOPIC,
    AdminError,
    create_topic,
    existing_topics,
    offsets_topic_settings,
    plan_topic,
)
from broker.config import BrokerConfig
from protocol.errors import ErrorCode
from zk.facade import ZkFacade

log = logging.getLogger(__name__)


def creation_error(alive_brokers: int, replication_factor: int) -> int:
    """NONE when the topic may be created with ``alive_brokers`` alive, else
    COORDINATOR_NOT_AVAILABLE (too few brokers for its replication factor)."""
    if alive_brokers < replication_factor:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE


async def create_offsets_topic(
    zk: ZkFacade, config: BrokerConfig, live_brokers: Sequence[int]
) -> int:
    """Create the topic unless it exists: see :func:`create_internal_topic`."""
    partitions, factor, configs = offsets_topic_settings(config)
    return await create_internal_topic(
        zk, OFFSETS_TOPIC, "offsets.topic.replication.factor", partitions, factor, configs,
        live_brokers,
    )  # fmt: skip


async def create_internal_topic(
    zk: ZkFacade,
    topic: str,
    factor_key: str,
    partitions: int,
    factor: int,
    configs: dict[str, str],
    live_brokers: Sequence[int],
) -> int:
    """Create an internal topic (__consumer_offsets, __transaction_state) unless it
    exists: NONE once written (or already there), COORDINATOR_NOT_AVAILABLE when too few
    brokers are alive for ``factor`` (the key ``factor_key`` gives it), or the
    AdminError's code of a refused plan. Raises what ZooKeeper raises (the caller logs it)."""
    error = creation_error(len(live_brokers), factor)
    if error != ErrorCode.NONE:
        log.error(
            "not creating %s: %d brokers are alive, %s is %d",
            topic, len(live_brokers), factor_key, factor,
        )  # fmt: skip
        return error
    existing: Collection[str] = set(await existing_topics(zk))
    if topic in existing:
        return ErrorCode.NONE
    try:
        plan = plan_topic(
            topic,
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
        log.error("creating %s failed: %s", topic, exc.message)
        return exc.error_code
    log.info("created %s with %d partitions, replication factor %d", topic, partitions, factor)
    return ErrorCode.NONE
