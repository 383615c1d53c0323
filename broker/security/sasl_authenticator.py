"""The broker's side of SASL on one connection, sans-IO: frames in, decisions out.

The network layer (``broker.network.processor``) hands every frame of a connection on a
SASL listener to its ``SaslAuthenticator`` before anything else, with the time, and does
what the answer says:

- ``FORWARD``  parse the frame and hand it to the handlers as on any listener (ApiVersions
  before authentication; everything once authenticated);
- ``Answer``   write this response (a SaslHandshake or SaslAuthenticate response, or a bare
  token frame after SaslHandshake v0), then read on;
- ``Refuse``   an authentication failure: after ``connection.failed.authentication.delay.ms``
  write the response, if any, then close (Kafka delays the answer so that guessing
  passwords is slow, and answers it so that the client can say why);
- ``Close``    close at once, unanswered (not a Kafka client, or not one that follows the
  protocol).

What it does in each state is the table of ``broker.security.sasl_states``. The exchange
itself is a mechanism's state machine (``protocol.sasl``): ``PlainServer`` or
``ScramServer``, made fresh for each (re-)authentication.

Sessions (KIP-368): with ``connections.max.reauth.ms`` above 0, a successful
SaslAuthenticate v1+ response carries that lifetime, and the session expires after it. A
client that announced re-authentication (it used SaslAuthenticate v1 or later) may send
SaslHandshake and SaslAuthenticate again on its authenticated connection, with the same
mechanism, and must come back as the same principal. The first request that arrives after
the session expired, re-authentication or not, closes the connection, as Kafka does.

Messages are Kafka's. A mechanism's failure either carries a message meant for the
client (``SaslAuthenticationFailed``: "Authentication failed: Invalid username or
password") or not (``SaslInvalidCredentials``), in which case the client reads only
"Authentication failed during authentication due to invalid credentials with SASL
mechanism <M>". Tokens and passwords are never logged.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import protocol
from broker.security.principal import KafkaPrincipal
from broker.security.sasl_states import ACTIONS, Action, SaslState, kind_of
from protocol import ApiKey, ErrorCode
from protocol.api import api_name
from protocol.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from protocol.sasl.errors import SaslAuthenticationFailed, SaslError

log = logging.getLogger(__name__)

_KEY_AND_VERSION: Final = struct.Struct(">hh")
_HANDSHAKE_KEY: Final = struct.pack(">h", ApiKey.SASL_HANDSHAKE)
#: the label of a failed handshake's mechanism: never the client's own text, which would
#: let any peer add metric series
UNSUPPORTED_MECHANISM_LABEL: Final = "unsupported"


class ServerExchange(Protocol):
    """One mechanism's server side (``protocol.sasl``: PlainServer, ScramServer)."""

    @property
    def complete(self) -> bool: ...

    @property
    def username(self) -> str | None: ...

    def respond(self, token: bytes) -> bytes: ...


@dataclass(frozen=True, slots=True)
class SaslListenerSettings:
    """What a SASL listener's authenticators share. ``exchanges`` maps each enabled
    mechanism, in ``sasl.enabled.mechanisms`` order, to a maker of its server side."""

    listener: str
    exchanges: Mapping[str, Callable[[], ServerExchange]]
    #: connections.max.reauth.ms; 0: sessions never expire
    reauth_ms: int
    #: connection.failed.authentication.delay.ms, in seconds
    failure_delay_s: float
    #: sasl.server.max.receive.size: the largest frame read before authentication
    max_receive_size: int

    @property
    def mechanisms(self) -> list[str]:
        return list(self.exchanges)


@dataclass(frozen=True, slots=True)
class Forward:
    """Hand the frame to the handlers."""


FORWARD: Final = Forward()


@dataclass(frozen=True, slots=True)
class RawToken:
    """A token written as a bare size-prefixed frame (after SaslHandshake v0)."""

    token: bytes


@dataclass(frozen=True, slots=True)
class Answer:
    response: object  # a protocol Response, or a RawToken


@dataclass(frozen=True, slots=True)
class Refuse:
    """Authentication failed: answer after the delay, then close. ``response`` is the
    answer; when None and ``error_header`` is set, the answer is the request's own API's
    error response (built by the network's codec) with ``error_code``; neither: closed
    unanswered."""

    reason: str
    response: object | None = None
    error_header: Any = None
    error_code: int = ErrorCode.ILLEGAL_SASL_STATE


@dataclass(frozen=True, slots=True)
class Close:
    reason: str
    #: why, as the closed-connections metric counts it
    label: str = "authentication"


Outcome = Forward | Answer | Refuse | Close

#: (mechanism, re-authentication, success) -> None: counted per listener by the caller
ResultSink = Callable[[str, bool, bool], None]


