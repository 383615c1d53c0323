"""DelayedDeleteTopics: a DeleteTopics response waiting for the topics to leave the cache.

The handler queued each topic under /admin/delete_topics; the controller (this broker)
starts the deletion by telling every live broker, with UpdateMetadata, that the topic's
partitions are gone (leader -2). The response waits (Kafka's DelayedDeleteTopics) until
this broker's metadata cache no longer has any of the topics, or until the request's
``timeout_ms``: by then no broker serves them, while the znodes and log directories go
afterwards, asynchronously. It is watched under each topic's key in the topic purgatory,
which the UpdateMetadata handler pokes for every topic an update mentions.

On completion ``on_done`` receives the topics still in the cache (empty when the
condition held): those are answered REQUEST_TIMED_OUT, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from timer import DelayedOperation

#: is_gone(topic): has the local cache forgotten it?
Gone = Callable[[str], bool]


class DelayedDeleteTopics(DelayedOperation):
    """Completes when no pending topic is left in the cache, or at its timeout.
    Event-loop bound."""

    __slots__ = ("_is_gone", "_on_done", "pending")

    def __init__(
        self,
        delay_ms: int,
        pending: Collection[str],
        is_gone: Gone,
        on_done: Callable[[set[str]], None],
    ) -> None:
        super().__init__(delay_ms)
        self.pending = tuple(pending)
        self._is_gone = is_gone
        self._on_done = on_done

    def remaining(self) -> set[str]:
        return {t for t in self.pending if not self._is_gone(t)}

    def try_complete(self) -> bool:
        if self.remaining():
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        self._on_done(self.remaining())

    def on_expiration(self) -> None:
        pass
