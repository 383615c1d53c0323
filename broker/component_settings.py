"""The settings each broker component is built with, worked out from the BrokerConfig
(and this broker's registration in ZooKeeper).

The assembly (``broker.assembly``) calls these; they read configuration only, so a
component's constructor takes typed values rather than the whole configuration.
``min_insync_replicas`` is the one that reads the live configuration: the broker's value
may change (a dynamic broker config replaces ``BrokerBasics.config``) and so may a
topic's override, so it is worked out at each call, from a small memo.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from broker.apis.services import BrokerBasics
from broker.config import BrokerConfig, ConfigError
from broker.replication import FetcherConfig
from controller.controller import ControllerConfig
from storage.config_def import checked
from storage.log_keys import TOPIC_KEYS
from zk.model import BrokerInfo

#: the topic key that sets how many replicas acks=all waits for
_MIN_ISR = TOPIC_KEYS["min.insync.replicas"]

#: how many topics' min.insync.replicas a broker keeps worked out
_MIN_ISR_KNOWN_TOPICS = 10_000


def _min_insync_replicas(config: BrokerConfig, overrides: Mapping[str, str]) -> int:
    """A topic's min.insync.replicas: its override, else the broker's value."""
    default_min_isr = config.get_int("min.insync.replicas")
    try:
        value = checked(_MIN_ISR, overrides.get(_MIN_ISR.name))
    except ConfigError:  # refused at creation; the broker's value if one got through
        return default_min_isr
    return default_min_isr if value is None else int(value)


def min_insync_replicas(broker: BrokerBasics) -> Callable[[str], int]:
    """``topic -> min.insync.replicas`` as it is now: the topic's override, else the
    broker's current value."""
    # topic -> (the broker config and the overrides it was worked out from, the value).
    # Both are replaced, never changed in place (a dynamic config builds a new
    # BrokerConfig, TopicConfigs stores new overrides), so an entry is current while
    # both are the very objects it holds: acks=all asks twice per produce, and this
    # spares it parsing the same text each time.
    known: dict[str, tuple[BrokerConfig, Mapping[str, str], int]] = {}

    def of_topic(topic: str) -> int:
        config = broker.config
        overrides = broker.topic_configs.overrides(topic)
        entry = known.get(topic)
        if entry is not None and entry[0] is config and entry[1] is overrides:
            return entry[2]
        if len(known) >= _MIN_ISR_KNOWN_TOPICS:  # topics come and go: keep it bounded
            known.clear()
        value = _min_insync_replicas(config, overrides)
        known[topic] = (config, overrides, value)
        return value

    return of_topic


def fetcher_config(config: BrokerConfig, broker_id: int) -> FetcherConfig:
    """The replica fetchers' settings (replica.fetch.*, num.replica.fetchers)."""
    c = config
    return FetcherConfig(
        broker_id=broker_id,
        partition_max_bytes=c.get_int("replica.fetch.max.bytes"),
        response_max_bytes=c.get_int("replica.fetch.response.max.bytes"),
        max_wait_ms=c.get_int("replica.fetch.wait.max.ms"),
        min_bytes=c.get_int("replica.fetch.min.bytes"),
        backoff_ms=c.get_int("replica.fetch.backoff.ms"),
        socket_timeout_ms=c.get_int("replica.socket.timeout.ms"),
        num_fetchers=c.get_int("num.replica.fetchers"),
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
