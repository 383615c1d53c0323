"""BrokerServer: one broker's start-up and shutdown, in Kafka's order.

The object graph and the order of its steps are ``broker.assembly``'s; running the
steps forward and the started ones backward is ``broker.lifecycle``'s. This facade is
what the ``minikafka server`` command and the tests hold: ``await startup()``, then
``await shutdown()`` (also after a failed or cancelled startup: it undoes whatever had
started).

Shutdown (SIGTERM; KafkaServer.shutdown), as the reverse of start-up with the steps
``broker.assembly`` places for it: controlled shutdown (ask the controller to move our
leaderships away) when enabled, the metrics endpoint, then the answers the group
coordinator holds (NOT_COORDINATOR) and every purgatory's waiters (answered with what
they have), then the listeners close and in-flight requests finish; the config change
listener, the controller (resigning if active), the group store, the ReplicaManager,
the ISR writer, the purgatories, the log cleaner and the scheduler; our registration and
the ZooKeeper session; then every log is flushed, with the checkpoints and the
clean-shutdown marker, without a bound. Each step runs even when an earlier one failed;
the steps that need ZooKeeper are skipped, or given up, while it is unreachable.
"""

from __future__ import annotations

import logging

from broker.assembly import BrokerAssembly
from broker.config import BrokerConfig
from broker.lifecycle import Lifecycle
from broker.metrics import BrokerMetrics
from broker.startup import StartupError, ZkConnect
from broker.zk_reachability import ZooKeeperReachability
from controller.controller import KafkaController
from storage import TaskSpec
from timer import Scheduler
from timer.clock import Clock, SystemClock
from zk.facade import ZkFacade

log = logging.getLogger(__name__)


async def _connect(hosts: str, session_s: float, connect_s: float) -> ZkFacade:
    return await ZkFacade.connect(hosts, session_s, connect_s)


class BrokerServer:
    """One broker. Event-loop bound. ``zk_connect`` opens the ZooKeeper session."""

    def __init__(
        self,
        config: BrokerConfig,
        clock: Clock | None = None,
        *,
        zk_connect: ZkConnect = _connect,
    ) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.metrics = BrokerMetrics()
        self.parts = BrokerAssembly(config, self.clock, self.metrics, zk_connect)
        self.lifecycle = Lifecycle(self.parts.steps(), self.parts.reachability)

    @property
    def started(self) -> bool:
        """Whether every start-up step ran."""
        return self.lifecycle.completed

    @property
    def broker_id(self) -> int:
        """This broker's id (-1 until ZooKeeper gave or confirmed it)."""
        return self.parts.broker_id

    @property
    def controller(self) -> KafkaController:
        return self.parts.controller

    @property
    def scheduler(self) -> Scheduler:
        return self.parts.scheduler

    @property
    def zk_reachability(self) -> ZooKeeperReachability | None:
        return self.parts.reachability()

    def scheduled_tasks(self) -> list[TaskSpec]:
        """Every periodic task the broker scheduled at startup (``broker.assembly``)."""
        return self.parts.scheduled_tasks()

    async def startup(self) -> None:
        await self.lifecycle.start()
        log.info(
            "[BrokerServer id=%d] started (cluster %s, broker epoch %d)",
            self.broker_id,
            self.parts.cluster_id,
            self.parts.controller_link.broker_epoch,
        )

    async def shutdown(self) -> None:
        """Graceful shutdown (idempotent); see the module doc for the order."""
        log.info("[BrokerServer id=%d] shutting down", self.broker_id)
        await self.lifecycle.stop()
        log.info("[BrokerServer id=%d] shut down completed", self.broker_id)


__all__ = ["BrokerServer", "StartupError"]
