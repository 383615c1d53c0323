"""The pure part of CreateAcls, DescribeAcls and DeleteAcls: what a request's entries
mean as ACL values, which are refused and why, and how answers are grouped.

Refusals are per entry, with INVALID_REQUEST and a message, as Kafka's authorizer
answers them: an unknown code, a filter-only element in a creation (resource type ANY,
pattern type ANY or MATCH, operation or permission ANY), an empty resource name, a
cluster resource not named ``kafka-cluster``, a principal not of the form ``Type:name``,
a name that cannot be a znode. A refused creation writes nothing; the others of the
request are still made.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from protocol.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    validate_binding,
    validate_filter,
)
from zk.acl_codec import acl_path


def binding_of(creation: Any) -> AclBinding:
    """A CreateAcls creation as a binding; ValueError saying why it cannot be stored."""
    binding = AclBinding(
        ResourcePattern(
            ResourceType.from_code(creation.resource_type),
            creation.resource_name,
            PatternType.from_code(creation.resource_pattern_type),
        ),
        AccessControlEntry(
            creation.principal,
            creation.host,
            AclOperation.from_code(creation.operation),
            AclPermissionType.from_code(creation.permission_type),
        ),
    )
    validate_binding(binding)
    acl_path(binding.pattern)  # a name that cannot be a znode is refused too
    return binding


def filter_of(entry: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter as a binding filter; ValueError for an
    unknown element."""
    binding_filter = AclBindingFilter(
        ResourcePatternFilter(
            ResourceType.from_code(entry.resource_type_filter),
            entry.resource_name_filter,
            PatternType.from_code(entry.pattern_type_filter),
        ),
        AccessControlEntryFilter(
            entry.principal_filter,
            entry.host_filter,
            AclOperation.from_code(entry.operation),
            AclPermissionType.from_code(entry.permission_type),
        ),
    )
    validate_filter(binding_filter)
    return binding_filter


def by_pattern(bindings: Iterable[AclBinding]) -> dict[ResourcePattern, list[AccessControlEntry]]:
    """Bindings grouped by pattern, patterns and entries in a stable order."""
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for binding in bindings:
        grouped[binding.pattern].append(binding.entry)
    return {
        p: sorted(grouped[p], key=str)
        for p in sorted(grouped, key=lambda p: (p.resource_type, p.pattern_type, p.name))
    }


def matched_by(
    filters: Sequence[AclBindingFilter], removed: Iterable[AclBinding]
) -> list[list[AclBinding]]:
    """For each filter (in order), the removed bindings it matches."""
    removed = list(removed)
    return [[b for b in removed if f.matches(b)] for f in filters]
