"""SaslAuthenticate (36) as the handlers see it: always ILLEGAL_SASL_STATE.

As with SaslHandshake (``broker.apis.sasl_handshake``), tokens of a SASL exchange are
taken by the connection's authenticator in the network layer; one that reaches the
handlers came on a listener without SASL or after authentication without a handshake
first. Kafka's answer, and this one: ILLEGAL_SASL_STATE with its message.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import Advertised
from protocol import ErrorCode, Response, make_response
from protocol.messages import SaslAuthenticateRequest, SaslAuthenticateResponse

MESSAGE = "SaslAuthenticate request received after successful authentication"


async def handle(ctx: Advertised, request: ApiRequest[SaslAuthenticateRequest]) -> Response:
    body = SaslAuthenticateResponse(
        error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=MESSAGE, auth_bytes=b""
    )
    return make_response(request.header, body)
