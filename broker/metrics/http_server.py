"""The ``/metrics`` endpoint: a minimal HTTP/1.1 server on the broker's event loop.

Scrapes are rare and small, so this uses asyncio streams and answers one request per
connection (``Connection: close``): ``GET`` or ``HEAD`` of ``/metrics`` or ``/`` returns
the Prometheus text format, any other path 404, any other method 405. Running on the
broker's loop is what lets the scrape-time callbacks and the lock-free families be read
without locks: the scrape is never interleaved with an update. A scraper that stalls or
goes away costs only its own connection (each read is bounded by 10 s).
"""

from __future__ import annotations

import asyncio
import logging

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from broker.metrics.broker_metrics import BrokerMetrics

log = logging.getLogger(__name__)


class MetricsHttpServer:
    """Serves ``GET /metrics`` (and ``/``) on 127.0.0.1 from the broker's event loop.

    Scrapes are rare and small, so this uses asyncio streams; the request path never does.
    """

    def __init__(self, metrics: BrokerMetrics, port: int, host: str = "127.0.0.1") -> None:
        self._metrics = metrics
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        """The bound port (useful when started with port 0)."""
        assert self._server is not None, "not started"
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self._host, self._port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass  # headers are not needed
            parts = request_line.split()
            if len(parts) < 2 or parts[0] not in (b"GET", b"HEAD"):
                status, body, ctype = b"405 Method Not Allowed", b"GET only\n", b"text/plain"
            elif parts[1].split(b"?")[0] in (b"/metrics", b"/"):
                status, body = b"200 OK", self._metrics.exposition()
                ctype = CONTENT_TYPE_LATEST.encode()
            else:
                status, body, ctype = b"404 Not Found", b"try /metrics\n", b"text/plain"
            head = (
                b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype
                + b"\r\nContent-Length: " + str(len(body)).encode()
                + b"\r\nConnection: close\r\n\r\n"
            )  # fmt: skip
            writer.write(head if parts and parts[0] == b"HEAD" else head + body)
            await writer.drain()
        except (TimeoutError, ConnectionError) as exc:
            # a scraper that goes away or stalls costs only its own connection
            log.debug("metrics connection dropped: %s", exc)
        finally:
            writer.close()
