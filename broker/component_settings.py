"""The settings each broker component is built with, worked out from the BrokerConfig
(and this broker's registration in ZooKeeper).

The assembly (``broker.assembly``) calls these; they read configuration only, so a
component's constructor takes typed values rather than the whole configuration.
``min_insync_replicas`` is the one that reads the live configuration: the broker's value
may change (a dynamic broker config replaces ``BrokerBasics.config``) and so may a
topic's override, so it is worked out at each call (config.effective memoizes it); the
replication throttles read their rates and lists live the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from broker.apis.services import BrokerBasics
from broker.config import BrokerConfig
from broker.replication import FetcherConfig
from broker.replication.quota import WindowedRate
from broker.replication.throttle import ReplicationThrottle, ThrottleSide
from broker.security.inter_broker import (
    control_plane_listener_name,
    control_plane_security,
    inter_broker_security,
)
from controller.controller import ControllerConfig
from controller.tcp_channel import ChannelConfig
from zk.model import BrokerInfo


def min_insync_replicas(broker: BrokerBasics) -> Callable[[str], int]:
    """``topic -> min.insync.replicas`` as it is now: the topic's effective value over the
    broker's current layers (a dynamic broker config replaces ``broker.config``, so it is
    read at each call; ``BrokerConfig.topic_value`` remembers the answers)."""

    def of_topic(topic: str) -> int:
        overrides = broker.topic_configs.overrides(topic)
        return int(broker.config.topic_value("min.insync.replicas", overrides))

    return of_topic


def replication_throttle(broker: BrokerBasics, side: ThrottleSide) -> ReplicationThrottle:
    """One side's replication throttle: its windows from the static
    ``replication.quota.window.*`` keys, its rate and the topics' lists read live."""
    c = broker.config
    quota = WindowedRate(
        c.get_int("replication.quota.window.num"),
        c.get_int("replication.quota.window.size.seconds") * 1000,
    )
    return ReplicationThrottle(
        side,
        broker.broker_id,
        broker.clock,
        quota,
        rate=lambda: broker.config.get_int(side.rate_key),
        overrides=broker.topic_configs.overrides,
    )


def fetcher_config(config: BrokerConfig, broker_id: int) -> FetcherConfig:
    """The replica fetchers' settings (replica.fetch.*, num.replica.fetchers)."""
    c = config
    return FetcherConfig(
        broker_id=broker_id,
        security=inter_broker_security(config),
        partition_max_bytes=c.get_int("replica.fetch.max.bytes"),
        response_max_bytes=c.get_int("replica.fetch.response.max.bytes"),
        max_wait_ms=c.get_int("replica.fetch.wait.max.ms"),
        min_bytes=c.get_int("replica.fetch.min.bytes"),
        backoff_ms=c.get_int("replica.fetch.backoff.ms"),
        socket_timeout_ms=c.get_int("replica.socket.timeout.ms"),
        num_fetchers=c.get_int("num.replica.fetchers"),
    )


def control_channel_config(config: BrokerConfig) -> ChannelConfig:
    """How the controller (and a stopping broker, asking it) reaches brokers: the
    control-plane listener, else the inter-broker one, with its security."""
    return ChannelConfig(
        control_plane_security(config), listener_name=control_plane_listener_name(config)
    )


def controller_config(config: BrokerConfig) -> ControllerConfig:
    """The controller's settings (elections, preferred leaders, topic deletion)."""
    c = config
    return ControllerConfig(
        unclean_leader_election_enable=c.get_bool("unclean.leader.election.enable"),
        auto_leader_rebalance_enable=c.get_bool("auto.leader.rebalance.enable"),
        leader_imbalance_check_interval_ms=(
            c.get_int("leader.imbalance.check.interval.seconds") * 1000
        ),
        leader_imbalance_per_broker_percentage=c.get_int("leader.imbalance.per.broker.percentage"),
        zookeeper_session_timeout_ms=c.get_int("zookeeper.session.timeout.ms"),
        delete_topic_enable=c.get_bool("delete.topic.enable"),
    )


def broker_registration(
    config: BrokerConfig, broker_id: int, bound_port: Callable[[str], int]
) -> BrokerInfo:
    """Our registration: every advertised listener, with the port actually bound
    (``bound_port(listener)``: listeners configured with port 0 pick one)."""
    endpoints = []
    for ep in config.advertised_listeners:
        port = ep.port
        if port == 0:
            port = bound_port(ep.listener_name)
        host = ep.host if ep.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        endpoints.append(dataclasses.replace(ep, host=host, port=port))
    return BrokerInfo(broker_id, tuple(endpoints), config.get_str("broker.rack"))
