"""Connection caps: ``max.connections`` for the broker, ``max.connections.per.ip`` per address.

The two caps act differently, as in Kafka: when the broker-wide cap is reached the
Acceptors stop accepting (new connections wait in the listen backlog until one closes);
a connection over its address's cap is accepted and closed at once. Listeners marked
``exempt`` (the control plane) do not count towards the broker-wide cap, so the
controller can always reach a busy broker. Both caps may change on a running broker
(``reconfigure``); connections already open are never closed for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping


class ConnectionQuotas:
    """Counts open connections. One event loop only."""

    def __init__(
        self,
        max_connections: int,
        max_per_ip: int,
        per_ip_overrides: Mapping[str, int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = dict(per_ip_overrides or {})
        self._per_ip: Counter[str] = Counter()
        self._counted = 0  # connections on listeners that count towards max_connections
        self._on_release: list[Callable[[], None]] = []

    @property
    def total(self) -> int:
        return self._counted

    def count(self, ip: str) -> int:
        return self._per_ip[ip]

    def limit_for(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_per_ip)

    def at_capacity(self) -> bool:
        return self._counted >= self.max_connections

    def admit(self, ip: str, exempt: bool = False) -> bool:
        """Count a new connection from ``ip``; False (nothing counted) when over its cap."""
        if self._per_ip[ip] >= self.limit_for(ip):
            return False
        self._per_ip[ip] += 1
        if not exempt:
            self._counted += 1
        return True

    def release(self, ip: str, exempt: bool = False) -> None:
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]
        if not exempt:
            self._counted -= 1
            for callback in list(self._on_release):
                callback()

    def reconfigure(
        self, max_connections: int, max_per_ip: int, per_ip_overrides: Mapping[str, int]
    ) -> None:
        """New caps (a dynamic broker config), for the connections accepted from now on;
        the open ones stay. Acceptors paused at the old broker-wide cap are told, as on a
        release, so that a raised cap lets them accept again at once."""
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = dict(per_ip_overrides)
        for callback in list(self._on_release):
            callback()

    def on_release(self, callback: Callable[[], None]) -> None:
        """Called whenever a counted connection closes or the caps change (Acceptors
        resume accepting if there is room)."""
        self._on_release.append(callback)
