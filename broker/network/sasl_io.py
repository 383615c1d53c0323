"""The Processor's SASL side: carrying out what a connection's authenticator decides.

On a SASL listener every frame of a connection goes to its ``SaslAuthenticator``
(``broker.security.sasl_authenticator``, sans-IO) before anything else. The authenticator
forwards the frames a handler should see (ApiVersions, and every request once
authenticated) and takes the rest, deciding one of:

    Answer   answer the frame (SaslHandshake, SaslAuthenticate, or a bare token after
             SaslHandshake v0) on the next loop iteration; once authenticated the
             connection gets its principal and the full frame size limit back
    Refuse   answer after ``connection.failed.authentication.delay.ms`` (or close then,
             when there is no answer); the Processor closes the connection once the
             refusal is written
    Close    close now, unanswered (a request other than SASL's before authentication)

An answer takes a reply slot of its own, like the Processor's answer to a malformed frame,
so responses stay in request order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from broker.network.codec import Codec, ResponseParts
from broker.network.connection import Connection, ConnState
from broker.security.sasl_authenticator import (
    FORWARD,
    Answer,
    Close,
    RawToken,
    Refuse,
    SaslAuthenticator,
)

log = logging.getLogger(__name__)

#: fills a reply slot with its response: (connection, slot token, response)
AnswerLater = Callable[[Connection, object, object], None]
#: closes a connection: (connection, reason)
CloseConnection = Callable[[Connection, str], None]


class SaslIo:
    """SASL on the connections of one Processor. Event-loop bound."""

    def __init__(
        self,
        codec: Codec,
        loop: asyncio.AbstractEventLoop,
        max_frame_size: int,
        answer_later: AnswerLater,
        close: CloseConnection,
    ) -> None:
        self._codec = codec
        self._loop = loop
        self._max_frame_size = max_frame_size
        self._answer_later = answer_later
        self._close = close

    def took(
        self, conn: Connection, sasl: SaslAuthenticator, frame: bytes | memoryview, now: float
    ) -> bool:
        """Show ``frame`` to the connection's authenticator; True when it took the frame
        (answered, refused or closed), False when the handlers should have it."""
        outcome = sasl.on_frame(frame, now)
        if outcome is FORWARD:
            return False
        if isinstance(outcome, Close):
            log.info("closing %s: %s", conn.id, outcome.reason)
            self._close(conn, outcome.label)
            return True
        token = object()  # the reply slot of an answer that no handler sees
        conn.replies.open(token)
        conn.in_flight = token
        conn.move(ConnState.IN_FLIGHT)
        if isinstance(outcome, Answer):
            response = outcome.response
            if isinstance(response, RawToken):  # after SaslHandshake v0: a bare frame
                response = ResponseParts((response.token,))
            if sasl.authenticated and sasl.principal is not None:
                conn.principal = sasl.principal
                conn.decoder.max_frame_size = self._max_frame_size
            # next loop iteration, not recursively (as the answer to a malformed frame)
            self._loop.call_soon(self._answer_later, conn, token, response)
            return True
        assert isinstance(outcome, Refuse)
        answer = outcome.response
        if answer is None and outcome.error_header is not None:
            try:
                answer = self._codec.error_response(outcome.error_header, outcome.error_code)
            except Exception:  # a failing error builder costs this connection only
                log.exception("building the SASL error response for %s failed", conn.id)
        delay = sasl.settings.failure_delay_s
        if answer is None:
            self._loop.call_later(delay, self._close, conn, "authentication-failed")
        else:
            self._loop.call_later(delay, self._answer_later, conn, token, answer)
        return True
