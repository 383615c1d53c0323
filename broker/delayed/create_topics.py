"""DelayedCreateTopics: a CreateTopics response waiting for the new topics' leaders.

The handler has written the topics to ZooKeeper; the controller will elect leaders and
send UpdateMetadata to every live broker. The response waits (Kafka's
DelayedCreatePartitions) until this broker's metadata cache knows every partition of
every created topic with a leader, or until the request's ``timeout_ms``. It is watched
under each topic name in the create-topics purgatory; the UpdateMetadata handler calls
``check_and_complete(topic_key(name))`` for each topic an update mentions.

On completion ``on_done`` receives the topics that were still not ready (empty when the
condition held): those are answered REQUEST_TIMED_OUT, as Kafka does. The handler then
also waits for the other live brokers' caches (see broker.admin.peer_metadata), so that
a client that asks any broker next finds the topic.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from timer import DelayedOperation

#: is_ready(topic, partitions): does the local cache know them all, with leaders?
Readiness = Callable[[str, Collection[int]], bool]


def topic_key(topic: str) -> tuple[str, str]:
    """The purgatory watch key of a topic (tagged so it never equals a partition key)."""
    return ("topic", topic)


class DelayedCreateTopics(DelayedOperation):
    """Completes when every pending topic is ready, or at its timeout. Event-loop bound."""

    __slots__ = ("_is_ready", "_on_done", "expired", "pending")

    def __init__(
        self,
        delay_ms: int,
        pending: Mapping[str, Collection[int]],
        is_ready: Readiness,
        on_done: Callable[[set[str]], None],
    ) -> None:
        super().__init__(delay_ms)
        self.pending = {t: tuple(ps) for t, ps in pending.items()}
        self._is_ready = is_ready
        self._on_done = on_done
        self.expired = False

    def not_ready(self) -> set[str]:
        return {t for t, ps in self.pending.items() if not self._is_ready(t, ps)}

    def try_complete(self) -> bool:
        if self.not_ready():
            return False
        return self.force_complete()

    def on_complete(self) -> None:
        self._on_done(self.not_ready())

    def on_expiration(self) -> None:
        self.expired = True
