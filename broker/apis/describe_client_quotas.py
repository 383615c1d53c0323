"""DescribeClientQuotas (48), v0-1: the quotas set per entity, as this broker holds them.

Any broker answers, from its ClientQuotas table (``broker.client_quotas``), which follows
ZooKeeper: what it reports is what it enforces. The filter rules are
``broker.admin.client_quotas.describe``; a bad filter is INVALID_REQUEST for the whole
request, with Kafka's message. With the authorizer on, DESCRIBE_CONFIGS on the cluster.
"""

from __future__ import annotations

from broker.admin.client_quotas import Failure, describe, entity_components
from broker.apis.request import ApiRequest
from broker.apis.services import QuotaAdmin
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse

Entry = DescribeClientQuotasResponse.EntryData
Entity = DescribeClientQuotasResponse.EntityData
Value = DescribeClientQuotasResponse.ValueData


async def handle(ctx: QuotaAdmin, request: ApiRequest[DescribeClientQuotasRequest]) -> Response:
    body = request.body
    if not ctx.broker.access.authorize(
        request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        refused = DescribeClientQuotasResponse(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            entries=None,
        )
        return make_response(request.header, refused)
    found = describe(
        ctx.quotas.table(),
        [(c.entity_type, c.match_type, c.match) for c in body.components],
        body.strict,
    )
    if isinstance(found, Failure):
        error = DescribeClientQuotasResponse(
            throttle_time_ms=0, error_code=found.code, error_message=found.message, entries=None
        )
        return make_response(request.header, error)
    entries = [
        Entry(
            entity=[Entity(entity_type=t, entity_name=n) for t, n in entity_components(entity)],
            values=[Value(key=k, value=v) for k, v in sorted(quotas.items())],
        )
        for entity, quotas in found
    ]
    response = DescribeClientQuotasResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, entries=entries
    )
    return make_response(request.header, response)
