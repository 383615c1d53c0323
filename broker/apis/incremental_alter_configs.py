"""IncrementalAlterConfigs (44), v0-1: SET, DELETE, APPEND and SUBTRACT single keys of a
topic's or a broker's dynamic configuration (KIP-339).

APPEND and SUBTRACT apply to list keys only (``cleanup.policy``), starting from the key's
default when it is unset. Each resource is validated and written on its own
(``broker.admin.configs``): a bad one is refused whole, the others still apply.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from broker.admin.configs import alter_outcome
from broker.apis.request import ApiRequest
from broker.apis.services import ConfigAdmin
from broker.config import format_value
from broker.config.alter import ResourceType, incremental
from broker.config.keys import BROKER_CONFIG_DEFS
from config.definitions import AnyDef
from config.log_keys import TOPIC_KEYS
from protocol import Response, make_response
from protocol.acls import AclOperation
from protocol.messages import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


def _edit(
    ctx: ConfigAdmin,
    resource_type: int,
    ops: list[tuple[str, int, str | None]],
    current: Mapping[str, str],
) -> dict[str, str]:
    """``current`` with ``ops`` applied; key types and defaults from the resource's table."""
    if resource_type == ResourceType.TOPIC:
        table: Mapping[str, AnyDef] = TOPIC_KEYS
        defaults = ctx.config.topic_defaults()
    else:
        table, defaults = BROKER_CONFIG_DEFS, dict(ctx.config.values)
    return incremental(
        current,
        ops,
        lambda name: table[name].type if name in table else None,
        lambda name: format_value(defaults.get(name)),
    )


async def handle(ctx: ConfigAdmin, request: ApiRequest[IncrementalAlterConfigsRequest]) -> Response:
    body = request.body
    results = []
    for resource in body.resources:
        kind = resource.resource_type
        ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
        change = functools.partial(_edit, ctx, kind, ops)
        code: int = ctx.broker.access.config_error(
            request, resource.resource_type, resource.resource_name, AclOperation.ALTER_CONFIGS
        )
        message: str | None = None
        if not code:
            code, message = await alter_outcome(
                ctx, kind, resource.resource_name, change, body.validate_only
            )
        results.append(
            Result(
                error_code=code,
                error_message=message,
                resource_type=kind,
                resource_name=resource.resource_name,
            )
        )
    response = IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=results)
    return make_response(request.header, response)
