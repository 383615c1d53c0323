"""One client connection: its socket, its read buffer, and the state that mutes it.

The state machine is what keeps responses in request order. A connection reads only in
READING; once a whole request is parsed it leaves READING (it is *muted*) and comes back
only after the response is fully written -- or, for requests that get no response (acks=0
Produce), after the handler has finished. A client that pipelines requests therefore has
exactly one in the broker at a time; the rest wait in ``pending`` (already read frames) or
in the kernel's socket buffer, and a long-polling Fetch holds back only its own connection.

    READING   --request queued-->        IN_FLIGHT --response-->        SENDING
    READING   --channel full-->          BLOCKED   --slot freed-->      IN_FLIGHT
    READING   --bad frame, answerable--> IN_FLIGHT (the Processor answers it itself)
    IN_FLIGHT --no response (acks=0)-->  READING
    SENDING   --last byte written-->     READING
    any state --close-->                 CLOSED
"""

from __future__ import annotations

import enum
import logging
import socket
from collections import deque
from typing import Final

from broker.network.request_channel import Request
from broker.network.send import ResponseSend
from protocol.framing import FrameDecoder

log = logging.getLogger(__name__)


class ConnState(enum.IntEnum):
    # an IntEnum hashes in C: the table below is consulted on every state change
    READING = 1  # no request of this connection in the broker; reads when nothing pending
    BLOCKED = 2  # a parsed request waits for room in the request channel
    IN_FLIGHT = 3  # the request is queued or being handled
    SENDING = 4  # the response is being written
    CLOSED = 5


#: state -> states it may move to; anything else is a bug, refused and logged
TRANSITIONS: Final[dict[ConnState, frozenset[ConnState]]] = {
    ConnState.READING: frozenset({ConnState.BLOCKED, ConnState.IN_FLIGHT, ConnState.CLOSED}),
    ConnState.BLOCKED: frozenset({ConnState.IN_FLIGHT, ConnState.CLOSED}),
    ConnState.IN_FLIGHT: frozenset({ConnState.SENDING, ConnState.READING, ConnState.CLOSED}),
    ConnState.SENDING: frozenset({ConnState.READING, ConnState.CLOSED}),
    ConnState.CLOSED: frozenset(),
}


class InvalidTransition(RuntimeError):
    pass


class Connection:
    """State of one connection. Owned by one Processor; not safe across tasks."""

    __slots__ = (
        "blocked_request",
        "client_host",
        "client_port",
        "decoder",
        "fd",
        "id",
        "in_flight",
        "last_active",
        "listener",
        "pending",
        "reader_registered",
        "send",
        "sock",
        "state",
    )

    def __init__(
        self,
        sock: socket.socket,
        connection_id: str,
        listener: str,
        address: tuple[str, int],
        max_frame_size: int,
        now: float,
    ) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.id = connection_id
        self.listener = listener
        self.client_host, self.client_port = address[0], address[1]
        self.decoder = FrameDecoder(max_frame_size)
        #: whole frames read but not yet dispatched (a client pipelining requests)
        self.pending: deque[bytes | memoryview] = deque()
        self.state = ConnState.READING
        #: whether the event loop watches the socket for reading; it may still while
        #: muted (the Processor unregisters lazily), but a muted connection reads nothing
        self.reader_registered = False
        self.blocked_request: Request | None = None
        self.in_flight: Request | None = None
        self.send: ResponseSend | None = None
        self.last_active = now

    @property
    def muted(self) -> bool:
        return self.state is not ConnState.READING

    def move(self, new: ConnState) -> None:
        if new not in TRANSITIONS[self.state]:
            log.error("connection %s: refused transition %s -> %s", self.id, self.state, new)
            raise InvalidTransition(f"{self.state.name} -> {new.name}")
        self.state = new

    def __repr__(self) -> str:
        return f"Connection({self.id}, {self.state.name})"