class SaslAuthenticator:
    """The SASL state of one connection. Event-loop bound; ``now`` is the network's
    clock in seconds."""

    __slots__ = (
        "_exchange",
        "_mechanism",
        "_on_result",
        "_reauth_bad_mechanism",
        "_settings",
        "principal",
        "session_expires_at",
        "state",
        "supports_reauth",
    )

    def __init__(self, settings: SaslListenerSettings, on_result: ResultSink) -> None:
        self._settings = settings
        self._on_result = on_result
        self.state = SaslState.INITIAL
        #: who the connection authenticated as (None before the first success)
        self.principal: KafkaPrincipal | None = None
        #: when the session ends (the network's clock), None when it never does
        self.session_expires_at: float | None = None
        #: the client used SaslAuthenticate v1+: it may re-authenticate (KIP-368)
        self.supports_reauth = False
        self._mechanism = ""
        self._exchange: ServerExchange | None = None
        self._reauth_bad_mechanism: str | None = None

    # --- inspection -------------------------------------------------------------------------

    @property
    def settings(self) -> SaslListenerSettings:
        return self._settings

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.AUTHENTICATED

    @property
    def failed(self) -> bool:
        return self.state is SaslState.FAILED

    @property
    def mechanism(self) -> str:
        return self._mechanism

    @property
    def max_receive_size(self) -> int | None:
        """The frame size cap to apply now: the SASL one until first authenticated."""
        return None if self.principal is not None else self._settings.max_receive_size

    # --- the frames ---------------------------------------------------------------------------

    def on_frame(self, frame: bytes | memoryview, now: float) -> Outcome:
        state = self.state
        if state is SaslState.AUTHENTICATED:  # the common case, kept cheap
            expires = self.session_expires_at
            if expires is not None and now >= expires:
                return Close("session expired without re-authentication", "session-expired")
            if bytes(frame[:2]) != _HANDSHAKE_KEY:
                return FORWARD
        if state is SaslState.AUTHENTICATE_RAW:
            return self._raw_token(bytes(frame), now)
        if len(frame) < _KEY_AND_VERSION.size:
            return Close("frame too short for a request header")
        api_key, _version = _KEY_AND_VERSION.unpack_from(frame, 0)
        action = ACTIONS[state, kind_of(api_key)]
        if action is Action.FORWARD:
            return FORWARD
        if action is Action.VERSIONS:
            return self._api_versions(_version)
        if action is Action.CLOSE:
            return Close(f"unexpected request (api key {api_key}) in SASL state {state.value}")
        decoded = _decode(frame)
        if decoded is None:
            return Close(f"malformed request (api key {api_key}) in SASL state {state.value}")
        if action is Action.HANDSHAKE:
            return self._handshake(decoded, reauth=False)
        if action is Action.REAUTH:
            if not self.supports_reauth:
                return FORWARD  # the handlers answer ILLEGAL_SASL_STATE, as Kafka does
            return self._handshake(decoded, reauth=True)
        if action is Action.TOKEN:
            return self._token(decoded, now)
        # Action.ILLEGAL
        name = api_name(api_key)
        return self._fail(
            f"Unexpected Kafka request of type {name} during SASL authentication.",
            Refuse(
                f"unexpected {name} during SASL authentication",
                error_header=decoded.header,
                error_code=ErrorCode.ILLEGAL_SASL_STATE,
            ),
        )

    def _api_versions(self, version: int) -> Outcome:
        low, high = protocol.SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
        if low <= version <= high:
            # an unsupported version is answered with our ranges and may be retried
            self.state = SaslState.HANDSHAKE
        return FORWARD

    def _handshake(self, request: protocol.Request, *, reauth: bool) -> Outcome:
        version = request.api_version
        body = request.body
        low, high = protocol.SUPPORTED_VERSIONS[ApiKey.SASL_HANDSHAKE]
        if not isinstance(body, SaslHandshakeRequest) or not low <= version <= high:
            return Close(f"SaslHandshake v{version} is not supported")
        enabled = self._settings.mechanisms
        mechanism = body.mechanism
        if mechanism not in self._settings.exchanges:
            refusal = Refuse(
                "unsupported SASL mechanism",
                response=protocol.make_response(
                    request.header,
                    SaslHandshakeResponse(
                        error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled
                    ),
                ),
            )
            log.info(
                "failed %s on listener %s: SASL mechanism %r is not enabled (%s are)",
                "re-authentication" if reauth else "authentication",
                self._settings.listener, mechanism[:64], ", ".join(enabled),
            )  # fmt: skip
            self._count(UNSUPPORTED_MECHANISM_LABEL, reauth, success=False)
            self.state = SaslState.FAILED
            return refusal
        if reauth:
            if version == 0:  # tokens without headers cannot follow an authenticated session
                return self._fail("re-authentication needs SaslHandshake v1", Refuse("reauth v0"))
            if mechanism != self._mechanism:
                self._reauth_bad_mechanism = (
                    f"SASL mechanism '{mechanism}' requested by client is not supported for "
                    f"re-authentication of mechanism '{self._mechanism}'"
                )
            self.state = SaslState.REAUTHENTICATE
        else:
            self._mechanism = mechanism
            self.state = SaslState.AUTHENTICATE if version >= 1 else SaslState.AUTHENTICATE_RAW
        self._exchange = self._settings.exchanges[mechanism]()
        return Answer(
            protocol.make_response(
                request.header, SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled)
            )
        )

    def _token(self, request: protocol.Request, now: float) -> Outcome:
        version = request.api_version
        body = request.body
        low, high = protocol.SUPPORTED_VERSIONS[ApiKey.SASL_AUTHENTICATE]
        if not isinstance(body, SaslAuthenticateRequest) or not low <= version <= high:
            return Close(f"SaslAuthenticate v{version} is not supported")
        reauth = self.state is SaslState.REAUTHENTICATE
        if not reauth and version > 0:
            self.supports_reauth = True

        def refusal(message: str) -> Refuse:
            response = SaslAuthenticateResponse(
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                error_message=message,
                auth_bytes=b"",
            )
            return Refuse(message, response=protocol.make_response(request.header, response))

        if self._reauth_bad_mechanism is not None:
            message = self._reauth_bad_mechanism
            return self._fail(message, refusal(message))
        try:
            answer, lifetime_ms = self._evaluate(bytes(body.auth_bytes), now)
        except _Failed as failure:
            return self._fail(failure.message, refusal(failure.message))
        response = SaslAuthenticateResponse(
            error_code=ErrorCode.NONE,
            error_message=None,
            auth_bytes=answer,
            session_lifetime_ms=lifetime_ms,
        )
        return Answer(protocol.make_response(request.header, response))

    def _raw_token(self, token: bytes, now: float) -> Outcome:
        try:
            answer, _ = self._evaluate(token, now)
        except _Failed as failure:
            return self._fail(failure.message, Refuse(failure.message))  # no way to say why
        return Answer(RawToken(answer))

    def _evaluate(self, token: bytes, now: float) -> tuple[bytes, int]:
        """Run the mechanism on ``token``: its answer and, once complete, the session's
        lifetime in ms (0 before or without one). Raises _Failed."""
        exchange = self._exchange
        assert exchange is not None
        reauth = self.state is SaslState.REAUTHENTICATE
        doing = "re-authentication" if reauth else "authentication"
        try:
            answer = exchange.respond(token)
        except SaslAuthenticationFailed as exc:
            raise _Failed(str(exc)) from None
        except SaslError as exc:
            log.debug("SASL %s with %s failed: %s", doing, self._mechanism, exc)
            raise _Failed(
                f"Authentication failed during {doing} due to invalid credentials with "
                f"SASL mechanism {self._mechanism}"
            ) from None
        if not exchange.complete:
            return answer, 0
        assert exchange.username is not None
        principal = KafkaPrincipal.user(exchange.username)
        previous = self.principal
        if reauth and previous is not None and principal != previous:
            raise _Failed(
                "Cannot change principals during re-authentication from "
                f"{previous.principal_type}.{previous.name}: "
                f"{principal.principal_type}.{principal.name}"
            )
        lifetime_ms = max(0, self._settings.reauth_ms)
        self.session_expires_at = now + lifetime_ms / 1000 if lifetime_ms else None
        self.principal = principal
        self.state = SaslState.AUTHENTICATED
        self._exchange = None
        self._count(self._mechanism, reauth, success=True)
        return answer, lifetime_ms

    def _fail(self, message: str, refusal: Refuse) -> Refuse:
        reauth = self.state is SaslState.REAUTHENTICATE
        log.info(
            "failed %s on listener %s (%s): %s",
            "re-authentication" if reauth else "authentication",
            self._settings.listener,
            self._mechanism or "no mechanism",
            message,
        )
        self._count(self._mechanism or UNSUPPORTED_MECHANISM_LABEL, reauth, success=False)
        self.state = SaslState.FAILED
        self._exchange = None
        return refusal

    def _count(self, mechanism: str, reauth: bool, *, success: bool) -> None:
        self._on_result(mechanism, reauth, success)


class _Failed(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _decode(frame: bytes | memoryview) -> protocol.Request | None:
    try:
        return protocol.decode_request(frame)
    except protocol.ProtocolError:
        return None
