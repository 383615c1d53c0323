"""When a connection reads (broker.network.connection): in READING with room in its
pipeline; ahead of its turn while its newest request, a Produce, is in the handlers,
within the pipeline depth; never while a request holds it (channel full, an answer to be
written first, a request of another API in the handlers) or its pipeline is full."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from broker.network.connection import Connection, ConnState
from broker.network.request_channel import Request
from broker.network.send import ResponseSend
from protocol import ApiKey
from protocol.messages import RequestHeader


class NoResponder:
    def respond(self, request: Request, response: object | None) -> None:
        raise AssertionError("not answered here")

    def respond_error(self, request: Request, error_code: int) -> None:
        raise AssertionError("not answered here")

    def deferred(self, request: Request) -> None:
        raise AssertionError("not answered here")


def request(api_key: int) -> Request:
    header = RequestHeader(api_key=api_key, api_version=9, correlation_id=1, client_id="c")
    return Request(header, None, "PLAINTEXT", "c-1", "127.0.0.1", 1, 10, 0.0, NoResponder())


@pytest.fixture
def conn() -> Iterator[Connection]:
    ours, theirs = socket.socketpair()
    try:
        yield Connection(ours, "c-1", "PLAINTEXT", ("127.0.0.1", 1), 1 << 20, 0.0, depth=3)
    finally:
        ours.close()
        theirs.close()


def take(conn: Connection, api_key: int) -> Request:
    """Dispatch a request of ``api_key``: a reply slot, and the connection IN_FLIGHT."""
    taken = request(api_key)
    conn.replies.open(taken)
    conn.in_flight = taken
    conn.move(ConnState.IN_FLIGHT)
    return taken


def test_reading_with_room_reads_and_a_full_pipeline_mutes(conn: Connection) -> None:
    assert not conn.muted
    for _ in range(3):
        conn.replies.open(object())  # three answers owed: the depth
    assert conn.muted
    conn.replies.fill(conn.replies[0].key, None)
    conn.replies.take()
    assert not conn.muted
    conn.send = ResponseSend([b"answer"])  # an answer being written counts too
    assert conn.muted


def test_a_produce_in_the_handlers_reads_ahead_within_the_depth(conn: Connection) -> None:
    take(conn, ApiKey.PRODUCE)
    assert conn.reads_ahead and not conn.muted
    conn.pending.append(b"next")  # 1 in the broker + 1 read ahead, of 3
    assert conn.reads_ahead
    conn.pending.append(b"after")  # the depth reached: what arrives now waits
    assert not conn.reads_ahead and conn.muted


def test_other_requests_in_the_handlers_hold_the_connection(conn: Connection) -> None:
    take(conn, ApiKey.FETCH)
    assert not conn.reads_ahead and conn.muted
    conn.in_flight = object()  # the Processor's own answer to a malformed frame
    assert not conn.reads_ahead and conn.muted


def test_a_blocked_or_answered_produce_holds_the_connection(conn: Connection) -> None:
    blocked = request(ApiKey.PRODUCE)
    conn.blocked_request = blocked
    conn.move(ConnState.BLOCKED)  # the request channel is full: read nothing
    assert conn.muted
    conn.in_flight, conn.blocked_request = blocked, None
    conn.move(ConnState.IN_FLIGHT)
    conn.replies.open(blocked)
    assert not conn.muted
    conn.in_flight = None
    conn.move(ConnState.SENDING)  # answered with nothing owed before: Kafka's rule
    assert conn.muted


def test_a_throttled_connection_reads_nothing(conn: Connection) -> None:
    conn.throttled_until = 12.5  # a client quota's throttle (KIP-219)
    assert conn.muted  # READING with room, yet muted
    take(conn, ApiKey.PRODUCE)
    assert conn.reads_ahead and conn.muted  # not even ahead of its turn
    conn.throttled_until = 0.0
    assert not conn.muted
