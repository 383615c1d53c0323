"""The authorizer's rules as tables: implied operations, deny wins, wildcard and prefixed
patterns, hosts, super users, allow.everyone.if.no.acl.found, and the index's lookups."""

from __future__ import annotations

import pytest

from broker.auth.acl_cache import AclCache
from broker.auth.authorizer import Authorizer, AuthorizerSettings, parse_super_users
from broker.security.principal import KafkaPrincipal
from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

OP = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC = ResourceType.TOPIC
ALICE = KafkaPrincipal.user("alice")


def lit(name: str, rtype: ResourceType = TOPIC) -> ResourcePattern:
    return ResourcePattern(rtype, name, PatternType.LITERAL)


def pre(name: str, rtype: ResourceType = TOPIC) -> ResourcePattern:
    return ResourcePattern(rtype, name, PatternType.PREFIXED)


def ace(
    op: AclOperation,
    perm: AclPermissionType = ALLOW,
    principal: str = "User:alice",
    host: str = "*",
) -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, perm)


def authorizer(
    acls: dict[ResourcePattern, list[AccessControlEntry]],
    super_users: str = "",
    allow_everyone: bool = False,
) -> Authorizer:
    cache = AclCache()
    cache.replace_all(acls)
    return Authorizer(cache, AuthorizerSettings(parse_super_users(super_users), allow_everyone))


# granted operation -> asked operation -> allowed
IMPLICATIONS = [
    (OP.READ, OP.DESCRIBE, True),
    (OP.WRITE, OP.DESCRIBE, True),
    (OP.DELETE, OP.DESCRIBE, True),
    (OP.ALTER, OP.DESCRIBE, True),
    (OP.ALTER_CONFIGS, OP.DESCRIBE_CONFIGS, True),
    (OP.ALL, OP.WRITE, True),
    (OP.ALL, OP.DESCRIBE_CONFIGS, True),
    (OP.DESCRIBE, OP.READ, False),
    (OP.WRITE, OP.READ, False),
    (OP.READ, OP.WRITE, False),
    (OP.CREATE, OP.DESCRIBE, False),
    (OP.DESCRIBE_CONFIGS, OP.ALTER_CONFIGS, False),
    (OP.ALTER, OP.ALTER_CONFIGS, False),
    (OP.ALTER_CONFIGS, OP.DESCRIBE, False),
]


@pytest.mark.parametrize(("granted", "asked", "allowed"), IMPLICATIONS)
def test_implied_operations(granted: AclOperation, asked: AclOperation, allowed: bool) -> None:
    auth = authorizer({lit("t"): [ace(granted)]})
    assert auth.authorize(ALICE, "10.0.0.1", asked, TOPIC, "t") is allowed


# ACLs on topic "t" -> asked operation -> allowed for alice from 10.0.0.1
DENY_CASES = [
    ([ace(OP.READ), ace(OP.READ, DENY)], OP.READ, False),
    ([ace(OP.ALL), ace(OP.WRITE, DENY)], OP.WRITE, False),
    ([ace(OP.ALL), ace(OP.WRITE, DENY)], OP.READ, True),
    ([ace(OP.READ), ace(OP.ALL, DENY)], OP.READ, False),
    # a deny of READ does not deny DESCRIBE, which WRITE still implies
    ([ace(OP.WRITE), ace(OP.READ, DENY)], OP.DESCRIBE, True),
    ([ace(OP.READ), ace(OP.READ, DENY, principal="User:*")], OP.READ, False),
    ([ace(OP.READ), ace(OP.READ, DENY, host="10.0.0.1")], OP.READ, False),
    ([ace(OP.READ), ace(OP.READ, DENY, host="10.0.0.2")], OP.READ, True),
    ([ace(OP.READ), ace(OP.READ, DENY, principal="User:bob")], OP.READ, True),
]


@pytest.mark.parametrize(("acls", "asked", "allowed"), DENY_CASES)
def test_deny_beats_allow(
    acls: list[AccessControlEntry], asked: AclOperation, allowed: bool
) -> None:
    assert authorizer({lit("t"): acls}).authorize(ALICE, "10.0.0.1", asked, TOPIC, "t") is allowed


# (acls, topic asked) -> alice may READ
PATTERN_CASES = [
    ({lit("*"): [ace(OP.READ)]}, "anything", True),
    ({pre("pay"): [ace(OP.READ)]}, "payments", True),
    ({pre("pay"): [ace(OP.READ)]}, "pay", True),
    ({pre("pay"): [ace(OP.READ)]}, "pa", False),
    ({pre("pay"): [ace(OP.READ)]}, "xpay", False),
    ({pre("pay"): [ace(OP.READ)], pre("payments-"): [ace(OP.READ, DENY)]}, "payments-eu", False),
    ({pre("pay"): [ace(OP.READ)], pre("payments-"): [ace(OP.READ, DENY)]}, "paym", True),
    ({lit("pay"): [ace(OP.READ)]}, "payments", False),
    ({lit("*"): [ace(OP.READ)], lit("secret"): [ace(OP.READ, DENY)]}, "secret", False),
    # the ACL is on a group of the same name, not the topic
    ({lit("t", ResourceType.GROUP): [ace(OP.READ)]}, "t", False),
    ({pre("t", ResourceType.GROUP): [ace(OP.READ)]}, "t", False),
]


