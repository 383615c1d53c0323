"""The marker channel's real sender: WriteTxnMarkers over the inter-broker listener.

One connection per destination broker, opened on first use to the broker's endpoint on
the inter-broker listener (from the metadata cache) with the broker's inter-broker
``ClientSecurity`` (broker.security.inter_broker), kept while it works and dropped on any
failure (the channel retries; the next send reconnects, to the endpoint the cache has
then). The version is the highest both sides speak (v1, the flexible one, when the
destination serves it); a destination that does not serve WriteTxnMarkers at all fails
the send like an unreachable one.

The coordinator's own broker is written in-process once the broker's handlers exist
(:meth:`TcpMarkerSender.serve_locally`, given the WriteTxnMarkers handler's work): the
markers of the partitions led here are appended at once, without encoding a request,
a loopback round trip and a turn of the request handlers. With one transaction in
flight these markers sit on the path of every transaction (the next one's first add
waits for them), and about one partition in three is led by the coordinator's broker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from client.connection import Connection, ConnectionConfig
from client.errors import ConnectionLost, UnsupportedApi
from protocol import ApiKey
from protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

#: the highest WriteTxnMarkers version sent (v1: the flexible one)
MAX_VERSION = 1

#: WriteTxnMarkers answered in-process by this broker
LocalWriter = Callable[[WriteTxnMarkersRequest], Awaitable[WriteTxnMarkersResponse]]


class TcpMarkerSender:
    """See the module docstring. ``endpoint_of(broker_id)``: host and port on the
    inter-broker listener, None when the broker is not alive."""

    def __init__(
        self, endpoint_of: Callable[[int], tuple[str, int] | None], config: ConnectionConfig
    ) -> None:
        self._endpoint_of = endpoint_of
        self._config = config
        self._connections: dict[int, Connection] = {}
        self._local: tuple[int, LocalWriter] | None = None

    def serve_locally(self, broker_id: int, writer: LocalWriter) -> None:
        """Send what is for ``broker_id`` (this broker) to ``writer``, in-process."""
        self._local = (broker_id, writer)

    async def send(
        self, broker_id: int, request: WriteTxnMarkersRequest
    ) -> WriteTxnMarkersResponse:
        if self._local is not None and self._local[0] == broker_id:
            return await self._local[1](request)
        conn, version = await self._connection(broker_id)
        try:
            response: WriteTxnMarkersResponse = await conn.request(
                ApiKey.WRITE_TXN_MARKERS, request, version=version
            )
        except BaseException:
            self._drop(broker_id)
            raise
        return response

    async def _connection(self, broker_id: int) -> tuple[Connection, int]:
        conn = self._connections.get(broker_id)
        if conn is None or conn.closed:
            endpoint = self._endpoint_of(broker_id)
            if endpoint is None:
                raise ConnectionLost(f"broker {broker_id} has no inter-broker endpoint")
            conn = await Connection.open(*endpoint, self._config)
            self._connections[broker_id] = conn
        served = conn.broker_ranges.get(ApiKey.WRITE_TXN_MARKERS)
        if served is None or served[0] > MAX_VERSION:
            self._drop(broker_id)
            raise UnsupportedApi(f"broker {broker_id} does not serve WriteTxnMarkers")
        return conn, min(MAX_VERSION, served[1])

    def _drop(self, broker_id: int) -> None:
        conn = self._connections.pop(broker_id, None)
        if conn is not None:
            conn.close()

    async def close(self) -> None:
        for broker_id in list(self._connections):
            self._drop(broker_id)
