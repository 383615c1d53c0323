"""How the controller talks to brokers: the ControllerChannelManager interface.

The controller hands each broker an already-built request body (a protocol.messages
struct) with its API key and version; the channel manager owns delivery: one queue and
one connection per broker, in order, retried with backoff until the broker is removed.
``controller.network.TcpChannelManager`` is the real implementation;
``RecordingChannelManager`` below records what would be sent, for tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from zk.model import BrokerInfo

#: called with the decoded response body (never for requests abandoned by remove_broker)
ResponseCallback = Callable[[Any | None], None]


class ControllerChannelManager(Protocol):
    def add_broker(self, broker: BrokerInfo) -> None:
        """Start a queue (and a connection) for a broker that registered."""

    def remove_broker(self, broker_id: int) -> None:
        """Drop a broker's queue and connection; queued requests are abandoned."""

    def send(
        self,
        broker_id: int,
        api_key: int,
        api_version: int,
        body: Any,
        callback: ResponseCallback | None = None,
    ) -> None:
        """Queue a request for a broker; never blocks. Unknown broker ids are ignored."""

    async def shutdown(self) -> None:
        """Close every connection and stop every sender task."""


@dataclass
class SentRequest:
    broker_id: int
    api_key: int
    api_version: int
    body: Any


@dataclass
class RecordingChannelManager:
    """A fake channel manager: remembers brokers and requests, sends nothing."""

    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    sent: list[SentRequest] = field(default_factory=list)
    closed: bool = False

    def add_broker(self, broker: BrokerInfo) -> None:
        self.brokers[broker.id] = broker

    def remove_broker(self, broker_id: int) -> None:
        self.brokers.pop(broker_id, None)

    def send(
        self,
        broker_id: int,
        api_key: int,
        api_version: int,
        body: Any,
        callback: ResponseCallback | None = None,
    ) -> None:
        if broker_id in self.brokers:
            self.sent.append(SentRequest(broker_id, api_key, api_version, body))

    async def shutdown(self) -> None:
        self.closed = True

    def take(self, api_key: int | None = None) -> list[SentRequest]:
        """Remove and return the recorded requests (of one API if given)."""
        picked = [r for r in self.sent if api_key is None or r.api_key == api_key]
        self.sent = [r for r in self.sent if r not in picked]
        return picked
