"""The cluster page (``/``, ``/api/cluster``): the brokers and which one is the
controller, the cluster id, counts of topics and partitions, under-replicated (fewer
in-sync replicas than replicas) and offline (no leader) partitions, and per-broker rates
and disk use from the metrics endpoints, with the last minutes of byte rates."""

from __future__ import annotations

from typing import Any

from web.context import Console
from web.views import Page, Params, View


def partition_counts(view: Any) -> dict[str, int]:
    topics = partitions = under = offline = 0
    for topic in view.topics.values():
        topics += 1
        for p in topic.partitions.values():
            partitions += 1
            under += len(p.isr) < len(p.replicas)
            offline += p.leader < 0
    return {
        "topics": topics,
        "partitions": partitions,
        "under_replicated": under,
        "offline": offline,
    }


async def load(console: Console, params: Params) -> dict[str, Any]:
    view = await console.client.refresh_metadata(None)
    return {
        "title": "Cluster",
        "cluster_id": view.cluster_id,
        "controller": view.controller_id,
        "brokers": [
            {
                "id": b.node_id,
                "host": b.host,
                "port": b.port,
                "rack": b.rack,
                "controller": b.node_id == view.controller_id,
            }
            for b in sorted(view.brokers.values(), key=lambda b: b.node_id)
        ],
        "counts": partition_counts(view),
        "metrics": console.sampler.summary(),
    }


PAGE = Page("cluster", "Cluster", "/", (View("/", "cluster.html", load, api="/api/cluster"),))
