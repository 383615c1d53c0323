"""TcpChannelManager against a small fake broker on 127.0.0.1: order, retries, removal."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

import protocol
from client.security import PLAINTEXT
from controller.tcp_channel import ChannelConfig, TcpChannelManager
from protocol.messages import LeaderAndIsrRequest, LeaderAndIsrResponse
from tests.polling import until
from zk.model import BrokerInfo, EndPoint

SIZE = struct.Struct(">i")


@dataclass
class FakeBroker:
    """Answers every request with an empty response; can drop the first connections."""

    drop_first: int = 0
    requests: list[protocol.Request] = field(default_factory=list)
    connections: int = 0
    server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                (size,) = SIZE.unpack(await reader.readexactly(4))
                request = protocol.decode_request(await reader.readexactly(size))
                if self.connections <= self.drop_first:
                    return  # read it, never answer: the controller must retry elsewhere
                self.requests.append(request)
                frame = protocol.encode_response(
                    protocol.make_response(request.header, LeaderAndIsrResponse())
                )
                writer.write(SIZE.pack(len(frame)) + frame)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


@pytest.fixture
async def fake_broker() -> AsyncIterator[FakeBroker]:
    fb = FakeBroker()
    fb.server = await asyncio.start_server(fb.handle, "127.0.0.1", 0)
    yield fb
    fb.server.close()
    await fb.server.wait_closed()


def body(epoch: int) -> Any:
    return LeaderAndIsrRequest(controller_id=1, controller_epoch=epoch, broker_epoch=5)


async def test_requests_arrive_in_order_with_responses(fake_broker: FakeBroker) -> None:
    channel = TcpChannelManager(controller_id=1, config=ChannelConfig(PLAINTEXT))
    channel.add_broker(BrokerInfo(7, (EndPoint("127.0.0.1", fake_broker.port),)))
    responses: list[Any] = []
    for epoch in range(1, 6):
        channel.send(7, 4, 5, body(epoch), responses.append)
    try:
        await until(lambda: len(responses) >= 5, 10, "five responses")
        assert [r.body.controller_epoch for r in fake_broker.requests] == [1, 2, 3, 4, 5]
        assert all(r.header.client_id == "controller-1" for r in fake_broker.requests)
        assert all(isinstance(r, LeaderAndIsrResponse) for r in responses)
        assert fake_broker.connections == 1  # one connection, reused
    finally:
        await channel.shutdown()


async def test_a_lost_connection_is_retried_with_the_same_request(
    fake_broker: FakeBroker,
) -> None:
    fake_broker.drop_first = 2
    config = ChannelConfig(
        PLAINTEXT, request_timeout_s=5.0, backoff_initial_s=0.01, backoff_max_s=0.05
    )
    channel = TcpChannelManager(controller_id=1, config=config)
    channel.add_broker(BrokerInfo(7, (EndPoint("127.0.0.1", fake_broker.port),)))
    responses: list[Any] = []
    channel.send(7, 4, 5, body(9), responses.append)
    try:
        await until(lambda: len(responses) >= 1, 10, "a response")
        assert fake_broker.connections == 3
        assert [r.body.controller_epoch for r in fake_broker.requests] == [9]
    finally:
        await channel.shutdown()


async def test_control_plane_listener_is_preferred(fake_broker: FakeBroker) -> None:
    channel = TcpChannelManager(1, ChannelConfig(PLAINTEXT, listener_name="CONTROL_PLANE"))
    broker = BrokerInfo(
        7,
        (EndPoint("127.0.0.1", 1), EndPoint("127.0.0.1", fake_broker.port, "CONTROL_PLANE")),
    )
    channel.add_broker(broker)
    responses: list[Any] = []
    channel.send(7, 4, 5, body(1), responses.append)
    try:
        await until(lambda: len(responses) >= 1, 10, "a response")
    finally:
        await channel.shutdown()


async def test_unknown_and_removed_brokers_get_nothing(fake_broker: FakeBroker) -> None:
    channel = TcpChannelManager(controller_id=1, config=ChannelConfig(PLAINTEXT))
    channel.send(99, 4, 5, body(1))  # never added: dropped, no error
    channel.add_broker(BrokerInfo(7, (EndPoint("127.0.0.1", fake_broker.port),)))
    channel.remove_broker(7)
    channel.send(7, 4, 5, body(1))
    assert channel.queued(7) == 0
    await channel.shutdown()
    assert fake_broker.requests == []
