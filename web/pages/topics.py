"""The topics pages: the list (``/topics``: sortable by any column, filtered by a
substring of the name), creating a topic (partitions, replication factor, configs),
a topic's partitions (leader, replicas, ISR, log start and end offsets) and configs
(those set on the topic first, each with its source), editing a config, and deleting the
topic (the form asks for its name again: the confirmation).

A topic's offsets come from two ListOffsets per leader (earliest, latest). The list is one
Metadata request whatever the number of partitions; its size (bytes on disk over all
replicas), messages and produce rate come from the metrics endpoints' latest scrapes when
the console is given them (``web.metrics``), and are blank otherwise.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final
from urllib.parse import quote

from client import admin
from client.admin import ConfigEntry, NewTopic
from client.errors import KafkaError
from client.fetch import list_offsets
from protocol import ErrorCode
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from web.context import Console
from web.errors import InputError, NotFound
from web.views import Page, Params, View

SORT_KEYS: Final = (
    "name",
    "partitions",
    "replication_factor",
    "under_replicated",
    "internal",
    "size_bytes",
    "messages",
    "bytes_in_per_s",
)

#: DescribeConfigs' ConfigSource values, as Kafka names them
CONFIG_SOURCES: Final = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


def topic_url(name: str, suffix: str = "") -> str:
    return f"/topics/{quote(name, safe='')}{suffix}"


async def list_topics(console: Console, params: Params) -> dict[str, Any]:
    view = await console.client.refresh_metadata(None)
    wanted = params.text("q").strip()
    sort = params.text("sort", "name")
    if sort not in SORT_KEYS:
        raise InputError(f"sort must be one of {', '.join(SORT_KEYS)}")
    descending = params.text("order") == "desc"
    scraped = console.sampler.topics()
    none: dict[str, float | None] = {"size_bytes": None, "messages": None, "bytes_in_per_s": None}
    rows = [
        {
            **scraped.get(t.name, none),  # blank figures sort lowest (below)
            "name": t.name,
            "partitions": len(t.partitions),
            "replication_factor": t.replication_factor,
            "under_replicated": sum(len(p.isr) < len(p.replicas) for p in t.partitions.values()),
            "offline": sum(p.leader < 0 for p in t.partitions.values()),
            "internal": t.is_internal,
        }
        for t in view.topics.values()
        if t.error_code == ErrorCode.NONE and wanted.lower() in t.name.lower()
    ]
    rows.sort(key=lambda r: (r[sort] is not None, r[sort], r["name"]), reverse=descending)
    return {
        "title": "Topics",
        "topics": rows,
        "sort": sort,
        "order": "desc" if descending else "asc",
        "scraped": bool(console.sampler.endpoints),
        "q": wanted,
    }


async def create(console: Console, params: Params) -> dict[str, Any]:
    name = params.required("name")
    topic = NewTopic(
        name,
        params.integer("partitions", -1, -1, 100_000),
        params.integer("replication_factor", -1, -1, 1_000),
        params.pairs("configs"),
    )
    result = (await admin.create_topics(console.client, [topic]))[name]
    if not result.ok:
        raise KafkaError(result.error_code, result.error_message)
    return {"created": name, "redirect": topic_url(name)}


async def partition_offsets(
    console: Console, topic: str, partitions: list[int]
) -> tuple[dict[int, int], dict[int, int]]:
    """(log start, log end) offsets of ``partitions`` (those with a leader)."""
    if not partitions:
        return {}, {}
    starts, ends = await asyncio.gather(
        list_offsets(console.client, topic, dict.fromkeys(partitions, EARLIEST_TIMESTAMP)),
        list_offsets(console.client, topic, dict.fromkeys(partitions, LATEST_TIMESTAMP)),
    )
    return starts, ends


def config_row(entry: ConfigEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": None if entry.is_sensitive else entry.value,
        "source": CONFIG_SOURCES.get(entry.source, str(entry.source)),
        "default": entry.is_default,
        "read_only": entry.read_only,
        "sensitive": entry.is_sensitive,
    }


async def describe(console: Console, params: Params) -> dict[str, Any]:
    name = params.path["topic"]
    view = await console.client.refresh_metadata([name])
    info = view.topics.get(name)
    if info is None or info.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise NotFound(f"Topic '{name}' does not exist (it may have been deleted).")
    if info.error_code != ErrorCode.NONE:
        raise KafkaError(info.error_code, f"metadata of topic '{name}'")
    led = [p for p, i in sorted(info.partitions.items()) if i.leader >= 0]
    starts, ends = await partition_offsets(console, name, led)
    configs = (await admin.describe_topic_configs(console.client, [name]))[name]
    if isinstance(configs, KafkaError):
        raise configs
    rows = sorted(map(config_row, configs), key=lambda c: (c["default"], c["name"]))
    sizes = console.sampler.partition_sizes(name)
    return {
        "title": f"Topic {name}",
        "topic": name,
        "topic_id": str(info.topic_id),
        "internal": info.is_internal,
        "partitions": [
            {
                "partition": p.partition,
                "leader": p.leader,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "offline_replicas": list(p.offline),
                "under_replicated": len(p.isr) < len(p.replicas),
                "log_start_offset": starts.get(p.partition),
                "log_end_offset": ends.get(p.partition),
                "messages": None
                if p.partition not in ends
                else ends[p.partition] - starts[p.partition],
                "size_bytes": sizes.get(p.partition),
            }
            for p in sorted(info.partitions.values(), key=lambda p: p.partition)
        ],
        "configs": rows,
    }


async def delete(console: Console, params: Params) -> dict[str, Any]:
    name = params.path["topic"]
    if params.text("confirm").strip() != name:
        raise InputError(f"To delete topic '{name}', type its name in the confirmation field.")
    result = (await admin.delete_topics(console.client, [name]))[name]
    if not result.ok:
        raise KafkaError(result.error_code, result.error_message)
    return {"deleted": name, "redirect": "/topics"}


async def alter_config(console: Console, params: Params) -> dict[str, Any]:
    name = params.path["topic"]
    key = params.required("key")
    operation = params.text("operation", "set")
    if operation not in ("set", "delete"):
        raise InputError("operation must be set or delete")
    op = admin.SET if operation == "set" else admin.DELETE
    value = params.text("value") if operation == "set" else None
    await admin.incremental_alter_configs(
        console.client, admin.TOPIC_RESOURCE, name, [(key, op, value)]
    )
    return {"topic": name, "key": key, "operation": operation, "redirect": topic_url(name)}


PAGE = Page(
    "topics",
    "Topics",
    "/topics",
    (
        View("/topics", "topics.html", list_topics),
        View("/topics", "topics.html", create, write=True),
        View("/topics/{topic}", "topic.html", describe),
        View("/topics/{topic}/delete", "topic.html", delete, write=True),
        View("/topics/{topic}/configs", "topic.html", alter_config, write=True),
    ),
)
