"""Pipelining on real sockets (broker.network.pipeline): a stub handler that keeps every
Produce waiting on a Future the test resolves, as the DelayedProduce purgatory does, and
answers other requests at once or (``defer``) later.

What is checked: a waiting Produce lets the connection's next request in, at most the
pipeline depth of them (hundreds of small ones by default, five large ones); a full
pipeline reads nothing more, though muting is lazy, and frames already read wait for a
free slot; what a client sends while its Produce is being handled is read ahead, within
the depth; an answer decided behind a waiting produce lets the next request in too;
responses leave in request order whatever order they are ready in; other deferred
requests keep Kafka's one-at-a-time rule; a connection closed or a server shut down with
responses owed behaves.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

import protocol
from broker.metrics import BrokerMetrics
from broker.network import Codec, Request, SocketServer, run
from broker.network.pipeline import DEFAULT_BUDGET, DEFAULT_DEPTH, FREE_DEPTH
from broker.network.processor import ProcessorSettings
from broker.network.socket_server import NetworkSettings
from protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ProduceRequest,
    ProduceResponse,
)
from tests.polling import until
from zk.model import EndPoint

SIZE = struct.Struct(">i")
PRODUCE_VERSION = 9

pytestmark = pytest.mark.timeout(60)


class Stub:
    """Produce: a Future per request (``waiting``, in arrival order), answered with the
    partition index as its base offset. ApiVersions: answered at once, or with
    ``client_software_name`` "defer" from a Future too. A Produce handler waits for
    ``gate``, when there is one, before it returns (as if appending took that long)."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Any, asyncio.Future[Any]]] = []
        self.entered: list[int] = []  # correlation ids, in handler order
        self.gate: asyncio.Event | None = None

    async def __call__(self, request: Request) -> Any:
        self.entered.append(request.correlation_id)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if request.api_key == protocol.ApiKey.PRODUCE:
            if self.gate is not None:
                await self.gate.wait()
            self.waiting.append((request.header, future))
            return future
        if request.body is not None and request.body.client_software_name == "defer":
            self.waiting.append((request.header, future))
            return future
        return versions_answer(request.header)

    def answer_produce(self, index: int) -> None:
        header, future = self.waiting[index]
        partition = ProduceResponse.PartitionProduceResponse(index=0, base_offset=index)
        topic = ProduceResponse.TopicProduceResponse(name="t", partition_responses=[partition])
        future.set_result(protocol.make_response(header, ProduceResponse(responses=[topic])))


def versions_answer(header: Any) -> protocol.Response:
    return protocol.make_response(header, ApiVersionsResponse(error_code=0, api_keys=[]))


@asynccontextmanager
async def serving(stub: Stub, depth: int = 5) -> AsyncIterator[SocketServer]:
    settings = NetworkSettings(
        data_listeners=(EndPoint("127.0.0.1", 0, "PLAINTEXT", "PLAINTEXT"),),
        num_network_threads=1,
        num_io_threads=2,
        queued_max_requests=10,
        processor=ProcessorSettings(max_frame_size=1 << 20, max_pipelined_requests=depth),
    )
    server = SocketServer(settings, stub, codec=Codec.default(), metrics=BrokerMetrics())
    await server.start()
    try:
        yield server
    finally:
        await server.stop(timeout_s=5)


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation = 0
        self.sent: dict[int, int] = {}  # correlation id -> api key
        self.written = 0  # bytes of the requests sent

    @staticmethod
    async def connect(server: SocketServer) -> Client:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port("PLAINTEXT"))
        return Client(reader, writer)

    def _send(self, api_key: int, version: int, body: Any) -> int:
        self.correlation += 1
        frame = protocol.encode_request(
            protocol.make_request(api_key, version, self.correlation, "test", body)
        )
        self.writer.write(SIZE.pack(len(frame)) + frame)
        self.written += SIZE.size + len(frame)
        self.sent[self.correlation] = api_key
        return self.correlation

    def produce(self, records: bytes | None = None) -> int:
        partition = ProduceRequest.PartitionProduceData(index=0, records=records)
        topic = ProduceRequest.TopicProduceData(name="t", partition_data=[partition])
        body = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[topic])
        return self._send(protocol.ApiKey.PRODUCE, PRODUCE_VERSION, body)

    def versions(self, command: str = "") -> int:
        body = ApiVersionsRequest(client_software_name=command, client_software_version="1")
        return self._send(protocol.ApiKey.API_VERSIONS, 3, body)

    async def response(self) -> protocol.Response:
        (size,) = SIZE.unpack(await self.reader.readexactly(4))
        frame = await self.reader.readexactly(size)
        (correlation_id,) = SIZE.unpack_from(frame)
        api_key = self.sent[correlation_id]
        version = PRODUCE_VERSION if api_key == protocol.ApiKey.PRODUCE else 3
        return protocol.decode_response(frame, api_key, version)

    def close(self) -> None:
        self.writer.close()


