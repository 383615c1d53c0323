"""The network server's test bench: a stub handler speaking the real codec, and a small
client on a plain socket, shared by test_network_server.py and test_network_connections.py.

The stub answers ApiVersions requests whose ``client_software_name`` is a command for it
(sleep, wait for a gate, answer nothing, fail, answer later), and Fetch requests with a
file region. ``in_loop`` runs a test body on uvloop or on plain asyncio, bounded.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import protocol
from broker.metrics import BrokerMetrics
from broker.network import Codec, Request, SocketServer, run
from broker.network.processor import ProcessorSettings
from broker.network.socket_server import NetworkSettings
from protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
)
from zk.model import EndPoint

LOOPS = ["uvloop", "asyncio"]
SIZE = struct.Struct(">i")
TIMEOUT = 20.0


def in_loop(kind: str, test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(test(), TIMEOUT)

    run(bounded(), kind)


# --- the stub handler -----------------------------------------------------------------------


class Stub:
    """ApiVersions commands: "" answers; "sleep:S"; "gate" waits for ``gate``; "none" gives
    no response; "raise" fails; "defer" returns a future the test resolves."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.entered: list[str] = []
        self.active: dict[str, int] = {}
        self.max_active_per_connection = 0
        self.max_active = 0
        self.deferred: list[asyncio.Future[Any]] = []
        self.region: Any = None

    async def __call__(self, request: Request) -> Any:
        conn = request.connection_id
        self.active[conn] = self.active.get(conn, 0) + 1
        self.max_active_per_connection = max(self.max_active_per_connection, self.active[conn])
        self.max_active = max(self.max_active, sum(self.active.values()))
        try:
            return await self._handle(request)
        finally:
            self.active[conn] -= 1

    async def _handle(self, request: Request) -> Any:
        if request.api_key == protocol.ApiKey.FETCH:
            partition = FetchResponse.PartitionData(partition_index=0, records=self.region)
            topic = FetchResponse.FetchableTopicResponse(topic="t", partitions=[partition])
            return protocol.make_response(request.header, FetchResponse(responses=[topic]))
        command = request.body.client_software_name if request.body else ""
        self.entered.append(command)
        if command.startswith("sleep:"):
            await asyncio.sleep(float(command[6:]))
        elif command == "gate":
            await self.gate.wait()
        elif command == "none":
            return None
        elif command == "raise":
            raise RuntimeError("stub failure")
        elif command == "defer":
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.deferred.append(future)
            return future
        return answer(request.header)


def answer(header: Any, error_code: int = 0) -> protocol.Response:
    body = ApiVersionsResponse(error_code=error_code, api_keys=[])
    return protocol.make_response(header, body)


def network_settings(**overrides: Any) -> NetworkSettings:
    processor = overrides.pop("processor", ProcessorSettings(max_frame_size=1 << 20))
    base: dict[str, Any] = {
        "data_listeners": (EndPoint("127.0.0.1", 0, "PLAINTEXT", "PLAINTEXT"),),
        "num_network_threads": 2,
        "num_io_threads": 4,
        "queued_max_requests": 50,
        "processor": processor,
    }
    base.update(overrides)
    return NetworkSettings(**base)


@asynccontextmanager
async def serving(
    handler: Any, clock: Callable[[], float] | None = None, **overrides: Any
) -> AsyncIterator[SocketServer]:
    server = SocketServer(
        network_settings(**overrides),
        handler,
        codec=Codec.default(),
        metrics=BrokerMetrics(),
        clock=clock,
    )
    await server.start()
    try:
        yield server
    finally:
        await server.stop(timeout_s=5)


def sample(server: SocketServer, name: str, listener: str = "PLAINTEXT") -> float:
    value = server.metrics.registry.get_sample_value(name, {"listener": listener})
    return value or 0.0


# --- a small client ---------------------------------------------------------------------------


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation = 0

    @staticmethod
    async def connect(port: int) -> Client:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return Client(reader, writer)

    def request(self, command: str = "", correlation_id: int | None = None) -> int:
        """Send an ApiVersions v3 request carrying ``command``; returns its correlation id."""
        if correlation_id is None:
            self.correlation += 1
            correlation_id = self.correlation
        body = ApiVersionsRequest(client_software_name=command, client_software_version="1")
        self.send(protocol.make_request(18, 3, correlation_id, "test", body))
        return correlation_id

    def send(self, request: protocol.Request) -> None:
        self.send_raw(protocol.encode_request(request))

    def send_raw(self, frame: bytes) -> None:
        self.writer.write(SIZE.pack(len(frame)) + frame)

    async def read_frame(self) -> bytes:
        (size,) = SIZE.unpack(await self.reader.readexactly(4))
        return await self.reader.readexactly(size)

    async def response(self, api_key: int = 18, version: int = 3) -> protocol.Response:
        return protocol.decode_response(await self.read_frame(), api_key, version)

    async def closed_by_server(self) -> bool:
        """True when the server closes the connection (EOF or reset) with nothing more sent."""
        try:
            data = await self.reader.read(1)
        except ConnectionError:
            return True
        return data == b""

    def close(self) -> None:
        self.writer.close()
