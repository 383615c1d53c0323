"""A running SocketServer resized by a dynamic broker config: more request handler tasks
serve at once; a removed Processor answers the request it has in flight before closing
that connection, closes its idle ones at once, and takes no new ones; new Processors take
new connections; the connection caps apply to the next connection. On the stub handler,
real sockets on 127.0.0.1, every wait a poll with a deadline."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from tests.integration.network_stub import LOOPS, Client, Stub, in_loop, serving
from tests.polling import until

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("kind", LOOPS)
def test_more_handler_tasks_serve_more_requests_at_once(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub, num_io_threads=1) as server:
            port = server.bound_port("PLAINTEXT")
            clients = [await Client.connect(port) for _ in range(3)]
            ids = [client.request("gate") for client in clients]
            await until(lambda: stub.entered == ["gate"], what="one handler busy")
            server.resize_handlers(3)
            assert server.handler_count == 3
            await until(lambda: stub.entered == ["gate"] * 3, what="three handlers busy")
            stub.gate.set()
            for client, cid in zip(clients, ids, strict=True):
                assert (await client.response()).header.correlation_id == cid
                client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_removed_processor_answers_its_request_in_flight_then_closes(kind: str) -> None:
    async def test() -> None:
        stub = Stub()
        async with serving(stub, num_network_threads=2) as server:
            port = server.bound_port("PLAINTEXT")
            # round robin: processors 0, 1, 0, 1; the newest (1) is the one removed
            kept, busy, kept_too, idle = [await Client.connect(port) for _ in range(4)]
            await until(lambda: server.connection_count == 4, what="four connections")
            in_flight = busy.request("gate")
            await until(lambda: stub.entered == ["gate"], what="the request in flight")
            server.resize_processors(1)
            assert server.processor_count == 1
            assert await idle.closed_by_server()
            stub.gate.set()
            assert (await busy.response()).header.correlation_id == in_flight
            assert await busy.closed_by_server()
            for client in (kept, kept_too, await Client.connect(port)):
                cid = client.request("")
                assert (await client.response()).header.correlation_id == cid
                client.close()
            # grown again: the new processors take the next connections
            server.resize_processors(3)
            assert server.processor_count == 3
            fresh = [await Client.connect(port) for _ in range(3)]
            for client in fresh:
                cid = client.request("")
                assert (await client.response()).header.correlation_id == cid
            names = {name for family, name, _ in server.idle_seconds() if family == "processor"}
            assert len(names) == 3
            for client in fresh:
                client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_new_connection_caps_apply_to_the_next_connection(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub(), num_io_threads=4, num_network_threads=2) as server:
            port = server.bound_port("PLAINTEXT")
            first = await Client.connect(port)
            second = await Client.connect(port)
            await until(lambda: server.connection_count == 2, what="two connections")
            static = BrokerConfig.from_properties(
                {"num.io.threads": "4", "num.network.threads": "2"}
            )
            capped = static.with_dynamic(default=False, config={"max.connections.per.ip": "2"})
            server.reconfigure(static, capped)
            third = await Client.connect(port)
            assert await third.closed_by_server()
            assert server.connection_count == 2  # the open ones stay
            for client in (first, second):
                cid = client.request("")
                assert (await client.response()).header.correlation_id == cid
                client.close()

    in_loop(kind, test)


@pytest.mark.parametrize("kind", LOOPS)
def test_a_raised_broker_wide_cap_resumes_accepting_at_once(kind: str) -> None:
    async def test() -> None:
        async with serving(Stub(), max_connections=1) as server:
            port = server.bound_port("PLAINTEXT")
            first = await Client.connect(port)
            await until(lambda: server.connection_count == 1, what="the one connection")
            waiting = await Client.connect(port)  # stays in the listen backlog
            static = BrokerConfig.from_properties(
                {"num.io.threads": "4", "num.network.threads": "2", "max.connections": "1"}
            )
            raised = static.with_dynamic(default=True, config={"max.connections": "5"})
            server.reconfigure(static, raised)
            await until(lambda: server.connection_count == 2, what="the waiting one accepted")
            for client in (first, waiting):
                cid = client.request("")
                assert (await client.response()).header.correlation_id == cid
                client.close()

    in_loop(kind, test)
