"""Reading topics' overrides (``/config/topics/<t>``) into the broker's TopicConfigs.

Overrides are written once, when a topic is created, so a topic's are read the first time
the broker needs them (a LeaderAndIsr making its logs, a DescribeConfigs) and kept until
the topic is deleted (UpdateMetadata forgets them then).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from broker.context import BrokerContext, require

log = logging.getLogger(__name__)


async def _read(ctx: BrokerContext, topic: str) -> Mapping[str, str]:
    zk = require(ctx.zk, "zk")
    overrides: dict[str, str] = await zk.get_topic_config(topic)
    ctx.topic_configs.set(topic, overrides)
    return overrides


async def topic_overrides(ctx: BrokerContext, topic: str) -> Mapping[str, str]:
    """The overrides of ``topic``, read from ZooKeeper unless known (none without one)."""
    known = ctx.topic_configs.get(topic)
    if known is not None or ctx.zk is None:
        return known or {}
    return await _read(ctx, topic)


async def load_topic_configs(ctx: BrokerContext, topics: Iterable[str]) -> None:
    """Read the overrides of the topics not known yet. A failure is logged: the broker
    defaults apply until a later request reads them."""
    if ctx.zk is None:
        return
    for topic in sorted(t for t in set(topics) if not ctx.topic_configs.knows(t)):
        try:
            await _read(ctx, topic)
        except Exception as exc:  # the broker defaults apply until the next LeaderAndIsr
            log.warning("reading the config of topic %s failed: %s", topic, exc)
