"""The broker's worker pools, resized when a dynamic broker config changes their sizes.

Which component each dynamic size key resizes, all on the event loop:

=====================================  ==============================================
``num.io.threads``                     the data plane's request handler tasks
``num.network.threads``                Processors per data-plane listener
                                       (both by ``SocketServer.reconfigure``)
``num.replica.fetchers``               fetchers per source broker (ReplicaFetcherManager)
``background.threads``                 the scheduler's worker threads
``log.cleaner.threads`` and the        the log cleaner's thread tasks, I/O rate, dedupe
other ``log.cleaner.*`` dynamic keys   buffer and backoff (storage.cleaner_manager)
``num.recovery.threads.per.data.dir``  nothing live: log recovery runs at startup only,
                                       and the next startup reads the stored value
=====================================  ==============================================

AlterConfigs has checked the sizes (``broker.config.thread_counts``); a config read from
ZooKeeper at startup is applied whatever its step, since the static sizes the components
were built with are not a running pool's. The sizes live in ZooKeeper, so a restart
applies them again through the same path (``ConfigChangeListener.start``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.config import BrokerConfig
from broker.metrics import BrokerMetrics
from broker.network.socket_server import SocketServer
from broker.replication import ReplicaFetcherManager
from storage.cleaner_manager import LogCleaner, resize_cleaner_threads
from storage.config import CleanerConfig
from storage.scheduling import TaskScheduler
from timer.scheduler import Scheduler

log = logging.getLogger(__name__)


class PoolResizer:
    """``on_config(old, new)`` resizes the replica fetchers, the scheduler and the log
    cleaner (the socket server resizes its own pools)."""

    def __init__(
        self, fetchers: ReplicaFetcherManager, scheduler: Scheduler, cleaner: LogCleaner
    ) -> None:
        self._fetchers = fetchers
        self._scheduler = scheduler
        self._cleaner = cleaner

    def on_config(self, old: BrokerConfig, new: BrokerConfig) -> None:
        self._fetchers.resize(new.get_int("num.replica.fetchers"))
        self._scheduler.resize(new.get_int("background.threads"))
        cleaner_config = CleanerConfig.from_layers(new.config_layers)
        if cleaner_config != self._cleaner.config:
            current = self._cleaner.config
            self._cleaner.reconfigure(cleaner_config)
            scheduler: TaskScheduler = self._scheduler
            resize_cleaner_threads(scheduler, self._cleaner, current, cleaner_config)

    def watch(self, metrics: BrokerMetrics, sockets: SocketServer) -> None:
        """The pools' sizes as ``minikafka_worker_pool_size{pool=...}`` gauges."""
        sizes: dict[str, Callable[[], int]] = {
            "request_handlers": lambda: sockets.handler_count,
            "network_processors": lambda: sockets.processor_count,
            "replica_fetchers_per_broker": lambda: self._fetchers.config.num_fetchers,
            "replica_fetchers": lambda: len(self._fetchers.fetchers),
            "log_cleaner_threads": lambda: self._cleaner.thread_count,
            "background_threads": lambda: self._scheduler.threads,
        }
        for pool, size in sizes.items():
            metrics.watch_pool_size(pool, size)