async def closed_by_server(client: Client) -> bool:
    """EOF, or a reset: a request the server never read was left in its buffer."""
    try:
        return await client.reader.read(1) == b""
    except ConnectionError:
        return True


def in_loop(test: Any) -> None:
    async def bounded() -> None:
        await asyncio.wait_for(test(), 20.0)

    run(bounded(), "uvloop")


def test_waiting_produces_let_the_next_in_and_are_answered_in_request_order() -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            client = await Client.connect(server)
            ids = [client.produce() for _ in range(5)]
            await until(lambda: len(stub.waiting) == 5, what="all five in the broker at once")
            assert stub.entered == ids  # handed to the handlers in request order
            for index in (3, 4, 1, 2, 0):  # ready in any order
                stub.answer_produce(index)
            got = [await client.response() for _ in ids]
            assert [r.header.correlation_id for r in got] == ids
            offsets = [r.body.responses[0].partition_responses[0].base_offset for r in got]
            assert offsets == [0, 1, 2, 3, 4]
            client.close()

    in_loop(test)


def test_the_depth_bounds_the_requests_of_a_connection_in_the_broker() -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub, depth=3) as server:
            client = await Client.connect(server)
            ids = [client.produce() for _ in range(5)]
            await until(lambda: len(stub.waiting) == 3, what="the first three waiting")
            other = await Client.connect(server)  # the server goes on serving others
            cid = other.versions()
            assert (await other.response()).header.correlation_id == cid
            assert stub.entered == [*ids[:3], cid]  # the fourth is not read yet
            stub.answer_produce(1)
            assert len(stub.waiting) == 3  # the second's answer waits behind the first's
            stub.answer_produce(0)
            assert (await client.response()).header.correlation_id == ids[0]
            assert (await client.response()).header.correlation_id == ids[1]
            await until(lambda: len(stub.waiting) == 5, what="the last two read on")
            for index in (2, 3, 4):
                stub.answer_produce(index)
            assert [(await client.response()).header.correlation_id for _ in range(3)] == ids[2:]
            client.close()
            other.close()

    in_loop(test)


def test_hundreds_of_small_produces_wait_together_by_default() -> None:
    """librdkafka's one ProduceRequest per partition: a broker's thousand partitions are
    a thousand small requests of one connection, all let in to wait for replication."""

    async def test() -> None:
        stub = Stub()
        async with serving(stub, depth=DEFAULT_DEPTH) as server:
            client = await Client.connect(server)
            ids = [client.produce() for _ in range(300)]
            await until(lambda: len(stub.waiting) == 300, what="all three hundred waiting")
            for index in reversed(range(300)):
                stub.answer_produce(index)
            got = [(await client.response()).header.correlation_id for _ in ids]
            assert got == ids
            client.close()

    in_loop(test)


