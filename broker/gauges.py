"""Wiring the broker's gauges and the operators' metrics (broker.metrics) to the
components they read, once those exist (the assembly's "gauges" step, after the
controller started): a gauge is a function the scrape calls, so nothing here runs per
request."""

from __future__ import annotations

import time

from broker.metrics import BrokerMetrics
from broker.network import SocketServer
from broker.replica_manager import ReplicaManager
from controller.controller import KafkaController
from storage import LogManager
from zk.facade import ZkFacade
from zk.latency import observe_request_latency


def watch_gauges(metrics: BrokerMetrics, controller: KafkaController, zk: ZkFacade) -> None:
    metrics.controller_active.set_function(lambda: 1 if controller.is_active else 0)
    metrics.offline_partitions.set_function(lambda: controller.offline_partition_count)
    metrics.watch_unclean_leader_elections(lambda: controller.unclean_leader_elections)
    metrics.zookeeper_connected.set_function(lambda: 1 if zk.kazoo.connected else 0)


def watch_operator_metrics(
    m: BrokerMetrics,
    rm: ReplicaManager,
    lm: LogManager,
    zk: ZkFacade,
    controller: KafkaController,
    sockets: SocketServer,
) -> None:
    """Wire the operators' metrics (broker.metrics, "the operators' set") to what they
    read: replica counts, logs and log directories, idle ratios, the ZooKeeper session
    and its request latency, the controller's events."""
    m.partition_count.set_function(lambda: len(rm.all_partitions()))
    m.leader_count.set_function(lambda: len(rm.leader_partitions()))
    m.watch_logs(lambda: lm.log_dirs, lm.all_logs)
    m.watch_last_stable_offsets(lm.all_logs, time.monotonic)
    m.watch_idle(sockets.idle_seconds)
    m.watch_connection_principals(sockets.principal_counts)
    m.watch_zookeeper_state(lambda: str(zk.kazoo.state))
    observe_request_latency(zk.kazoo, m.zookeeper_request_latency.observe)
    events = controller.events
    m.controller_event_queue_size.set_function(events.queue_size)
    events.observer = m.observe_controller_event
