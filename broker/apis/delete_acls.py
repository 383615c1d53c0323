"""DeleteAcls (31), v0-3: remove the ACLs each filter matches; each filter's result lists
the ACLs it removed.

Without an authorizer every filter answers SECURITY_DISABLED; the request needs ALTER on
the cluster (CLUSTER_AUTHORIZATION_FAILED). A filter with an unknown element answers
INVALID_REQUEST and removes nothing. The patterns the valid filters may touch are found
in this broker's cache; each is then rewritten in ZooKeeper with the ACLs no filter
matches, judged on what ZooKeeper holds at the write (version-checked), so an ACL added
meanwhile that no filter matches survives. This broker's cache takes the result at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.apis.request import ApiRequest
from broker.apis.services import AclAdmin
from broker.auth.acl_requests import filter_of, matched_by
from protocol import ErrorCode, Response, make_response
from protocol.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    ResourcePattern,
    ResourceType,
)
from protocol.messages import DeleteAclsRequest, DeleteAclsResponse

log = logging.getLogger(__name__)

FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
Matching = DeleteAclsResponse.DeleteAclsMatchingAcl


def _all(body: DeleteAclsRequest, code: ErrorCode, message: str | None) -> DeleteAclsResponse:
    return DeleteAclsResponse(
        throttle_time_ms=0,
        filter_results=[
            FilterResult(error_code=code, error_message=message, matching_acls=[])
            for _ in body.filters
        ],
    )


def _matching(binding: AclBinding) -> Matching:
    pattern, entry = binding.pattern, binding.entry
    return Matching(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=pattern.resource_type,
        resource_name=pattern.name,
        pattern_type=pattern.pattern_type,
        principal=entry.principal,
        host=entry.host,
        operation=entry.operation,
        permission_type=entry.permission,
    )


def _keeper(
    pattern: ResourcePattern, filters: list[AclBindingFilter]
) -> Callable[[AccessControlEntry], bool]:
    """Keeps the pattern's ACLs that no filter matches."""

    def keep(entry: AccessControlEntry) -> bool:
        binding = AclBinding(pattern, entry)
        return not any(f.matches(binding) for f in filters)

    return keep


async def handle(ctx: AclAdmin, request: ApiRequest[DeleteAclsRequest]) -> Response:
    body = request.body
    access = ctx.broker.access
    authorizer = access.authorizer
    if authorizer is None:
        message = "No Authorizer is configured on the broker"
        return make_response(request.header, _all(body, ErrorCode.SECURITY_DISABLED, message))
    if not access.authorize(request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return make_response(
            request.header, _all(body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        )
    filters: list[AclBindingFilter | None] = []
    refusals: dict[int, str] = {}
    for index, entry in enumerate(body.filters):
        try:
            filters.append(filter_of(entry))
        except ValueError as exc:
            filters.append(None)
            refusals[index] = str(exc)
    valid = [f for f in filters if f is not None]
    patterns = {b.pattern for f in valid for b in authorizer.cache.bindings(f)}
    removed: list[AclBinding] = []
    failures: list[str] = []
    for pattern in sorted(patterns, key=str):
        try:
            gone, after = await ctx.zk.remove_acls(pattern, _keeper(pattern, valid))
        except Exception as exc:  # ZooKeeper trouble: reported on every valid filter
            log.warning("removing ACLs of %s failed: %r", pattern, exc)
            failures.append(f"{pattern}: {exc}")
            continue
        authorizer.cache.set(pattern, after)
        removed.extend(AclBinding(pattern, e) for e in gone)
        if gone:
            log.info("ACLs removed from %s: %s", pattern, ", ".join(sorted(map(str, gone))))
    per_filter = iter(matched_by(valid, removed))
    results: list[FilterResult] = []
    for index, binding_filter in enumerate(filters):
        if binding_filter is None:
            results.append(
                FilterResult(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=refusals[index],
                    matching_acls=[],
                )
            )
            continue
        matches = next(per_filter)
        results.append(
            FilterResult(
                error_code=ErrorCode.UNKNOWN_SERVER_ERROR if failures else ErrorCode.NONE,
                error_message="; ".join(failures) or None,
                matching_acls=[_matching(b) for b in matches],
            )
        )
    return make_response(
        request.header, DeleteAclsResponse(throttle_time_ms=0, filter_results=results)
    )