def test_large_produces_past_the_free_depth_wait_for_the_byte_budget() -> None:
    async def test() -> None:
        stub = Stub()
        big = b"x" * (DEFAULT_BUDGET // FREE_DEPTH + 1)  # five of them exceed the budget
        async with serving(stub, depth=DEFAULT_DEPTH) as server:
            client = await Client.connect(server)
            ids = [client.produce(big) for _ in range(FREE_DEPTH + 2)]
            await until(lambda: len(stub.waiting) == FREE_DEPTH, what="the first five waiting")
            other = await Client.connect(server)  # served meanwhile: the sixth is not read
            cid = other.versions()
            assert (await other.response()).header.correlation_id == cid
            assert len(stub.waiting) == FREE_DEPTH
            stub.answer_produce(0)
            assert (await client.response()).header.correlation_id == ids[0]
            await until(lambda: len(stub.waiting) == FREE_DEPTH + 1, what="the sixth let in")
            cid = other.versions()  # a round trip on another connection meanwhile
            assert (await other.response()).header.correlation_id == cid
            assert len(stub.waiting) == FREE_DEPTH + 1  # five in the broker again: full
            for index in range(1, FREE_DEPTH + 1):
                stub.answer_produce(index)
                assert (await client.response()).header.correlation_id == ids[index]
            await until(lambda: len(stub.waiting) == FREE_DEPTH + 2, what="the last let in")
            stub.answer_produce(FREE_DEPTH + 1)
            assert (await client.response()).header.correlation_id == ids[-1]
            client.close()
            other.close()

    in_loop(test)


def test_a_full_pipeline_reads_nothing_until_its_oldest_answer_is_written() -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub, depth=2) as server:
            client = await Client.connect(server)
            ids = [client.produce() for _ in range(2)]
            await until(lambda: len(stub.waiting) == 2, what="the pipeline full")
            # the connection is in READING with its reader perhaps still registered
            # (muting is lazy): bytes arriving now must stay in the kernel
            await flood_behind(client, server)
            assert stub.entered == [*ids, *range(1, 51)]  # the other client counts from 1
            stub.answer_produce(0)
            assert (await client.response()).header.correlation_id == ids[0]
            await until(lambda: 999 in stub.entered, what="reading resumed with a free slot")
            stub.answer_produce(1)
            assert (await client.response()).header.correlation_id == ids[1]
            assert (await client.response()).header.correlation_id == 999
            client.close()

    in_loop(test)


def received_bytes(server: SocketServer) -> float:
    received = server.metrics.registry.get_sample_value(
        "minikafka_network_received_bytes_total", {"listener": "PLAINTEXT"}
    )
    assert received is not None
    return received


async def flood_behind(client: Client, server: SocketServer) -> None:
    """Write about 20 MB of ApiVersions requests (correlation id 999) behind what
    ``client`` sent, then give the server loop turns (50 round trips of another client)
    in which it would read them if the connection were not muted: the flood must stay in
    the kernel and in the client's own buffer."""
    filler = protocol.encode_request(
        protocol.make_request(18, 3, 999, "flood", ApiVersionsRequest())
    )
    client.sent[999] = protocol.ApiKey.API_VERSIONS
    client.writer.write((SIZE.pack(len(filler)) + filler) * 800_000)
    other = await Client.connect(server)
    for _ in range(50):
        cid = other.versions()
        assert (await other.response()).header.correlation_id == cid
    other.close()
    assert received_bytes(server) < 1_000_000
    assert client.writer.transport.get_write_buffer_size() > 1_000_000


def test_what_arrives_while_a_produce_is_handled_is_read_ahead_within_the_depth() -> None:
    async def test() -> None:
        stub = Stub()
        stub.gate = asyncio.Event()
        async with serving(stub, depth=3) as server:
            client = await Client.connect(server)
            first = client.produce()
            await until(lambda: stub.entered == [first], what="the first produce handled")
            ahead = [client.produce() for _ in range(2)]
            # read while the first is still in its handler, not left in the kernel
            await until(
                lambda: received_bytes(server) == client.written, what="the next two read ahead"
            )
            assert stub.entered == [first]  # read, not yet handed to the handlers
            await flood_behind(client, server)  # reading ahead is bounded by the depth
            stub.gate.set()
            await until(lambda: len(stub.waiting) == 3, what="the frames read ahead handled")
            assert stub.entered == [first, *range(1, 51), *ahead]  # the other client: 1 to 50
            for index in range(3):
                stub.answer_produce(index)
            got = [(await client.response()).header.correlation_id for _ in range(4)]
            assert got == [first, *ahead, 999]
            client.close()

    in_loop(test)


