"""The network server's parts on their own: channel, quotas, connection states, ResponseSend."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.network.codec import Codec, ResponseParts
from broker.network.connection import TRANSITIONS, Connection, ConnState, InvalidTransition
from broker.network.quotas import ConnectionQuotas
from broker.network.request_channel import Request, RequestChannel
from broker.network.send import RegionTruncated, ResponseSend, parts_size

# --- RequestChannel ----------------------------------------------------------------------------


class _NullResponder:
    def respond(self, request: Request, response: object | None) -> None:
        pass

    def respond_error(self, request: Request, error_code: int) -> None:
        pass

    def deferred(self, request: Request) -> None:
        pass


def _request(n: int) -> Request:
    return Request(
        header=None,
        body=n,
        listener="L",
        connection_id=str(n),
        client_host="127.0.0.1",
        client_port=n,
        size=0,
        received_at=0.0,
        responder=_NullResponder(),
    )


async def test_channel_is_fifo_and_bounded() -> None:
    channel = RequestChannel(2)
    assert channel.offer(_request(1)) and channel.offer(_request(2))
    assert not channel.offer(_request(3))
    assert len(channel) == 2
    assert (await channel.receive()).body == 1
    assert (await channel.receive()).body == 2


async def test_channel_hands_straight_to_a_waiting_receiver() -> None:
    channel = RequestChannel(1)
    receiver = asyncio.ensure_future(channel.receive())
    await asyncio.sleep(0)  # let the receiver register
    assert channel.offer(_request(1))
    assert len(channel) == 0
    assert (await receiver).body == 1


async def test_freed_slot_wakes_parked_producers_in_order() -> None:
    channel = RequestChannel(1)
    channel.offer(_request(0))
    woken: list[str] = []

    def parked(name: str, takes: bool) -> Any:
        def wake() -> bool:
            woken.append(name)
            return takes and channel.offer(_request(9))

        return wake

    channel.when_space(parked("closed-meanwhile", False))
    channel.when_space(parked("second", True))
    channel.when_space(parked("third", True))
    await channel.receive()
    # the first declined the slot, so the second got it; the third waits for the next
    assert woken == ["closed-meanwhile", "second"]
    assert channel.waiting_for_space == 1
    assert len(channel) == 1


async def test_cancelled_receiver_does_not_lose_a_request() -> None:
    channel = RequestChannel(1)
    receiver = asyncio.ensure_future(channel.receive())
    await asyncio.sleep(0)
    channel.offer(_request(5))  # resolves the receiver's future...
    receiver.cancel()  # ...and the task is cancelled before it resumes
    with pytest.raises(asyncio.CancelledError):
        await receiver
    assert (await channel.receive()).body == 5


def test_channel_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        RequestChannel(0)


# --- ConnectionQuotas ------------------------------------------------------------------------


def test_per_ip_caps_with_overrides() -> None:
    quotas = ConnectionQuotas(max_connections=100, max_per_ip=2, per_ip_overrides={"10.0.0.1": 3})
    assert quotas.admit("1.1.1.1") and quotas.admit("1.1.1.1")
    assert not quotas.admit("1.1.1.1")
    assert all(quotas.admit("10.0.0.1") for _ in range(3))
    assert not quotas.admit("10.0.0.1")
    quotas.release("1.1.1.1")
    assert quotas.admit("1.1.1.1")
    assert quotas.total == 5


def test_broker_cap_ignores_exempt_listeners_and_notifies_on_release() -> None:
    quotas = ConnectionQuotas(max_connections=1, max_per_ip=10)
    released: list[int] = []
    quotas.on_release(lambda: released.append(quotas.total))
    assert quotas.admit("a")
    assert quotas.at_capacity()
    assert quotas.admit("b", exempt=True)  # the control plane still gets in
    assert quotas.total == 1
    quotas.release("b", exempt=True)
    assert released == []
    quotas.release("a")
    assert released == [0] and not quotas.at_capacity()


# --- connection states -------------------------------------------------------------------------


@pytest.fixture
def conn() -> Iterator[Connection]:
    a, b = socket.socketpair()
    try:
        yield Connection(a, "c", "L", ("127.0.0.1", 1), 100, 0.0)
    finally:
        a.close()
        b.close()


def test_request_cycle_follows_the_table(conn: Connection) -> None:
    for state in (ConnState.IN_FLIGHT, ConnState.SENDING, ConnState.READING, ConnState.BLOCKED,
                  ConnState.IN_FLIGHT, ConnState.READING, ConnState.CLOSED):  # fmt: skip
        conn.move(state)
    assert conn.state is ConnState.CLOSED


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ((), ConnState.READING),
        ((), ConnState.SENDING),
        ((ConnState.IN_FLIGHT,), ConnState.BLOCKED),
        ((ConnState.BLOCKED,), ConnState.SENDING),
        ((ConnState.BLOCKED,), ConnState.READING),
        ((ConnState.IN_FLIGHT, ConnState.SENDING), ConnState.IN_FLIGHT),
        ((ConnState.CLOSED,), ConnState.READING),
    ],
)
def test_invalid_transitions_are_refused(
    conn: Connection, path: tuple[ConnState, ...], refused: ConnState
) -> None:
    for state in path:
        conn.move(state)
    with pytest.raises(InvalidTransition):
        conn.move(refused)
    assert conn.state is (path[-1] if path else ConnState.READING)


def test_every_state_has_a_row() -> None:
    assert set(TRANSITIONS) == set(ConnState)
    assert all(ConnState.CLOSED in targets for s, targets in TRANSITIONS.items() if targets)


# --- ResponseSend ------------------------------------------------------------------------------


class Region:
    def __init__(self, fd: int, position: int, length: int) -> None:
        self._fd, self.position, self.length = fd, position, length

    def fileno(self) -> int:
        return self._fd

    def __len__(self) -> int:
        return self.length


def _drain(sock: socket.socket, expected: int) -> bytes:
    data = bytearray()
    while len(data) < expected:
        chunk = sock.recv(1 << 20)
        assert chunk, "peer closed early"
        data += chunk
    return bytes(data)


def test_send_prefixes_the_size_and_joins_bytes_and_regions(tmp_path: Path) -> None:
    path = tmp_path / "segment"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    a, b = socket.socketpair()
    try:
        a.setblocking(False)
        parts = [b"head", Region(fd, 2, 5), bytearray(b"-"), memoryview(b"tail"), b""]
        assert parts_size(parts) == 14
        send = ResponseSend(parts)
        assert send.size == 14
        assert send.write(a) and send.done
        assert _drain(b, 18) == struct.pack(">i", 14) + b"head23456-tail"
    finally:
        os.close(fd)
        a.close()
        b.close()


def test_send_resumes_after_a_full_socket_buffer(tmp_path: Path) -> None:
    payload = os.urandom(3 << 20)
    path = tmp_path / "segment"
    path.write_bytes(payload)
    fd = os.open(path, os.O_RDONLY)
    a, b = socket.socketpair()
    try:
        a.setblocking(False)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        send = ResponseSend([b"h" * 200_000, Region(fd, 0, len(payload)), b"t" * 10])
        received = bytearray()
        rounds = 0
        while not send.write(a):
            rounds += 1
            received += b.recv(1 << 20)  # the reader makes room, as a client would
        expected = 4 + 200_000 + len(payload) + 10
        received += _drain(b, expected - len(received)) if len(received) < expected else b""
        assert rounds > 0  # it really did stop at a full buffer and resume
        assert send.sent == expected
        assert bytes(received[4 + 200_000 : -10]) == payload
    finally:
        os.close(fd)
        a.close()
        b.close()


def test_region_past_the_end_of_its_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "segment"
    path.write_bytes(b"short")
    fd = os.open(path, os.O_RDONLY)
    a, b = socket.socketpair()
    try:
        a.setblocking(False)
        send = ResponseSend([Region(fd, 0, 100)])
        with pytest.raises(RegionTruncated):
            send.write(a)
    finally:
        os.close(fd)
        a.close()
        b.close()


def test_region_without_a_descriptor_is_refused() -> None:
    class NoFd:
        position = 0

        def __len__(self) -> int:
            return 1

    with pytest.raises(TypeError, match="file descriptor"):
        ResponseSend([NoFd()])


def test_default_codec_names_apis_in_kafkas_spelling() -> None:
    codec = Codec.default()
    assert codec.api_name(18) == "ApiVersions"
    assert codec.api_name(4) == "LeaderAndIsr"
    assert codec.api_name(9999) == "9999"
    assert codec.encode(ResponseParts([b"x"])) == [b"x"]


def test_storage_file_regions_are_sent_as_they_are(tmp_path: Path) -> None:
    from storage.file_region import FileRegion

    path = tmp_path / "segment"
    path.write_bytes(b"abcdefghij")
    fd = os.open(path, os.O_RDONLY)
    a, b = socket.socketpair()
    try:
        a.setblocking(False)
        send = ResponseSend([b"h", FileRegion(fd=fd, position=3, length=4)])
        assert send.write(a)
        assert _drain(b, 9) == struct.pack(">i", 5) + b"hdefg"
    finally:
        os.close(fd)
        a.close()
        b.close()
