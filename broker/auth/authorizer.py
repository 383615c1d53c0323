"""Authorizer: may this principal, from this host, do this operation on this resource?

Kafka's AclAuthorizer rules, in the order they are applied:

1. a super user (``super.users``, principals separated by ``;``) may do everything;
2. the ACLs that apply to the resource are collected (``AclCache.matching``: its literal
   pattern, the type's wildcard ``*``, every prefixed pattern the name starts with); when
   there are none at all (for anyone), the answer is ``allow.everyone.if.no.acl.found``;
3. a DENY that matches wins: its principal is the request's or ``User:*``, its host the
   client's address or ``*``, its operation the one asked or ALL;
4. otherwise an ALLOW that matches the same way allows, where the operation asked may
   also be implied: DESCRIBE is implied by READ, WRITE, DELETE and ALTER, and
   DESCRIBE_CONFIGS by ALTER_CONFIGS;
5. nothing matched: denied.

The decision is pure (:func:`decide`); :class:`Authorizer` binds it to a cache and the
settings. Denials are reported to ``on_denied`` (the request-level log line and metric
live with the handlers, which know the API and the client's address).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from broker.auth.acl_cache import AclCache
from broker.config import BrokerConfig
from broker.security.principal import KafkaPrincipal
from protocol.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

_IMPLIED_BY: Final[Mapping[AclOperation, frozenset[AclOperation]]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}


def allowing_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The ACL operations whose ALLOW grants ``operation`` (ALL always does too)."""
    return _IMPLIED_BY.get(operation, frozenset({operation})) | {AclOperation.ALL}


def parse_super_users(text: str | None) -> frozenset[str]:
    """``super.users``: ``User:alice;User:bob`` (blanks around entries ignored).
    ValueError naming an entry that is not ``Type:name``."""
    users: set[str] = set()
    for raw in (text or "").split(";"):
        entry = raw.strip()
        if not entry:
            continue
        principal_type, sep, name = entry.partition(":")
        if not sep or not principal_type or not name:
            raise ValueError(f"{entry!r} is not a principal of the form Type:name")
        users.add(entry)
    return frozenset(users)


def decide(
    acls: Iterable[AccessControlEntry],
    principal: str,
    host: str,
    operation: AclOperation,
    allow_if_no_acl: bool,
) -> bool:
    """Rules 2-5 above over the ACLs that apply to one resource."""
    entries = list(acls)
    if not entries:
        return allow_if_no_acl
    principals = (principal, WILDCARD_PRINCIPAL)
    hosts = (host, WILDCARD)
    applicable = [e for e in entries if e.principal in principals and e.host in hosts]
    for entry in applicable:
        if entry.permission is AclPermissionType.DENY and entry.operation in (
            operation,
            AclOperation.ALL,
        ):
            return False
    allowing = allowing_operations(operation)
    return any(
        e.permission is AclPermissionType.ALLOW and e.operation in allowing for e in applicable
    )


def _covers(deny: ResourcePattern, allow: ResourcePattern) -> bool:
    """Whether a DENY on ``deny`` applies to every resource ``allow`` grants."""
    if deny.pattern_type is PatternType.LITERAL:
        return deny.name == WILDCARD or (
            allow.pattern_type is PatternType.LITERAL and deny.name == allow.name
        )
    return allow.name.startswith(deny.name)


@dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    super_users: frozenset[str]
    allow_everyone_if_no_acl_found: bool

    @staticmethod
    def from_config(config: BrokerConfig) -> AuthorizerSettings:
        return AuthorizerSettings(
            parse_super_users(config.get_str("super.users")),
            config.get_bool("allow.everyone.if.no.acl.found"),
        )


def authorizer_enabled(config: BrokerConfig) -> bool:
    """``authorizer.class.name`` names Kafka's ACL authorizer (validated at startup)."""
    return bool(config.get_str("authorizer.class.name"))


class Authorizer:
    """The decision over this broker's :class:`AclCache` (which the ACL watcher keeps)."""

    def __init__(self, cache: AclCache, settings: AuthorizerSettings) -> None:
        self.cache = cache
        self.settings = settings

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return str(principal) in self.settings.super_users

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        text = str(principal)
        if text in self.settings.super_users:
            return True
        return decide(
            self.cache.matching(resource_type, name),
            text,
            host,
            operation,
            self.settings.allow_everyone_if_no_acl_found,
        )

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether ``operation`` is allowed on at least one resource of the type (Kafka's
        authorizeByResourceType, which KIP-679 uses for idempotent producers): a super
        user; or, with no ACL on the type at all, ``allow.everyone.if.no.acl.found``;
        else some pattern whose ALLOW applies and that no DENY covers. A scan of the
        type's ACLs: for InitProducerId, never per record."""
        text = str(principal)
        if text in self.settings.super_users:
            return True
        type_filter = AclBindingFilter(
            ResourcePatternFilter(resource_type, None, PatternType.ANY),
            AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
        )
        bindings = self.cache.bindings(type_filter)
        if not bindings:
            return self.settings.allow_everyone_if_no_acl_found
        principals, hosts = (text, WILDCARD_PRINCIPAL), (host, WILDCARD)
        applicable = [
            b for b in bindings if b.entry.principal in principals and b.entry.host in hosts
        ]
        denied = [
            b.pattern
            for b in applicable
            if b.entry.permission is AclPermissionType.DENY
            and b.entry.operation in (operation, AclOperation.ALL)
        ]
        allowing = allowing_operations(operation)
        for binding in applicable:
            if binding.entry.permission is not AclPermissionType.ALLOW:
                continue
            if binding.entry.operation not in allowing:
                continue
            if not any(_covers(deny, binding.pattern) for deny in denied):
                return True
        return False

    def authorized_operations(
        self,
        principal: KafkaPrincipal,
        host: str,
        resource_type: ResourceType,
        name: str,
        operations: Iterable[AclOperation],
    ) -> int:
        """The bit field of Metadata's and DescribeGroups' authorized-operations fields:
        bit ``op.value`` set for each of ``operations`` allowed."""
        bits = 0
        for operation in operations:
            if self.authorize(principal, host, operation, resource_type, name):
                bits |= 1 << operation.value
        return bits
