"""ACLs as Kafka's Admin client manages them: create (CreateAcls), describe (DescribeAcls)
and delete (DeleteAcls), with the values of ``protocol.acls``.

Any broker answers (ACLs live in ZooKeeper, which each broker writes and follows). Results
are per entry: a refused creation or filter does not fail the others; a whole request
refused (no authorizer: SECURITY_DISABLED; CLUSTER_AUTHORIZATION_FAILED) raises KafkaError
for describe, and is each entry's error for create and delete.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from client.client import KafkaClient
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest


def _error(code: int, message: str | None) -> KafkaError | None:
    return None if code == ErrorCode.NONE else KafkaError(code, message)


async def create_acls(
    client: KafkaClient, bindings: Sequence[AclBinding]
) -> list[KafkaError | None]:
    """Create each binding; per binding (in order) None or the error that refused it."""
    creations = [
        CreateAclsRequest.AclCreation(
            resource_type=b.pattern.resource_type,
            resource_name=b.pattern.name,
            resource_pattern_type=b.pattern.pattern_type,
            principal=b.entry.principal,
            host=b.entry.host,
            operation=b.entry.operation,
            permission_type=b.entry.permission,
        )
        for b in bindings
    ]

    def build(version: int) -> Any:
        return CreateAclsRequest(creations=creations)

    body = await client.retrying(lambda: client.request(None, ApiKey.CREATE_ACLS, build))
    return [_error(r.error_code, r.error_message) for r in body.results]


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": f.pattern.resource_type,
        "resource_name_filter": f.pattern.name,
        "pattern_type_filter": f.pattern.pattern_type,
        "principal_filter": f.entry.principal,
        "host_filter": f.entry.host,
        "operation": f.entry.operation,
        "permission_type": f.entry.permission,
    }


def _binding(item: Any, pattern_type: int) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType.from_code(item.resource_type),
            item.resource_name,
            PatternType.from_code(pattern_type),
        ),
        AccessControlEntry(
            item.principal,
            item.host,
            AclOperation.from_code(item.operation),
            AclPermissionType.from_code(item.permission_type),
        ),
    )


async def describe_acls(client: KafkaClient, binding_filter: AclBindingFilter) -> list[AclBinding]:
    """The ACLs ``binding_filter`` selects; KafkaError when the request is refused."""

    def build(version: int) -> Any:
        return DescribeAclsRequest(**_filter_fields(binding_filter))

    body = await client.retrying(lambda: client.request(None, ApiKey.DESCRIBE_ACLS, build))
    if body.error_code != ErrorCode.NONE:
        raise KafkaError(body.error_code, body.error_message)
    out: list[AclBinding] = []
    for resource in body.resources:
        pattern = ResourcePattern(
            ResourceType.from_code(resource.resource_type),
            resource.resource_name,
            PatternType.from_code(resource.pattern_type),
        )
        for acl in resource.acls:
            out.append(
                AclBinding(
                    pattern,
                    AccessControlEntry(
                        acl.principal,
                        acl.host,
                        AclOperation.from_code(acl.operation),
                        AclPermissionType.from_code(acl.permission_type),
                    ),
                )
            )
    return out


async def delete_acls(
    client: KafkaClient, filters: Sequence[AclBindingFilter]
) -> list[list[AclBinding] | KafkaError]:
    """Delete what each filter matches; per filter (in order) the ACLs it deleted or the
    error that refused it."""
    wire = [DeleteAclsRequest.DeleteAclsFilter(**_filter_fields(f)) for f in filters]

    def build(version: int) -> Any:
        return DeleteAclsRequest(filters=wire)

    body = await client.retrying(lambda: client.request(None, ApiKey.DELETE_ACLS, build))
    out: list[list[AclBinding] | KafkaError] = []
    for result in body.filter_results:
        if result.error_code != ErrorCode.NONE:
            out.append(KafkaError(result.error_code, result.error_message))
        else:
            out.append([_binding(m, m.pattern_type) for m in result.matching_acls])
    return out
