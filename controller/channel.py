"""How the controller talks to brokers: the ControllerChannelManager interface.

The controller hands each broker an already-built request body (a protocol.messages
struct) with its API key and version; the channel manager owns delivery: one queue and
one connection per broker, in order, retried with backoff until the broker is removed.
``controller.tcp_channel.TcpChannelManager`` is the real implementation;
``RecordingChannelManager`` below records what would be sent, for tests.

Responses: ``send`` takes an optional callback, called exactly once per request on the
event loop: with the decoded response body, or with None when the request was abandoned
because the broker was removed (it died, or the controller resigned) before answering. A
lost connection alone is not an outcome: the request is sent again on a new connection
until the broker answers or is removed. The controller's callbacks only post events
(``controller.events``), so responses are handled on its event task like everything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from zk.model import BrokerInfo

#: called once with the decoded response body, or None if the broker was removed first
ResponseCallback = Callable[[Any | None], None]


class ControllerChannelManager(Protocol):
    def add_broker(self, broker: BrokerInfo) -> None:
        """Start a queue (and a connection) for a broker that registered."""

    def remove_broker(self, broker_id: int) -> None:
        """Drop a broker's queue and connection; queued requests are abandoned (their
        callbacks get None)."""

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
    callback: ResponseCallback | None = field(default=None, repr=False)
    answered: bool = False

    def respond(self, body: Any | None) -> None:
        """Play the broker's answer (or, with None, its removal) to the request's callback."""
        if self.answered:
            raise AssertionError(f"request {self.api_key} to {self.broker_id} answered twice")
        self.answered = True
        if self.callback is not None:
            self.callback(body)


@dataclass
class RecordingChannelManager:
    """A fake channel manager: remembers brokers and requests, sends nothing. Tests answer
    a request with ``SentRequest.respond``; removing a broker abandons its unanswered
    requests as the real one does (callbacks get None)."""

    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    sent: list[SentRequest] = field(default_factory=list)
    #: every request ever recorded (``take`` does not remove from it)
    history: list[SentRequest] = field(default_factory=list)
    closed: bool = False

    def add_broker(self, broker: BrokerInfo) -> None:
        self.brokers[broker.id] = broker

    def remove_broker(self, broker_id: int) -> None:
        if self.brokers.pop(broker_id, None) is None:
            return
        for request in self.history:
            if request.broker_id == broker_id and not request.answered:
                request.respond(None)

    def send(
        self,
        broker_id: int,
        api_key: int,
        api_version: int,
        body: Any,
        callback: ResponseCallback | None = None,
    ) -> None:
        if broker_id in self.brokers:
            request = SentRequest(broker_id, api_key, api_version, body, callback)
            self.sent.append(request)
            self.history.append(request)

    async def shutdown(self) -> None:
        self.closed = True

    def take(self, api_key: int | None = None) -> list[SentRequest]:
        """Remove and return the recorded requests (of one API if given)."""
        picked = [r for r in self.sent if api_key is None or r.api_key == api_key]
        self.sent = [r for r in self.sent if r not in picked]
        return picked
