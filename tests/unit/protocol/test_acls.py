"""ACL values: filter matching (ANY, MATCH, exact), binding validation, both spellings."""

from __future__ import annotations

import pytest

from protocol.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    validate_binding,
)

T = ResourceType.TOPIC
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED

# filter (type, name, pattern type), stored pattern -> matches
PATTERN_FILTERS = [
    ((ResourceType.ANY, None, PatternType.ANY), (T, "a", LIT), True),
    ((ResourceType.GROUP, None, PatternType.ANY), (T, "a", LIT), False),
    ((T, "pay", PatternType.ANY), (T, "pay", PRE), True),
    ((T, "pay", PatternType.ANY), (T, "payments", LIT), False),
    ((T, "payments", PatternType.MATCH), (T, "pay", PRE), True),
    ((T, "payments", PatternType.MATCH), (T, "*", LIT), True),
    ((T, "payments", PatternType.MATCH), (T, "payments", LIT), True),
    ((T, "payments", PatternType.MATCH), (T, "paymentsx", PRE), False),
    ((T, "payments", LIT), (T, "*", LIT), False),
    ((T, "pay", PRE), (T, "pay", LIT), False),
    ((T, "pay", PRE), (T, "pay", PRE), True),
]


@pytest.mark.parametrize(("spec", "stored", "matches"), PATTERN_FILTERS)
def test_pattern_filters(
    spec: tuple[ResourceType, str | None, PatternType],
    stored: tuple[ResourceType, str, PatternType],
    matches: bool,
) -> None:
    assert ResourcePatternFilter(*spec).matches(ResourcePattern(*stored)) is matches


def test_entry_filters_compare_exactly() -> None:
    entry = AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW)
    any_op, any_perm = AclOperation.ANY, AclPermissionType.ANY
    assert AccessControlEntryFilter(None, None, any_op, any_perm).matches(entry)
    assert AccessControlEntryFilter("User:a", "*", AclOperation.READ, any_perm).matches(entry)
    assert not AccessControlEntryFilter("User:*", None, any_op, any_perm).matches(entry)
    assert not AccessControlEntryFilter(None, "h", any_op, any_perm).matches(entry)
    assert not AccessControlEntryFilter(None, None, AclOperation.ALL, any_perm).matches(entry)


GOOD = AclBinding(
    ResourcePattern(T, "t", LIT),
    AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW),
)

BAD = [
    (ResourcePattern(ResourceType.ANY, "t", LIT), GOOD.entry, "resource type"),
    (ResourcePattern(T, "t", PatternType.MATCH), GOOD.entry, "pattern type"),
    (ResourcePattern(T, "", LIT), GOOD.entry, "empty"),
    (ResourcePattern(ResourceType.CLUSTER, "c", LIT), GOOD.entry, "kafka-cluster"),
    (
        GOOD.pattern,
        AccessControlEntry("alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
        "Type:name",
    ),
    (
        GOOD.pattern,
        AccessControlEntry("User:", "*", AclOperation.READ, AclPermissionType.ALLOW),
        "Type:name",
    ),
    (
        GOOD.pattern,
        AccessControlEntry("User:a", "*", AclOperation.ANY, AclPermissionType.ALLOW),
        "operation",
    ),
    (
        GOOD.pattern,
        AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ANY),
        "permission",
    ),
]


@pytest.mark.parametrize(("pattern", "entry", "why"), BAD)
def test_bindings_unfit_to_store_are_refused(
    pattern: ResourcePattern, entry: AccessControlEntry, why: str
) -> None:
    validate_binding(GOOD)
    with pytest.raises(ValueError, match=why):
        validate_binding(AclBinding(pattern, entry))


def test_spellings_and_unknown_codes() -> None:
    assert ResourceType.TRANSACTIONAL_ID.camel == "TransactionalId"
    assert AclOperation.CLUSTER_ACTION.camel == "ClusterAction"
    assert AclOperation.parse("ClusterAction") is AclOperation.CLUSTER_ACTION
    assert AclOperation.parse("describe-configs") is AclOperation.DESCRIBE_CONFIGS
    assert ResourceType.parse("transactional_id") is ResourceType.TRANSACTIONAL_ID
    assert ResourceType.from_code(99) is ResourceType.UNKNOWN
    with pytest.raises(ValueError):
        PatternType.parse("suffixed")
