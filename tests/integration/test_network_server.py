"""The network server against real sockets on 127.0.0.1, on uvloop and on plain asyncio:
requests answered in order, muting, deferred answers, backpressure, and bad frames that
cost only their own connection (the stub handler: tests.integration.network_stub)."""

from __future__ import annotations

import random
from typing import Any

import pytest

import protocol
from broker.metrics import BrokerMetrics
from broker.network import Codec, Request, SocketServer
from broker.network.processor import ProcessorSettings
from protocol.errors import ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    MetadataRequest,
)
from tests.integration.network_stub import (
    LOOPS,
    SIZE,
    Client,
    Stub,
    answer,
    in_loop,
    network_settings,
    sample,
    serving,
)
from tests.polling import until

pytestmark = pytest.mark.timeout(60)


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
        server = SocketServer(
            network_settings(num_io_threads=1), handler, codec=codec, metrics=BrokerMetrics()
        )
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
