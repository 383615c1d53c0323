"""How the controller talks to brokers: the ControllerChannelManager interface.

The controller hands each broker an already-built request body (a protocol.messages
struct) with its API key and version; the channel manager owns delivery: one queue and
one connection per broker, in order, retried with backoff until the broker is removed.
``controller.tcp_channel.TcpChannelManager`` is the real implementation (the tests'
recording one is ``tests.fakes.controller.RecordingChannelManager``).

Responses: ``send`` takes an optional callback, called exactly once per request on the
event loop: with the decoded response body, or with None when the request was abandoned
because the broker was removed (it died, or the controller resigned) before answering. A
lost connection alone is not an outcome: the request is sent again on a new connection
until the broker answers or is removed. The controller's callbacks only post events
(``controller.events``), so responses are handled on its event task like everything else.
"""

from __future__ import annotations

from collections.abc import Callable
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
