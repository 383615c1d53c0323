"""Per-broker Prometheus metrics and their HTTP exposition endpoint.

- ``catalog``: every metric declared once (name, type, help, labels, operator-facing or
  not) and ``OPERATOR_METRICS``, the names the alert rules and the dashboard may use,
  derived from those declarations;
- ``engine``: the lock-free counter and histogram families the request path updates;
- ``collectors``: families read at scrape time from the objects that keep the numbers
  (logs, log cleaner, group store, follower lags, idle time);
- ``broker_metrics``: ``BrokerMetrics``, one broker's registry and metric objects;
- ``loop_lag``: ``EventLoopLagMonitor``, the event-loop lag probe;
- ``http_server``: ``MetricsHttpServer``, ``GET /metrics``.
"""

from broker.metrics.broker_metrics import BrokerMetrics, RequestMetrics
from broker.metrics.catalog import OPERATOR_METRICS
from broker.metrics.engine import LocalCounter, LocalHistogram
from broker.metrics.http_server import MetricsHttpServer
from broker.metrics.loop_lag import EventLoopLagMonitor

__all__ = [
    "OPERATOR_METRICS",
    "BrokerMetrics",
    "EventLoopLagMonitor",
    "LocalCounter",
    "LocalHistogram",
    "MetricsHttpServer",
    "RequestMetrics",
]
