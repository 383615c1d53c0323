"""The network server against real sockets on 127.0.0.1, on uvloop and on plain asyncio.

The handler is a stub speaking the real codec: ApiVersions requests whose
``client_software_name`` is a command for the stub (sleep, wait for a gate, answer
nothing, fail, answer later), and Fetch requests answered with a file region.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

import protocol
from broker.network import Codec, Request, SocketServer, run
from broker.network.processor import ProcessorSettings
from broker.network.socket_server import NetworkSettings
from protocol.errors import ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
)
from tests.polling import until
from zk.model import EndPoint

LOOPS = ["uvloop", "asyncio"]
SIZE = struct.Struct(">i")
TIMEOUT = 20.0

pytestmark = pytest.mark.timeout(60)


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


# --- tests ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LOOPS)
def test_pipelined_requests_answered_in_order_one_at_a_time(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            port = server.bound_port("PLAINTEXT")
            clients = [await Client.connect(port) for _ in range(4)]
            rng = random.Random(7)
            sent: list[list[int]] = []
            for client in clients:
                ids = [client.request(f"sleep:{rng.uniform(0, 0.004):.4f}") for _ in range(25)]
                sent.append(ids)
            for client, ids in zip(clients, sent, strict=True):
                got = [(await client.response()).header.correlation_id for _ in ids]
                assert got == ids
            assert stub.max_active_per_connection == 1  # muted while in flight
            assert stub.max_active > 1  # but connections are served concurrently
            for client in clients:
                client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_long_request_holds_back_only_its_own_connection(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            port = server.bound_port("PLAINTEXT")
            slow, fast = await Client.connect(port), await Client.connect(port)
            gated = slow.request("gate")
            behind = slow.request("")
            await until(lambda: "gate" in stub.entered, what="the gated request to start")
            for _ in range(5):
                cid = fast.request("")
                assert (await fast.response()).header.correlation_id == cid
            assert stub.entered.count("") == 5  # the slow connection's 2nd is not dispatched
            stub.gate.set()
            assert (await slow.response()).header.correlation_id == gated
            assert (await slow.response()).header.correlation_id == behind
            slow.close()
            fast.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_no_response_unmutes_and_next_request_is_answered(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            client.request("none")
            second = client.request("")
            response = await client.response()
            assert response.header.correlation_id == second
            assert stub.entered == ["none", ""]
            client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_deferred_response_frees_the_handler(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub, num_io_threads=1) as server:
            port = server.bound_port("PLAINTEXT")
            waiting, other = await Client.connect(port), await Client.connect(port)
            deferred = waiting.request("defer")
            await until(lambda: len(stub.deferred) == 1, what="the deferred request")
            cid = other.request("")  # the single handler task is free again
            assert (await other.response()).header.correlation_id == cid
            header = protocol.make_request(18, 3, deferred, "x", None).header
            stub.deferred[0].set_result(answer(header))
            assert (await waiting.response()).header.correlation_id == deferred
            waiting.close()
            other.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_failing_handler_answers_with_an_error_and_the_pool_survives(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub, num_io_threads=1) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            failing = client.request("raise")
            response = await client.response()
            assert response.header.correlation_id == failing
            assert response.body.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            ok = client.request("")
            assert (await client.response()).header.correlation_id == ok
            client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_backpressure_full_channel_stops_reading(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub, num_io_threads=1, queued_max_requests=2) as server:
            port = server.bound_port("PLAINTEXT")
            clients = [await Client.connect(port) for _ in range(6)]
            ids = [c.request("gate") for c in clients]
            channel = server.data_channel
            # one request is handled (stuck on the gate), two wait in the channel, and the
            # other three connections are parked: their requests are not queued anywhere
            await until(
                lambda: len(channel) == 2 and channel.waiting_for_space == 3,
                what="a full channel with three parked connections",
            )
            # a parked client keeps writing: the server must not read it into memory
            flood = clients[-1]
            filler = protocol.encode_request(
                protocol.make_request(18, 3, 999, "flood", ApiVersionsRequest())
            )
            flood.writer.write((SIZE.pack(len(filler)) + filler) * 800_000)  # ~20 MB
            await until(
                lambda: flood.writer.transport.get_write_buffer_size() > 1_000_000,
                what="the flooding client's writes to back up",
            )
            received = sample(server, "minikafka_network_received_bytes_total")
            assert received < 1_000_000  # kernel buffers hold the rest
            stub.gate.set()
            for client, cid in zip(clients[:-1], ids[:-1], strict=True):
                assert (await client.response()).header.correlation_id == cid
                client.close()
            assert (await flood.response()).header.correlation_id == ids[-1]
            flood.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_muted_connection_reads_nothing_while_its_request_is_handled(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub) as server:
            port = server.bound_port("PLAINTEXT")
            client = await Client.connect(port)
            gated = client.request("gate")
            await until(lambda: "gate" in stub.entered, what="the gated request to start")
            # the reader may still be registered (muting is lazy): bytes arriving now
            # must stay in the kernel, not be read into the server's memory
            filler = protocol.encode_request(
                protocol.make_request(18, 3, 999, "flood", ApiVersionsRequest())
            )
            client.writer.write((SIZE.pack(len(filler)) + filler) * 800_000)  # ~20 MB
            # round trips of another client give the server loop turns in which it would
            # read the flood (each turn reads up to 256 KiB) if it had not muted for good
            other = await Client.connect(port)
            for _ in range(50):
                cid = other.request("")
                assert (await other.response()).header.correlation_id == cid
            other.close()
            assert sample(server, "minikafka_network_received_bytes_total") < 1_000_000
            assert client.writer.transport.get_write_buffer_size() > 1_000_000  # still held
            assert stub.entered == ["gate"] + [""] * 50
            stub.gate.set()
            assert (await client.response()).header.correlation_id == gated
            assert (await client.response()).header.correlation_id == 999  # reading resumed
            client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_oversized_frame_closes_before_its_body_arrives(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub(), processor=ProcessorSettings(max_frame_size=1000)) as server:
            port = server.bound_port("PLAINTEXT")
            client = await Client.connect(port)
            client.writer.write(SIZE.pack(10_000_000))  # only the size: no body is ever sent
            assert await client.closed_by_server()
            negative = await Client.connect(port)
            negative.writer.write(SIZE.pack(-5))
            assert await negative.closed_by_server()
            assert sample(server, "minikafka_malformed_requests_total") == 2

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_garbage_frame_closes_only_its_connection(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub()) as server:
            port = server.bound_port("PLAINTEXT")
            bystander = await Client.connect(port)
            gated = bystander.request("sleep:0.05")
            garbage = await Client.connect(port)
            garbage.send_raw(b"\x7f\x7f\x00\x01" + bytes(random.Random(1).randbytes(40)))
            assert await garbage.closed_by_server()
            unsupported = await Client.connect(port)  # Metadata v0: below the codec's range
            unsupported.send(protocol.make_request(3, 0, 1, "x", MetadataRequest(topics=[])))
            assert await unsupported.closed_by_server()
            assert (await bystander.response()).header.correlation_id == gated
            after = bystander.request("")
            assert (await bystander.response()).header.correlation_id == after
            bystander.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_codec_bugs_cost_only_their_connection(kind: str) -> None:
    def buggy_decode(frame: bytes | memoryview) -> Any:
        if bytes(frame).endswith(b"crash-decoder\x021\x00"):
            raise ValueError("a bug, not a ProtocolError")
        return protocol.decode_request(frame)

    class Unencodable:
        pass

    async def handler(request: Request) -> Any:
        if request.body.client_software_name == "unencodable":
            return Unencodable()
        return answer(request.header)

    async def test() -> None:
        codec = Codec(buggy_decode, protocol.encode_response_parts)
        server = SocketServer(network_settings(num_io_threads=1), handler, codec=codec)
        await server.start()
        try:
            port = server.bound_port("PLAINTEXT")
            bystander = await Client.connect(port)
            first = await Client.connect(port)
            first.request("crash-decoder")
            assert await first.closed_by_server()
            second = await Client.connect(port)
            second.request("unencodable")
            assert await second.closed_by_server()
            cid = bystander.request("")  # the single handler task is still alive
            assert (await bystander.response()).header.correlation_id == cid
            bystander.close()
        finally:
            await server.stop(timeout_s=5)

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_malformed_body_with_readable_header_is_answered(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub()) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            header_only = protocol.encode_request(protocol.make_request(18, 3, 41, "c", None))
            client.send_raw(header_only + b"\x05garbage-body")
            response = await client.response()
            assert response.header.correlation_id == 41
            assert response.body.error_code != 0
            ok = client.request("")  # the connection carries on
            assert (await client.response()).header.correlation_id == ok
            client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_burst_of_answerable_bad_frames_is_answered_in_order(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub()) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            burst = 3000  # all in one write: they sit in one read buffer together
            frames = b"".join(
                SIZE.pack(len(f)) + f
                for f in (
                    protocol.encode_request(protocol.make_request(18, 3, i, "c", None)) + b"\x09"
                    for i in range(burst)
                )
            )
            client.writer.write(frames)
            got = [(await client.response()).header.correlation_id for _ in range(burst)]
            assert got == list(range(burst))
            client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_api_versions_above_range_reaches_the_handler(kind: str) -> None:
    async def test() -> None:
        seen: list[Any] = []

        async def handler(request: Request) -> Any:
            seen.append(request.body)
            return protocol.api_versions_fallback_response(request.header)

        async with serving(handler) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            client.send(protocol.make_request(18, 99, 5, "new-client", None))
            response = await client.response(18, 0)
            assert response.header.correlation_id == 5
            assert response.body.error_code == ErrorCode.UNSUPPORTED_VERSION
            assert seen == [None]
            client.close()

    in_loop(kind, test)


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("kind", LOOPS)
def test_idle_connections_close_but_muted_ones_stay(kind: str) -> None:
    async def test() -> None:
        stub, clock = Stub(), ManualClock()
        settings = ProcessorSettings(max_frame_size=1 << 20, idle_timeout_s=0.04)
        async with serving(stub, clock=clock, processor=settings) as server:
            port = server.bound_port("PLAINTEXT")
            idle, busy = await Client.connect(port), await Client.connect(port)
            cid = busy.request("gate")
            await until(
                lambda: "gate" in stub.entered and server.connection_count == 2, what="setup"
            )
            clock.now += 60  # both are now past the idle timeout by the server's clock
            assert await idle.closed_by_server()
            assert server.connection_count == 1
            stub.gate.set()
            assert (await busy.response()).header.correlation_id == cid
            busy.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_max_connections_per_ip(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub(), max_connections_per_ip=2) as server:
            port = server.bound_port("PLAINTEXT")
            first, second = await Client.connect(port), await Client.connect(port)
            third = await Client.connect(port)
            assert await third.closed_by_server()
            for client in (first, second):
                cid = client.request("")
                assert (await client.response()).header.correlation_id == cid
            first.close()
            await until(lambda: server.connection_count == 1, what="the first connection to close")
            fourth = await Client.connect(port)
            cid = fourth.request("")
            assert (await fourth.response()).header.correlation_id == cid
            second.close()
            fourth.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_max_connections_pauses_accepting_until_one_closes(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub(), max_connections=2) as server:
            port = server.bound_port("PLAINTEXT")
            first, second = await Client.connect(port), await Client.connect(port)
            for client in (first, second):
                cid = client.request("")
                assert (await client.response()).header.correlation_id == cid
            waiting = await Client.connect(port)  # completes in the kernel's backlog
            cid = waiting.request("")
            await until(
                lambda: not server._planes[0].acceptors[0]._accepting, what="a paused acceptor"
            )
            assert sample(server, "minikafka_connections_accepted_total") == 2
            first.close()
            assert (await waiting.response()).header.correlation_id == cid
            assert sample(server, "minikafka_connections_accepted_total") == 3
            second.close()
            waiting.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_control_plane_is_served_while_the_data_plane_is_stuck(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        control = EndPoint("127.0.0.1", 0, "CONTROLLER", "PLAINTEXT")
        async with serving(
            stub, num_io_threads=1, queued_max_requests=1, control_listener=control
        ) as server:
            data_port = server.bound_port("PLAINTEXT")
            stuck = [await Client.connect(data_port) for _ in range(3)]
            for client in stuck:
                client.request("gate")
            await until(
                lambda: server.data_channel.waiting_for_space == 1, what="a full data plane"
            )
            controller = await Client.connect(server.bound_port("CONTROLLER"))
            cid = controller.request("")
            assert (await controller.response()).header.correlation_id == cid
            assert server.control_channel is not None
            stub.gate.set()
            for client in stuck:
                await client.response()
                client.close()
            controller.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_graceful_shutdown_finishes_in_flight_requests(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        server = SocketServer(network_settings(), stub, codec=Codec.default())
        await server.start()
        port = server.bound_port("PLAINTEXT")
        busy, idle = await Client.connect(port), await Client.connect(port)
        cid = busy.request("gate")
        await until(lambda: "gate" in stub.entered, what="the gated request")
        stopping = asyncio.create_task(server.stop(timeout_s=10))
        assert await idle.closed_by_server()  # idle connections close at once
        with pytest.raises(OSError):
            await Client.connect(port)  # the listener is closed
        assert not stopping.done()
        stub.gate.set()
        assert (await busy.response()).header.correlation_id == cid
        assert await busy.closed_by_server()
        await stopping

    in_loop(kind, test)


class OnlyFd:
    """A file region that exposes nothing but its descriptor, position and length."""

    def __init__(self, fd: int, position: int, length: int) -> None:
        self._fd, self.position, self._length = fd, position, length

    def fileno(self) -> int:
        return self._fd

    def __len__(self) -> int:
        return self._length


@pytest.mark.parametrize("kind", LOOPS)
def test_file_regions_are_sent_with_sendfile_never_read_by_python(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = random.Random(3).randbytes(4 << 20)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"X" * 100 + payload + b"Y" * 100)
    fd = os.open(path, os.O_RDONLY)
    sendfile_bytes = 0
    real_sendfile = os.sendfile

    def counting_sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
        nonlocal sendfile_bytes
        sent = real_sendfile(out_fd, in_fd, offset, count)
        if in_fd == fd:
            sendfile_bytes += sent
        return sent

    def forbidden(name: str) -> Callable[..., Any]:
        real = getattr(os, name)

        def guard(target: Any, *args: Any, **kwargs: Any) -> Any:
            if target == fd:
                raise AssertionError(f"the log file was read through os.{name}")
            return real(target, *args, **kwargs)

        return guard

    monkeypatch.setattr(os, "sendfile", counting_sendfile)
    for name in ("read", "pread", "readv", "preadv", "fdopen", "dup"):
        monkeypatch.setattr(os, name, forbidden(name))

    async def test() -> None:
        stub = Stub()
        stub.region = OnlyFd(fd, 100, len(payload))
        async with serving(stub) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            client.send(protocol.make_request(1, 12, 9, "c", FetchRequest()))
            response = await client.response(1, 12)
            assert response.header.correlation_id == 9
            records = response.body.responses[0].partitions[0].records
            assert records == payload
            client.close()

    try:
        in_loop(kind, test)
    finally:
        os.close(fd)
    assert sendfile_bytes == len(payload)


@pytest.mark.parametrize("kind", LOOPS)
def test_requests_and_connections_are_measured(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub()) as server:
            client = await Client.connect(server.bound_port("PLAINTEXT"))
            for _ in range(3):
                cid = client.request("")
                assert (await client.response()).header.correlation_id == cid
            client.close()
            await until(lambda: server.connection_count == 0, what="the close")
            text = server.metrics.exposition().decode()
            assert 'minikafka_requests_total{api="ApiVersions",listener="PLAINTEXT"} 3.0' in text
            assert 'minikafka_request_duration_seconds_count{api="ApiVersions"} 3.0' in text
            assert 'minikafka_connections{listener="PLAINTEXT"} 0.0' in text
            closed = 'minikafka_connections_closed_total{listener="PLAINTEXT",reason="peer"} 1.0'
            assert closed in text

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_taken_port_is_refused_naming_the_listener(kind: str) -> None:
    async def test() -> None:
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            settings = network_settings(
                data_listeners=(EndPoint("127.0.0.1", port, "CLIENT", "PLAINTEXT"),)
            )
            server = SocketServer(settings, Stub(), codec=Codec.default())
            with pytest.raises(OSError, match=f"CLIENT://127.0.0.1:{port}"):
                await server.start()
        finally:
            taken.close()

    in_loop(kind, test)
