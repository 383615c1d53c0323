"""Acceptor: one per listener; accepts connections and deals them to Processors in turn."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Sequence

from broker.metrics import BrokerMetrics
from broker.network.connection import Connection
from broker.network.processor import Processor
from broker.network.quotas import ConnectionQuotas
from zk.model import EndPoint

log = logging.getLogger(__name__)

#: connections taken per readiness event before yielding to the loop
ACCEPT_BATCH = 64


def bind_listener(host: str, port: int, backlog: int) -> socket.socket:
    """A non-blocking listening socket; an empty host binds every interface (IPv4 and 6)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if not host and socket.has_ipv6:
        family = socket.AF_INET6
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and not host:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class Acceptor:
    """Accepts on one listener. Event-loop bound.

    Connection caps (see ``quotas``): over ``max.connections`` it stops accepting until a
    connection closes; a connection over its address's cap is closed right away.
    """

    def __init__(
        self,
        endpoint: EndPoint,
        processors: Sequence[Processor],
        quotas: ConnectionQuotas,
        metrics: BrokerMetrics,
        backlog: int = 50,
        exempt_from_max_connections: bool = False,
    ) -> None:
        self.endpoint = endpoint
        self._processors = processors
        self._quotas = quotas
        self._metrics = metrics
        self._backlog = backlog
        self._exempt = exempt_from_max_connections
        self._next = 0
        self._sock: socket.socket | None = None
        self._accepting = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._accepted = metrics.connections_accepted.labels(listener=endpoint.listener_name)
        self._rejected = metrics.connections_closed.labels(
            listener=endpoint.listener_name, reason="per-ip-quota"
        )

    @property
    def port(self) -> int:
        assert self._sock is not None, "not bound"
        port: int = self._sock.getsockname()[1]
        return port

    def bind(self) -> None:
        """Bind now (so that every listener's port is known, or refused, before serving)."""
        try:
            self._sock = bind_listener(self.endpoint.host, self.endpoint.port, self._backlog)
        except OSError as exc:
            raise OSError(
                exc.errno, f"cannot listen on {self.endpoint.connection_string}: {exc.strerror}"
            ) from exc

    def start(self) -> None:
        if self._sock is None:
            self.bind()
        self._loop = asyncio.get_running_loop()
        self._quotas.on_release(self._maybe_resume)
        self._resume()

    def close(self) -> None:
        """Stop accepting and close the listening socket (open connections stay)."""
        self._pause()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def release(self, conn: Connection) -> None:
        """A connection of this listener closed (wired to its Processors' on_close)."""
        self._quotas.release(conn.client_host, exempt=self._exempt)

    def _resume(self) -> None:
        if not self._accepting and self._sock is not None and self._loop is not None:
            self._loop.add_reader(self._sock.fileno(), self._on_acceptable)
            self._accepting = True

    def _pause(self) -> None:
        if self._accepting and self._sock is not None and self._loop is not None:
            self._loop.remove_reader(self._sock.fileno())
            self._accepting = False

    def _maybe_resume(self) -> None:
        if self._exempt or not self._quotas.at_capacity():
            self._resume()

    def _on_acceptable(self) -> None:
        assert self._sock is not None
        for _ in range(ACCEPT_BATCH):
            if not self._exempt and self._quotas.at_capacity():
                self._pause()  # the rest wait in the backlog until a connection closes
                return
            try:
                sock, address = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. EMFILE: log and let the loop call us again
                log.warning("accept on %s failed: %s", self.endpoint.listener_name, exc)
                return
            if not self._quotas.admit(address[0], exempt=self._exempt):
                log.info("closing %s: over max.connections.per.ip", address)
                sock.close()
                self._rejected.inc()
                continue
            self._accepted.inc()
            # the list may have shrunk since (a dynamic num.network.threads)
            index = self._next % len(self._processors)
            processor = self._processors[index]
            self._next = (index + 1) % len(self._processors)
            try:
                processor.accept(sock, (address[0], address[1]))
            except OSError as exc:  # the peer vanished between accept and setup
                log.info("dropping new connection %s: %s", address, exc)
                sock.close()
                self._quotas.release(address[0], exempt=self._exempt)
