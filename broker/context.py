"""BrokerContext: everything a request handler may reach, in one place (one per broker).

``BrokerServer`` builds it during startup, in Kafka's order, and hands it to ``KafkaApis``;
each handler is ``async def handle(ctx: BrokerContext, request)``. Handlers never import
the server, and the server never reaches into a handler: the context is the only seam,
so a unit test builds a context of fakes and calls a handler directly.

The server sets every service; a unit test sets only those its handler uses, so the
services are optional here. A handler that cannot work without one asks for it with
``require`` (a context without it is a wiring bug: the request fails, and the network
answers it with an error as for any failed handler).
Not safe across threads: everything here lives on the broker's event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from broker.config import BrokerConfig
from broker.metrics import BrokerMetrics
from storage.topic_configs import TopicConfigs
from timer.clock import Clock

if TYPE_CHECKING:
    from broker.delayed.fetch import DelayedFetch
    from broker.delayed.produce import DelayedProduce
    from broker.group.coordinator import GroupCoordinator
    from broker.group.manager import GroupMetadataManager
    from broker.metadata_cache import MetadataCache
    from broker.producer_id_manager import ProducerIdManager
    from broker.replica_manager import ReplicaManager
    from controller.controller import KafkaController
    from storage import LogManager
    from timer import DelayedOperation, DelayedOperationPurgatory, Scheduler
    from zk.facade import ZkFacade

T = TypeVar("T")


@dataclass(eq=False)
class BrokerContext:
    """The broker's services. ``broker_epoch`` is the czxid of our /brokers/ids znode,
    known once registered (-1 before). ``controller`` is set once the controller started
    (after the socket server: the first requests may find it None)."""

    broker_id: int
    cluster_id: str
    config: BrokerConfig
    clock: Clock
    metrics: BrokerMetrics
    metadata_cache: MetadataCache
    log_manager: LogManager | None = None
    #: the only owner of Partition objects
    replica_manager: ReplicaManager | None = None
    zk: ZkFacade | None = None
    controller: KafkaController | None = None
    produce_purgatory: DelayedOperationPurgatory[DelayedProduce] | None = None
    fetch_purgatory: DelayedOperationPurgatory[DelayedFetch] | None = None
    #: Kafka's topic purgatory: CreateTopics, CreatePartitions and DeleteTopics responses
    #: waiting for the metadata cache, watched under ``topic_key(name)``
    create_topics_purgatory: DelayedOperationPurgatory[DelayedOperation] | None = None
    producer_id_manager: ProducerIdManager | None = None
    scheduler: Scheduler | None = None
    broker_epoch: int = -1
    #: API key -> (min, max) version this broker serves (KafkaApis fills it in)
    advertised_versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: the topics' overrides (/config/topics/<t>) as read; the LogManager shares it
    topic_configs: TopicConfigs = field(default_factory=TopicConfigs)
    #: the classic group protocol over the groups this broker coordinates
    group_coordinator: GroupCoordinator | None = None
    #: __consumer_offsets: where groups live, their records, loading (broker.group)
    group_store: GroupMetadataManager | None = None
    #: the loop the broker runs on, taken once at startup (``event_loop``)
    loop: asyncio.AbstractEventLoop | None = None

    @property
    def event_loop(self) -> asyncio.AbstractEventLoop:
        """The broker's event loop, for the futures a handler answers with. Taken once:
        ``asyncio.get_running_loop()`` makes a system call per call on Python 3.11, and
        the Produce and Fetch handlers would ask it once per request. A context built
        without it (a unit test's) answers with the running loop."""
        loop = self.loop
        return asyncio.get_running_loop() if loop is None else loop


def require(service: T | None, name: str) -> T:
    """``service``, which the handler cannot do without (``name`` says which one)."""
    if service is None:
        raise RuntimeError(f"this broker context has no {name}")
    return service
