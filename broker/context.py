"""BrokerContext: everything a request handler may reach, in one place (one per broker).

``BrokerServer`` builds it during startup, in Kafka's order, and hands it to ``KafkaApis``;
each handler is ``async def handle(ctx: BrokerContext, request)``. Handlers never import
the server, and the server never reaches into a handler: the context is the only seam,
so a unit test builds a context of fakes and calls a handler directly.

Fields that belong to packages built in parallel (the data path's ReplicaManager and
ProducerIdManager) are typed loosely here on purpose; their own modules document them.
Not safe across threads: everything here lives on the broker's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker.config import BrokerConfig
from broker.metrics import BrokerMetrics
from storage.topic_configs import TopicConfigs
from timer.clock import Clock

if TYPE_CHECKING:
    from broker.metadata_cache import MetadataCache
    from controller.controller import KafkaController
    from storage import LogManager
    from timer import DelayedOperationPurgatory, Scheduler
    from zk.client import KafkaZkClient


@dataclass(eq=False)
class BrokerContext:
    """The broker's services. ``broker_epoch`` is the czxid of our /brokers/ids znode,
    known once registered (-1 before)."""

    broker_id: int
    cluster_id: str
    config: BrokerConfig
    clock: Clock
    metrics: BrokerMetrics
    metadata_cache: MetadataCache
    log_manager: LogManager | Any = None
    #: broker.replica_manager.ReplicaManager: the only owner of Partition objects
    replica_manager: Any = None
    #: zk.client.KafkaZkClient (None in unit tests without ZooKeeper)
    zk: KafkaZkClient | Any = None
    controller: KafkaController | Any = None
    produce_purgatory: DelayedOperationPurgatory[Any] | Any = None
    fetch_purgatory: DelayedOperationPurgatory[Any] | Any = None
    create_topics_purgatory: DelayedOperationPurgatory[Any] | Any = None
    #: broker.producer_id_manager.ProducerIdManager
    producer_id_manager: Any = None
    scheduler: Scheduler | Any = None
    broker_epoch: int = -1
    #: the topics' overrides (/config/topics/<t>) as read; the LogManager shares it
    topic_configs: TopicConfigs = field(default_factory=TopicConfigs)
    #: extra services added by later issues (group coordinator, ...), by name
    extras: dict[str, Any] = field(default_factory=dict)
