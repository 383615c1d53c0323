"""Reading topics' overrides (``/config/topics/<t>``) into the broker's TopicConfigs.

Overrides are written once, when a topic is created, so a topic's are read the first time
the broker needs them (a LeaderAndIsr making its logs, a DescribeConfigs) and kept until
the topic is deleted (UpdateMetadata forgets them then).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from storage.topic_configs import TopicConfigs
from zk.facade import ZkFacade

log = logging.getLogger(__name__)


async def _read(zk: ZkFacade, configs: TopicConfigs, topic: str) -> Mapping[str, str]:
    overrides: dict[str, str] = await zk.get_topic_config(topic)
    configs.set(topic, overrides)
    return overrides


async def topic_overrides(zk: ZkFacade, configs: TopicConfigs, topic: str) -> Mapping[str, str]:
    """The overrides of ``topic`` (into ``configs``), read from ZooKeeper unless known."""
    known = configs.get(topic)
    if known is not None:
        return known
    return await _read(zk, configs, topic)


async def load_topic_configs(zk: ZkFacade, configs: TopicConfigs, topics: Iterable[str]) -> None:
    """Read the overrides of the topics not known yet (into ``configs``). A failure is
    logged: the broker defaults apply until a later request reads them."""
    unknown = sorted(t for t in set(topics) if not configs.knows(t))
    if not unknown:
        return
    try:
        # all in flight together: a LeaderAndIsr may name a hundred new topics
        found = await zk.get_topic_configs(unknown)
    except Exception as exc:  # the broker defaults apply until the next LeaderAndIsr
        found = dict.fromkeys(unknown, exc)
    for topic in unknown:
        overrides = found.get(topic)
        if isinstance(overrides, dict):
            configs.set(topic, overrides)
        else:
            log.warning("reading the config of topic %s failed: %s", topic, overrides)
