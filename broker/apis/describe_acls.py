"""DescribeAcls (29), v0-3: the ACLs a filter selects, grouped by resource pattern.

Answered from this broker's cache (which follows ZooKeeper's notifications). Without an
authorizer: SECURITY_DISABLED; the request needs DESCRIBE on the cluster
(CLUSTER_AUTHORIZATION_FAILED); a filter with an unknown element is INVALID_REQUEST.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import AclAdmin
from broker.auth.acl_requests import by_pattern, filter_of
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import DescribeAclsRequest, DescribeAclsResponse

Resource = DescribeAclsResponse.DescribeAclsResource
Description = DescribeAclsResponse.AclDescription


def _error(code: ErrorCode, message: str | None) -> DescribeAclsResponse:
    return DescribeAclsResponse(
        throttle_time_ms=0, error_code=code, error_message=message, resources=[]
    )


async def handle(ctx: AclAdmin, request: ApiRequest[DescribeAclsRequest]) -> Response:
    access = ctx.broker.access
    authorizer = access.authorizer
    if authorizer is None:
        response = _error(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    elif not access.authorize(request, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        response = _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    else:
        try:
            binding_filter = filter_of(request.body)
        except ValueError as exc:
            response = _error(ErrorCode.INVALID_REQUEST, str(exc))
        else:
            grouped = by_pattern(authorizer.cache.bindings(binding_filter))
            resources = [
                Resource(
                    resource_type=pattern.resource_type,
                    resource_name=pattern.name,
                    pattern_type=pattern.pattern_type,
                    acls=[
                        Description(
                            principal=e.principal,
                            host=e.host,
                            operation=e.operation,
                            permission_type=e.permission,
                        )
                        for e in entries
                    ],
                )
                for pattern, entries in grouped.items()
            ]
            response = DescribeAclsResponse(
                throttle_time_ms=0,
                error_code=ErrorCode.NONE,
                error_message=None,
                resources=resources,
            )
    return make_response(request.header, response)
