"""What every view of the console reaches: the cluster's client, the settings, the clock,
the metrics sampler, the groups' lag history and the CSRF guard. One ``Console`` per
running application, made by ``web.app.create_app`` around a client its caller owns (so
tests hand in a client of a real cluster, and the command hands in one built from
``--bootstrap-server`` and ``--command-config``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from client.client import KafkaClient
from timer.clock import Clock
from web.lag_history import LagHistory
from web.metrics import MetricsSampler
from web.safety import Csrf


@dataclass(frozen=True)
class ConsoleSettings:
    #: the bootstrap servers, as shown in pages and error messages
    bootstrap: str
    read_only: bool
    #: ``[ID=]URL`` of each broker's Prometheus endpoint
    metrics_urls: tuple[str, ...]
    #: name -> password for HTTP basic authentication; None: no authentication
    users: Mapping[str, str] | None
    #: seconds between two scrapes of the metrics endpoints, and how many are kept
    scrape_interval_s: float
    scrape_keep: int


@dataclass
class Console:
    client: KafkaClient
    settings: ConsoleSettings
    clock: Clock
    sampler: MetricsSampler
    csrf: Csrf = field(default_factory=Csrf)
    #: ten minutes of each group's lag, a point at most every two seconds
    lag_history: LagHistory = field(default_factory=lambda: LagHistory(600_000, 2_000))
