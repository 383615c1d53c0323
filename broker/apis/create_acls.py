"""CreateAcls (30), v0-3: add ACLs (Kafka's ZooKeeper mode: any broker writes them).

Without an authorizer every creation answers SECURITY_DISABLED. Otherwise the request
needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every creation). Each
creation is checked (``broker.auth.acl_requests``; INVALID_REQUEST with the reason), the
valid ones are added pattern by pattern in ZooKeeper (``zk.acls``: version-checked, with
the change notification every broker follows) and into this broker's cache at once.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from broker.apis.request import ApiRequest
from broker.apis.services import AclAdmin
from broker.auth.acl_requests import binding_of
from protocol import ErrorCode, Response, make_response
from protocol.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclOperation,
    ResourcePattern,
    ResourceType,
)
from protocol.messages import CreateAclsRequest, CreateAclsResponse

log = logging.getLogger(__name__)

Result = CreateAclsResponse.AclCreationResult
NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _all(body: CreateAclsRequest, code: ErrorCode, message: str | None) -> CreateAclsResponse:
    return CreateAclsResponse(
        throttle_time_ms=0,
        results=[Result(error_code=code, error_message=message) for _ in body.creations],
    )


async def handle(ctx: AclAdmin, request: ApiRequest[CreateAclsRequest]) -> Response:
    body = request.body
    access = ctx.broker.access
    authorizer = access.authorizer
    if authorizer is None:
        return make_response(request.header, _all(body, ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER))
    if not access.authorize(request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return make_response(
            request.header, _all(body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        )
    results: list[Result] = [Result(error_code=ErrorCode.NONE, error_message=None)] * len(
        body.creations
    )
    wanted: dict[ResourcePattern, list[tuple[int, AccessControlEntry]]] = defaultdict(list)
    for index, creation in enumerate(body.creations):
        try:
            binding = binding_of(creation)
        except ValueError as exc:
            results[index] = Result(
                error_code=ErrorCode.INVALID_REQUEST, error_message=f"Failed to create ACL: {exc}"
            )
            continue
        wanted[binding.pattern].append((index, binding.entry))
    for pattern, entries in wanted.items():
        try:
            after = await ctx.zk.add_acls(pattern, [entry for _, entry in entries])
        except Exception as exc:  # ZooKeeper trouble: this pattern fails, the others go on
            log.warning("adding ACLs to %s failed: %r", pattern, exc)
            for index, _ in entries:
                results[index] = Result(
                    error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                    error_message=f"Failed to create ACL: {exc}",
                )
            continue
        authorizer.cache.set(pattern, after)
        log.info("ACLs added to %s: %s", pattern, ", ".join(str(e) for _, e in entries))
    return make_response(request.header, CreateAclsResponse(throttle_time_ms=0, results=results))
