"""Wait until other brokers' metadata caches know a set of topics with their leaders.

After CreateTopics the controller sends UpdateMetadata to every live broker at once, but
each broker applies it on its own time. Before the CreateTopics response goes out, the
handling broker asks each other live broker (a Metadata request to its listener, no
auto-creation) until every one reports every partition with a leader, so that a client
that asks any broker right after the response finds the topic.

This polls: brokers do not announce cache updates to each other. Polls are cheap (one
small request per broker), spaced by ``interval_s`` and bounded by the caller's deadline.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Mapping

from client.connection import ConnectionConfig, request_once
from client.errors import ClientError
from client.security import ClientSecurity
from protocol import ApiKey, ErrorCode
from protocol.messages import MetadataRequest, MetadataResponse
from timer.clock import Clock

log = logging.getLogger(__name__)

METADATA_VERSION = 9


def reports_ready(body: MetadataResponse, topics: Mapping[str, Collection[int]]) -> bool:
    """Does this Metadata response list every topic with every partition led?"""
    seen = {t.name: t for t in body.topics}
    for name, partitions in topics.items():
        topic = seen.get(name)
        if topic is None or topic.error_code != ErrorCode.NONE:
            return False
        led = {p.partition_index for p in topic.partitions if p.leader_id >= 0}
        if not set(partitions) <= led:
            return False
    return True


async def _ask(
    host: str,
    port: int,
    topics: Mapping[str, Collection[int]],
    client_id: str,
    security: ClientSecurity,
) -> bool:
    body = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)],
        allow_auto_topic_creation=False,
    )
    config = ConnectionConfig(
        client_id=client_id, connect_timeout_s=2.0, request_timeout_s=2.0, security=security
    )
    response = await request_once(host, port, ApiKey.METADATA, METADATA_VERSION, body, config)
    return reports_ready(response, topics)


async def wait_for_peers(
    peers: Mapping[int, tuple[str, int]],
    topics: Mapping[str, Collection[int]],
    clock: Clock,
    deadline_ms: int,
    *,
    security: ClientSecurity,
    client_id: str = "minikafka-broker",
    interval_s: float = 0.05,
) -> set[int]:
    """Poll ``peers`` (broker id -> host, port) until each reports ``topics`` ready or
    ``deadline_ms`` (on ``clock``'s monotonic scale) passes, connecting with
    ``security`` (the inter-broker listener's); return the brokers that did
    not confirm in time. A peer that cannot be reached counts as not confirmed."""
    waiting = dict(peers)
    while waiting:
        for broker_id, (host, port) in list(waiting.items()):
            try:
                if await _ask(host, port, topics, client_id, security):
                    del waiting[broker_id]
            except ClientError as exc:  # unreachable or too slow: asked again next round
                log.debug("metadata probe of broker %s failed: %s", broker_id, exc)
            except Exception as exc:  # a bad answer from one peer must not fail the request
                log.warning("metadata probe of broker %s failed: %s", broker_id, exc)
        if not waiting or clock.monotonic_ms() >= deadline_ms:
            break
        await asyncio.sleep(interval_s)
    return set(waiting)
