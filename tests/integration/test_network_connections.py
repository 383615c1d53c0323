"""The network server's connections against real sockets on 127.0.0.1, on uvloop and on
plain asyncio: idle and capped connections, the control plane beside a stuck data plane,
graceful shutdown, sendfile zero copy, the request and connection metrics, a taken port
(the stub handler: tests.integration.network_stub)."""

from __future__ import annotations

import asyncio
import os
import random
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import protocol
from broker.metrics import BrokerMetrics
from broker.network import Codec, SocketServer
from broker.network.processor import ProcessorSettings
from protocol.messages import (
    FetchRequest,
)
from tests.integration.network_stub import (
    LOOPS,
    Client,
    Stub,
    in_loop,
    network_settings,
    sample,
    serving,
)
from tests.polling import until
from zk.model import EndPoint

pytestmark = pytest.mark.timeout(60)


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
        server = SocketServer(
            network_settings(), stub, codec=Codec.default(), metrics=BrokerMetrics()
        )
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
            server = SocketServer(settings, Stub(), codec=Codec.default(), metrics=BrokerMetrics())
            with pytest.raises(OSError, match=f"CLIENT://127.0.0.1:{port}"):
                await server.start()
        finally:
            taken.close()

    in_loop(kind, test)
