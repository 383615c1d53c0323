"""DescribeUserScramCredentials (50), v0: which SCRAM credentials users have, and their
iteration counts (never salts or keys).

Any broker answers, from its own ScramCredentialCache (``broker.security``): what it
reports is what that broker authenticates with right now, which makes a change's
arrival on each broker observable. The rules (every user, unknown users, names given
twice) are ``broker.admin.scram_credentials.describe``.
"""

from __future__ import annotations

from broker.admin.scram_credentials import describe
from broker.apis.request import ApiRequest
from broker.apis.services import ScramAdmin
from protocol import ErrorCode, Response, make_response
from protocol.messages import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo


async def handle(
    ctx: ScramAdmin, request: ApiRequest[DescribeUserScramCredentialsRequest]
) -> Response:
    listed = request.body.users
    cache = ctx.cache
    described = describe(
        None if listed is None else [u.name for u in listed], cache.credentials, cache.users
    )
    results = [
        Result(
            user=d.user,
            error_code=ErrorCode.NONE if d.failure is None else d.failure[0],
            error_message=None if d.failure is None else d.failure[1],
            credential_infos=[Info(mechanism=m, iterations=i) for m, i in d.infos],
        )
        for d in described
    ]
    response = DescribeUserScramCredentialsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=results
    )
    return make_response(request.header, response)
