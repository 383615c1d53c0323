"""One client connection: its socket, its read buffer, and the state that mutes it.

The state machine is what keeps appends and responses in request order. It describes the
connection's newest request. A connection reads only in READING; once a whole request is
parsed it leaves READING (it is *muted*) and comes back once that request is done with:
after its response is fully written, after the handler finished a request that gets no
response (acks=0 Produce), or -- pipelining, ``broker.network.pipeline`` -- as soon as a
Produce waits in the DelayedProduce purgatory, or a request is answered while earlier
answers are still owed. A client that sends several requests at once therefore has at
most one of them in the handlers at a time; the rest wait in ``pending`` (already read
frames) or in the kernel's socket buffer, and a long-polling Fetch holds back only its
own connection.

    READING   --request queued-->        IN_FLIGHT --response ready-->  SENDING
    READING   --channel full-->          BLOCKED   --slot freed-->      IN_FLIGHT
    READING   --bad frame, answerable--> IN_FLIGHT (the Processor answers it itself)
    IN_FLIGHT --no response (acks=0)-->  READING
    IN_FLIGHT --deferred, pipelined-->   READING (its reply slot stays open)
    IN_FLIGHT --answered, earlier owed-> READING (its answer waits for its turn)
    SENDING   --its response written-->  READING
    any state --close-->                 CLOSED

Writing is the other half and runs beside this machine: ``replies`` orders the responses
the connection owes, ``send`` is the one being written. SENDING means the newest request
was answered with nothing owed before it, and the connection waits for that answer to be
written, as Kafka's mute-until-sent does; pipelined responses may be written in any
state. READING with a full ``replies`` reads nothing until the oldest is written.
"""

from __future__ import annotations

import enum
import logging
import socket
from collections import deque
from typing import Final

from broker.network.pipeline import DEFAULT_DEPTH, FREE_DEPTH, ReplyQueue, lets_next_in
from broker.network.request_channel import Request
from broker.network.send import ResponseSend
from broker.network.tls_transport import TlsSession
from broker.security.principal import ANONYMOUS, KafkaPrincipal
from broker.security.sasl_authenticator import SaslAuthenticator
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
        "principal",
        "reader_registered",
        "replies",
        "sasl",
        "send",
        "sent_request",
        "sock",
        "state",
        "throttled_until",
        "tls",
    )

    def __init__(
        self,
        sock: socket.socket,
        connection_id: str,
        listener: str,
        address: tuple[str, int],
        max_frame_size: int,
        now: float,
        depth: int = DEFAULT_DEPTH,
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
        #: the request in the handlers (queued or being handled, not yet deferred)
        self.in_flight: object | None = None  # a Request, or the token of an own answer
        #: responses owed, in request order (one slot per request taken off the socket)
        self.replies = ReplyQueue(depth)
        #: the response being written, and its request (None: the Processor's own answer)
        self.send: ResponseSend | None = None
        self.sent_request: Request | None = None
        self.last_active = now
        #: who the connection authenticated as; every request carries it
        self.principal: KafkaPrincipal = ANONYMOUS
        #: the TLS session on an SSL or SASL_SSL listener (None: plaintext)
        self.tls: TlsSession | None = None
        #: the SASL state on a SASL listener (``broker.security.sasl_authenticator``):
        #: it sees every frame first
        self.sasl: SaslAuthenticator | None = None
        #: a client quota's throttle (KIP-219): until this time (the Processor's clock)
        #: nothing more is read; 0 when not throttled (the Processor's timer clears it)
        self.throttled_until = 0.0

    @property
    def muted(self) -> bool:
        """Whether the connection must read nothing now: bytes that arrive stay in the
        kernel's buffer. Not muted are a connection in READING with room in its pipeline
        (it reads and takes the next request) and one that reads ahead (below).

        Muted: a request of it waits for the request channel (BLOCKED: the broker is
        overloaded), waits to be answered before the next is read (SENDING, or a
        request in the handlers that does not pipeline), its pipeline is full, or a
        client quota throttles it."""
        if self.throttled_until:
            return True
        state = self.state
        if state is ConnState.READING:
            return not self.has_room
        return state is not ConnState.IN_FLIGHT or not self.reads_ahead

    @property
    def reads_ahead(self) -> bool:
        """Whether the connection, its newest request in the handlers, reads what arrives
        meanwhile into ``pending`` (dispatched once the handler lets the next in).

        A pipelined API's request (Produce) most often lets the next one in as soon as
        its handler has appended (``broker.network.pipeline``), and a client pipelining
        produces has sent its next one by then. Reading it now rather than later changes
        nothing of the order -- frames leave ``pending`` only as the rules allow -- and
        keeps the socket watched: otherwise every such request would cost an
        unregistration and a registration of the reader. Bounded as the pipeline is:
        the frames read ahead count as requests of the connection in the broker."""
        request = self.in_flight
        if not isinstance(request, Request) or not lets_next_in(request.api_key):
            return False
        pending = self.pending
        extra = (self.send is not None) + len(pending)
        # the frames' bytes matter only past the free depth (summed only then)
        return self.replies.room_for(
            extra, sum(map(len, pending)) if len(self.replies) + extra >= FREE_DEPTH else 0
        )

    @property
    def has_room(self) -> bool:
        """Whether one more request may enter the broker: the requests whose responses are
        owed or being written stay within the pipeline's bounds."""
        return self.replies.room_for(self.send is not None, 0)

    @property
    def idle(self) -> bool:
        """Nothing of this connection in the broker: no request, no response owed."""
        return self.state is ConnState.READING and not self.replies and self.send is None

    def move(self, new: ConnState) -> None:
        if new not in TRANSITIONS[self.state]:
            log.error("connection %s: refused transition %s -> %s", self.id, self.state, new)
            raise InvalidTransition(f"{self.state.name} -> {new.name}")
        self.state = new

    def __repr__(self) -> str:
        return f"Connection({self.id}, {self.state.name})"
