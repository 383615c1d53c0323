"""SaslHandshake (17) as the handlers see it: always ILLEGAL_SASL_STATE.

A SASL exchange never reaches the handlers: on a SASL listener the connection's
authenticator (``broker.security.sasl_authenticator``) answers SaslHandshake and
SaslAuthenticate itself, in the network layer, before and (to re-authenticate) after
authentication. What arrives here is a handshake the authenticator did not take: one on a
listener without SASL, or on an authenticated connection whose client did not announce
re-authentication (SaslAuthenticate v0). Kafka answers those with ILLEGAL_SASL_STATE and
no mechanisms, and so does this handler. Listed in the handler table so that ApiVersions
advertises the API, which clients check before they authenticate.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import Advertised
from protocol import ErrorCode, Response, make_response
from protocol.messages import SaslHandshakeRequest, SaslHandshakeResponse


async def handle(ctx: Advertised, request: ApiRequest[SaslHandshakeRequest]) -> Response:
    body = SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    return make_response(request.header, body)
