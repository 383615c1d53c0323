"""Connection against a scripted broker on 127.0.0.1: negotiation, pipelining, failures."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import protocol
from client.connection import Connection, ConnectionConfig
from client.errors import ConnectionLost, RequestTimedOut
from protocol import ApiKey, ErrorCode
from protocol.messages import ApiVersionsResponse, MetadataRequest, MetadataResponse

pytestmark = pytest.mark.timeout(30)

#: answers to a batch of requests: Responses, or raw frames (without size prefix)
Script = Callable[[list[protocol.Request]], list[Any]]


def api_versions(request: protocol.Request, ranges: dict[int, tuple[int, int]]) -> Any:
    keys = [
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
        for k, (lo, hi) in ranges.items()
    ]
    return protocol.make_response(request.header, ApiVersionsResponse(api_keys=keys))


def metadata_echo(request: protocol.Request) -> Any:
    """A Metadata answer whose cluster id names the topic asked for."""
    name = request.body.topics[0].name
    return protocol.make_response(request.header, MetadataResponse(cluster_id=name))


class FakeBroker:
    """Answers each batch of ``batch`` requests with ``script(requests)``."""

    def __init__(self, script: Script, batch: int = 1) -> None:
        self.script = script
        self.batch = batch
        self.seen: list[protocol.Request] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pending: list[protocol.Request] = []
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                request = protocol.decode_request(await reader.readexactly(size))
                self.seen.append(request)
                pending.append(request)
                if len(pending) < self.batch:
                    continue
                for response in self.script(pending):
                    frame = (
                        response
                        if isinstance(response, bytes)
                        else protocol.encode_response(response)
                    )
                    writer.write(struct.pack(">i", len(frame)) + frame)
                await writer.drain()
                pending = []
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


RANGES: dict[int, tuple[int, int]] = {ApiKey.API_VERSIONS: (0, 3), ApiKey.METADATA: (1, 12)}


def standard(requests: list[protocol.Request]) -> list[protocol.Response]:
    out = []
    for r in requests:
        if r.api_key == ApiKey.API_VERSIONS:
            out.append(api_versions(r, RANGES))
        elif r.api_key == ApiKey.METADATA:
            out.append(metadata_echo(r))
    return out


@pytest.fixture
async def broker_factory() -> AsyncIterator[Callable[..., Any]]:
    started: list[FakeBroker] = []

    async def make(script: Script = standard, batch: int = 1) -> tuple[FakeBroker, int]:
        b = FakeBroker(script, batch)
        port = await b.start()
        started.append(b)
        return b, port

    yield make
    for b in started:
        await b.stop()


def md(name: str) -> Any:
    return MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)])


async def test_negotiates_the_highest_common_versions(broker_factory: Any) -> None:
    broker, port = await broker_factory()
    conn = await Connection.open("127.0.0.1", port)
    try:
        assert conn.versions[ApiKey.METADATA] == 12 and conn.versions[ApiKey.API_VERSIONS] == 3
        assert not conn.supports(ApiKey.PRODUCE)
        assert broker.seen[0].header.client_id == "minikafka-client"
    finally:
        conn.close()


async def test_retries_api_versions_at_the_version_an_older_broker_lists(
    broker_factory: Any,
) -> None:
    def old_broker(requests: list[protocol.Request]) -> list[protocol.Response]:
        (r,) = requests
        if r.api_key == ApiKey.API_VERSIONS and r.api_version > 2:
            body = ApiVersionsResponse(
                error_code=ErrorCode.UNSUPPORTED_VERSION,
                api_keys=[ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=2)],
            )
            header = protocol.ResponseHeader(correlation_id=r.header.correlation_id)
            return [protocol.Response(header, body, ApiKey.API_VERSIONS, 0)]
        return [api_versions(r, {ApiKey.API_VERSIONS: (0, 2), ApiKey.METADATA: (1, 5)})]

    broker, port = await broker_factory(old_broker)
    conn = await Connection.open("127.0.0.1", port)
    try:
        assert [r.api_version for r in broker.seen] == [3, 2]
        assert conn.versions == {ApiKey.API_VERSIONS: 2, ApiKey.METADATA: 5}
    finally:
        conn.close()


async def test_an_unreadable_error_answer_to_api_versions_falls_back_to_v0(
    broker_factory: Any,
) -> None:
    # librdkafka's mock cluster answers ApiVersions v3 with error 35 and a body that is
    # neither v3 nor v0; Kafka's clients then ask again at v0
    def mock_like(requests: list[protocol.Request]) -> list[Any]:
        (r,) = requests
        if r.api_key == ApiKey.API_VERSIONS and r.api_version == 3:
            return [struct.pack(">ih", r.header.correlation_id, 35) + b"\x01\x00\x12\x00"]
        return [api_versions(r, RANGES)]

    broker, port = await broker_factory(mock_like)
    conn = await Connection.open("127.0.0.1", port)
    try:
        assert [r.api_version for r in broker.seen] == [3, 0]
        assert conn.versions[ApiKey.METADATA] == 12
    finally:
        conn.close()


async def test_pipelined_requests_get_their_own_answers(broker_factory: Any) -> None:
    broker, port = await broker_factory(standard, batch=1)
    conn = await Connection.open("127.0.0.1", port)
    broker.batch = 3  # from now on the broker answers only once three requests are in
    try:
        bodies = await asyncio.gather(
            *(conn.request(ApiKey.METADATA, md(f"t{i}")) for i in range(3))
        )
        assert [b.cluster_id for b in bodies] == ["t0", "t1", "t2"]
        ids = [r.header.correlation_id for r in broker.seen[1:]]
        assert len(set(ids)) == 3
    finally:
        conn.close()


async def test_answers_out_of_order_fail_every_request_and_close(broker_factory: Any) -> None:
    def swapped(requests: list[protocol.Request]) -> list[protocol.Response]:
        return list(reversed(standard(requests)))

    broker, port = await broker_factory(standard)
    conn = await Connection.open("127.0.0.1", port)
    broker.script, broker.batch = swapped, 2
    results = await asyncio.gather(
        conn.request(ApiKey.METADATA, md("a")),
        conn.request(ApiKey.METADATA, md("b")),
        return_exceptions=True,
    )
    assert all(isinstance(r, ConnectionLost) for r in results)
    assert conn.closed
    with pytest.raises(ConnectionLost):
        await conn.request(ApiKey.METADATA, md("c"))


async def test_a_request_without_answer_times_out_and_closes(broker_factory: Any) -> None:
    broker, port = await broker_factory(standard)
    config = ConnectionConfig(request_timeout_s=0.2)
    conn = await Connection.open("127.0.0.1", port, config)
    broker.script = lambda requests: []  # silence
    with pytest.raises(RequestTimedOut):
        await conn.request(ApiKey.METADATA, md("x"))
    assert conn.closed


async def test_a_request_due_first_times_out_first_and_fails_the_others(
    broker_factory: Any,
) -> None:
    broker, port = await broker_factory(standard)
    conn = await Connection.open("127.0.0.1", port)  # the config's timeout: 30 s
    broker.script = lambda requests: []  # silence
    patient = asyncio.ensure_future(conn.request(ApiKey.METADATA, md("patient")))
    with pytest.raises(RequestTimedOut, match=r"within 0\.2s"):
        await conn.request(ApiKey.METADATA, md("hasty"), timeout_s=0.2)
    assert conn.closed
    with pytest.raises(RequestTimedOut, match=r"within 0\.2s"):  # the connection's error
        await patient


async def test_a_request_sent_after_the_timer_was_set_still_times_out(
    broker_factory: Any,
) -> None:
    broker, port = await broker_factory(standard)
    conn = await Connection.open("127.0.0.1", port)
    # answered in time: the deadline timer stays set for it, and when it fires it
    # waits on for the request that is still in flight
    body = await conn.request(ApiKey.METADATA, md("answered"), timeout_s=0.2)
    assert body.cluster_id == "answered"
    broker.script = lambda requests: []  # silence
    with pytest.raises(RequestTimedOut, match=r"within 0\.4s"):
        await conn.request(ApiKey.METADATA, md("late"), timeout_s=0.4)
    assert conn.closed


async def test_a_request_without_response_uses_an_id_the_next_one_skips(
    broker_factory: Any,
) -> None:
    def skip_first_metadata(requests: list[protocol.Request]) -> list[protocol.Response]:
        (r,) = requests
        if r.api_key == ApiKey.METADATA and r.body.topics[0].name == "fire-and-forget":
            return []
        return standard(requests)

    broker, port = await broker_factory(skip_first_metadata)
    conn = await Connection.open("127.0.0.1", port)
    try:
        await conn.send(ApiKey.METADATA, md("fire-and-forget"))
        body = await conn.request(ApiKey.METADATA, md("answered"))
        assert body.cluster_id == "answered"
        first, second = broker.seen[1:]
        assert second.header.correlation_id == first.header.correlation_id + 1
    finally:
        conn.close()


async def test_connecting_to_a_closed_port_is_a_clear_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(ConnectionLost, match="cannot connect"):
        await Connection.open("127.0.0.1", port, ConnectionConfig(connect_timeout_s=2))
