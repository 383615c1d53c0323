"""ApiVersions (18): the API versions this broker serves.

The list is KafkaApis' advertised table (the codec's ranges of the APIs that have a
handler). A request newer than v3 never reaches here: it decodes with no body and the
dispatcher answers it from its header (error 35, v0 body). Answered before anything
else on a connection, so it must not depend on ZooKeeper or the metadata cache.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import Advertised
from protocol import ErrorCode, Response, make_response
from protocol.messages import ApiVersionsRequest, ApiVersionsResponse


async def handle(ctx: Advertised, request: ApiRequest[ApiVersionsRequest]) -> Response:
    advertised = ctx.versions
    entry = ApiVersionsResponse.ApiVersion
    keys = [
        entry(api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in sorted(advertised.items())
    ]
    body = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=keys, throttle_time_ms=0)
    return make_response(request.header, body)