def test_an_answer_ready_at_once_waits_behind_a_waiting_produce() -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            client = await Client.connect(server)
            produce = client.produce()
            versions = client.versions()
            await until(lambda: versions in stub.entered, what="the second request handled")
            stub.answer_produce(0)
            assert (await client.response()).header.correlation_id == produce
            assert (await client.response()).header.correlation_id == versions
            client.close()

    in_loop(test)


def test_an_answer_decided_behind_a_waiting_produce_lets_the_next_request_in() -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            client = await Client.connect(server)
            first = client.produce()
            versions = client.versions()  # answered at once, owed after the first
            second = client.produce()
            # handled while the first still waits, as Kafka would once the versions
            # answer was decided -- not only once the first produce is answered
            await until(lambda: len(stub.waiting) == 2, what="the second produce handled")
            assert stub.entered == [first, versions, second]
            stub.answer_produce(1)
            stub.answer_produce(0)
            got = [(await client.response()).header.correlation_id for _ in range(3)]
            assert got == [first, versions, second]
            client.close()

    in_loop(test)


def test_other_deferred_requests_keep_one_request_per_connection() -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            client = await Client.connect(server)
            deferred = client.versions("defer")
            behind = client.produce()
            await until(lambda: len(stub.waiting) == 1, what="the deferred request waiting")
            other = await Client.connect(server)
            cid = other.versions()
            assert (await other.response()).header.correlation_id == cid
            assert behind not in stub.entered  # held until the deferred answer is written
            header, future = stub.waiting[0]
            future.set_result(versions_answer(header))
            assert (await client.response()).header.correlation_id == deferred
            await until(lambda: behind in stub.entered, what="the produce behind it handled")
            stub.answer_produce(1)
            assert (await client.response()).header.correlation_id == behind
            client.close()
            other.close()

    in_loop(test)


def test_a_connection_closed_with_answers_owed_costs_nothing_else() -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            gone = await Client.connect(server)
            for _ in range(3):
                gone.produce()
            await until(lambda: len(stub.waiting) == 3, what="three waiting")
            gone.close()
            await until(lambda: server.connection_count == 0, what="the close seen")
            for index in range(3):
                stub.answer_produce(index)  # answers for a closed connection are dropped
            client = await Client.connect(server)
            ids = [client.produce() for _ in range(2)]
            await until(lambda: len(stub.waiting) == 5, what="the new connection's produces")
            stub.answer_produce(4)
            stub.answer_produce(3)
            assert [(await client.response()).header.correlation_id for _ in ids] == ids
            client.close()

    in_loop(test)


def test_shutdown_writes_the_answers_owed_before_closing() -> None:
    async def test() -> None:
        stub = Stub()
        server_cm = serving(stub)
        server = await server_cm.__aenter__()
        try:
            client = await Client.connect(server)
            ids = [client.produce() for _ in range(2)]
            await until(lambda: len(stub.waiting) == 2, what="both waiting")
            draining: list[bool] = []

            async def stop() -> None:
                draining.append(True)  # stop() stops reading before its first await
                await server.stop(timeout_s=10)

            stopping = asyncio.ensure_future(stop())
            await until(lambda: bool(draining), what="the shutdown begun")
            late = client.produce()  # sent while draining: never read
            stub.answer_produce(1)
            stub.answer_produce(0)
            assert [(await client.response()).header.correlation_id for _ in ids] == ids
            assert await closed_by_server(client)  # then the server closes
            await stopping
            assert late not in stub.entered
            client.close()
        finally:
            await server_cm.__aexit__(None, None, None)

    in_loop(test)
