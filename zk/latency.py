"""ZooKeeper request latency, measured where kazoo queues every request.

Kafka reports ZooKeeperRequestLatencyMs: the time from a request being sent to its reply.
kazoo has no hook for it, but every request, synchronous or not, goes through one
method, ``KazooClient._call(request, async_object)``, which queues it for the connection
thread; the ``async_object`` is completed when the reply (or an error) arrives. Wrapping
that method on one client instance, and linking a callback to each ``async_object``,
times every request without touching the call sites.

The callback runs on kazoo's threads: ``observe`` must be thread safe (a
prometheus_client Histogram's ``observe`` is).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def observe_request_latency(
    kazoo: Any,
    observe: Callable[[float], None],
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Call ``observe(seconds)`` for every request ``kazoo`` (a KazooClient) completes
    from now on. Requests refused before queueing (closed client, expired session) are
    timed too: they complete at once."""
    queue_request = kazoo._call

    def call(request: object, async_object: Any) -> Any:
        started = clock()
        async_object.rawlink(lambda _result: observe(clock() - started))
        return queue_request(request, async_object)

    kazoo._call = call
