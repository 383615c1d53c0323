"""AlterClientQuotas (49), v0-1: set and remove client quotas.

As in Kafka's ZooKeeper mode any broker serves it: each valid entry is written to its
entity's znode with its change notification in one conditional multi-op
(``zk.client_quotas``), from which every broker's ClientQuotas follows; this broker's
table takes the change at once. Entries are checked one by one
(``broker.admin.client_quotas``): a refused entry gets INVALID_REQUEST with Kafka's
message and nothing of it is written; the others still are. ``validate_only`` checks and
writes nothing. With the authorizer on, ALTER_CONFIGS on the cluster (else every entry
CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import logging

from broker.admin.client_quotas import Failure, QuotaOp, check_ops, parse_entity
from broker.apis.request import ApiRequest
from broker.apis.services import QuotaAdmin
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import AlterClientQuotasRequest, AlterClientQuotasResponse

log = logging.getLogger(__name__)

Entry = AlterClientQuotasResponse.EntryData
Entity = AlterClientQuotasResponse.EntityData


async def handle(ctx: QuotaAdmin, request: ApiRequest[AlterClientQuotasRequest]) -> Response:
    body = request.body
    allowed = ctx.broker.access.authorize(
        request, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME
    )
    entries = []
    for entry in body.entries:
        echoed = [
            Entity(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity
        ]
        code: int = ErrorCode.NONE
        message: str | None = None
        if not allowed:
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        else:
            failure = await _alter(ctx, entry, body.validate_only)
            if failure is not None:
                code, message = failure.code, failure.message
        entries.append(Entry(error_code=code, error_message=message, entity=echoed))
    response = AlterClientQuotasResponse(throttle_time_ms=0, entries=entries)
    return make_response(request.header, response)


async def _alter(
    ctx: QuotaAdmin, entry: AlterClientQuotasRequest.EntryData, validate_only: bool
) -> Failure | None:
    entity = parse_entity([(e.entity_type, e.entity_name) for e in entry.entity])
    if isinstance(entity, Failure):
        return entity
    checked = check_ops([QuotaOp(o.key, o.value, o.remove) for o in entry.ops])
    if isinstance(checked, Failure):
        return checked
    if validate_only:
        return None
    sets, removals = checked
    try:
        written = await ctx.zk.alter_client_quotas(entity, sets, removals)
    except Exception as exc:  # ZooKeeper trouble: this entry fails, the others are tried
        log.exception("altering client quotas failed")
        return Failure(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
    ctx.quotas.set_entity(entity, written)
    return None
