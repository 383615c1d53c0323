"""AlterConfigs (33), v0-2: replace a topic's or a broker's whole dynamic configuration.

Keys not given revert to their defaults (Kafka's semantics, which is why admin tools
prefer IncrementalAlterConfigs). Each resource is validated and written on its own
(``broker.admin.configs``): a bad one is refused whole, the others still apply.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from broker.admin.configs import alter_outcome
from broker.apis.request import ApiRequest
from broker.apis.services import ConfigAdmin
from broker.config.alter import replaced
from protocol import Response, make_response
from protocol.acls import AclOperation
from protocol.messages import AlterConfigsRequest, AlterConfigsResponse

Result = AlterConfigsResponse.AlterConfigsResourceResponse


def _whole_set(
    configs: list[tuple[str, str | None]], _current: Mapping[str, str]
) -> dict[str, str]:
    return replaced(configs)


async def handle(ctx: ConfigAdmin, request: ApiRequest[AlterConfigsRequest]) -> Response:
    body = request.body
    results = []
    for resource in body.resources:
        configs = [(c.name, c.value) for c in resource.configs]
        code: int = ctx.broker.access.config_error(
            request, resource.resource_type, resource.resource_name, AclOperation.ALTER_CONFIGS
        )
        message: str | None = None
        if not code:
            code, message = await alter_outcome(
                ctx,
                resource.resource_type,
                resource.resource_name,
                functools.partial(_whole_set, configs),
                body.validate_only,
            )
        results.append(
            Result(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    response = AlterConfigsResponse(throttle_time_ms=0, responses=results)
    return make_response(request.header, response)