@pytest.mark.parametrize(("acls", "topic", "allowed"), PATTERN_CASES)
def test_wildcard_and_prefixed_patterns(
    acls: dict[ResourcePattern, list[AccessControlEntry]], topic: str, allowed: bool
) -> None:
    assert authorizer(acls).authorize(ALICE, "h", OP.READ, TOPIC, topic) is allowed


# ACL host, client host -> allowed
HOSTS = [("*", "10.0.0.1", True), ("10.0.0.1", "10.0.0.1", True), ("10.0.0.1", "10.0.0.2", False)]


@pytest.mark.parametrize(("acl_host", "client_host", "allowed"), HOSTS)
def test_host_matching(acl_host: str, client_host: str, allowed: bool) -> None:
    auth = authorizer({lit("t"): [ace(OP.READ, host=acl_host)]})
    assert auth.authorize(ALICE, client_host, OP.READ, TOPIC, "t") is allowed


def test_wildcard_principal_allows_everyone() -> None:
    auth = authorizer({lit("t"): [ace(OP.READ, principal="User:*")]})
    assert auth.authorize(KafkaPrincipal.user("zed"), "h", OP.READ, TOPIC, "t")


# acls on "t", allow.everyone.if.no.acl.found -> may bob read "t"
EVERYONE = [
    ({}, False, False),
    ({}, True, True),
    # some ACL exists on the resource (for alice): the setting no longer applies to bob
    ({lit("t"): [ace(OP.READ)]}, True, False),
    # an ACL on another resource leaves "t" without ACLs
    ({lit("u"): [ace(OP.READ)]}, True, True),
]


@pytest.mark.parametrize(("acls", "allow_everyone", "allowed"), EVERYONE)
def test_allow_everyone_if_no_acl_found(
    acls: dict[ResourcePattern, list[AccessControlEntry]], allow_everyone: bool, allowed: bool
) -> None:
    auth = authorizer(acls, allow_everyone=allow_everyone)
    bob = KafkaPrincipal.user("bob")
    assert auth.authorize(bob, "h", OP.READ, TOPIC, "t") is allowed


def test_super_users_bypass_even_a_deny() -> None:
    auth = authorizer(
        {lit("t"): [ace(OP.ALL, DENY, principal="User:*")]}, super_users=" User:admin ;User:b "
    )
    assert auth.authorize(KafkaPrincipal.user("admin"), "h", OP.DELETE, TOPIC, "t")
    assert auth.authorize(KafkaPrincipal.user("b"), "h", OP.READ, TOPIC, "t")
    assert not auth.authorize(ALICE, "h", OP.READ, TOPIC, "t")


@pytest.mark.parametrize("text", ["admin", ":admin", "User:", "User:a;bob"])
def test_super_users_refuses_malformed_principals(text: str) -> None:
    with pytest.raises(ValueError, match="Type:name"):
        parse_super_users(text)


def test_authorized_operations_bits() -> None:
    auth = authorizer({lit("t"): [ace(OP.WRITE)]})
    bits = auth.authorized_operations(
        ALICE, "h", TOPIC, "t", (OP.READ, OP.WRITE, OP.DESCRIBE, OP.DELETE)
    )
    assert bits == (1 << OP.WRITE.value) | (1 << OP.DESCRIBE.value)


def test_cache_lookup_uses_the_index_and_updates_in_place() -> None:
    cache = AclCache()
    for i in range(500):
        cache.set(lit(f"topic-{i}"), [ace(OP.READ)])
    cache.set(pre("topic-1"), [ace(OP.WRITE)])
    cache.set(pre("topic-12"), [ace(OP.DELETE)])
    found = cache.matching(TOPIC, "topic-123")
    assert sorted(e.operation for e in found) == sorted([OP.READ, OP.WRITE, OP.DELETE])
    assert len(cache) == 502
    cache.set(pre("topic-12"), [])
    assert [e.operation for e in cache.matching(TOPIC, "topic-123") if e.operation != OP.READ] == [
        OP.WRITE
    ]
    cache.set(lit("topic-123"), [])
    assert [e.operation for e in cache.matching(TOPIC, "topic-123")] == [OP.WRITE]
    cache.set(pre("topic-1"), [])
    assert cache.matching(TOPIC, "topic-123") == []
    assert len(cache) == 499
