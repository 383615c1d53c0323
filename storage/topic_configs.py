"""TopicConfigs: the per-topic overrides this broker knows, shared by everything that reads them.

The overrides of topic ``t`` are the text key/value pairs of ``/config/topics/<t>``
(``{"retention.ms": "1000"}``); a topic without any has an empty mapping. A topic whose
overrides were never read is unknown (``get`` returns None), which is not the same as a
topic without overrides. The broker fills the repository (LeaderAndIsr, DescribeConfigs),
forgets a topic when it is deleted (so a topic re-created under the same name does not
inherit the old overrides), and the LogManager listens to apply changes to its logs.
Lives on the broker's event loop; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

#: called with the topic whose overrides changed
Listener = Callable[[str], None]

_NONE: Mapping[str, str] = MappingProxyType({})


class TopicConfigs:
    def __init__(self) -> None:
        self._overrides: dict[str, Mapping[str, str]] = {}
        self._listeners: list[Listener] = []

    def get(self, topic: str) -> Mapping[str, str] | None:
        """The overrides of ``topic``, or None when they have not been read."""
        return self._overrides.get(topic)

    def overrides(self, topic: str) -> Mapping[str, str]:
        """The overrides of ``topic``; none when unknown (the broker defaults apply)."""
        return self._overrides.get(topic, _NONE)

    def knows(self, topic: str) -> bool:
        return topic in self._overrides

    def set(self, topic: str, overrides: Mapping[str, str]) -> None:
        """Record the overrides read for ``topic`` and tell the listeners if they changed."""
        previous = self._overrides.get(topic)
        self._overrides[topic] = MappingProxyType(dict(overrides))
        if previous is None or dict(previous) != dict(overrides):
            for listener in self._listeners:
                listener(topic)

    def forget(self, topic: str) -> None:
        """Drop a deleted topic's overrides; the next reader reads them afresh."""
        self._overrides.pop(topic, None)

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)
