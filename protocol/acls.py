"""ACL values as Kafka's wire, ZooKeeper and tools spell them.

An ACL binds a resource pattern (resource type, name, pattern type) to an access control
entry (principal, host, operation, permission). The enums carry Kafka's wire codes
(CreateAcls, DescribeAcls, DeleteAcls) and their names in two spellings: the enum name
(``TRANSACTIONAL_ID``) is what admin clients print, the camel-case name
(``TransactionalId``, ``ClusterAction``) is what ZooKeeper's znode paths and JSON hold and
what ``kafka-acls`` prints.

Some codes only appear in filters: resource type ``ANY``, pattern types ``ANY`` and
``MATCH``, operation ``ANY``, permission ``ANY``. ``UNKNOWN`` is what a code this side
does not know decodes to; nothing with an unknown or filter-only element is ever stored.

Filter semantics (DescribeAcls, DeleteAcls) follow Kafka: a pattern filter with pattern
type ``MATCH`` and a name selects every stored pattern that would apply to a resource of
that name (the literal name, the literal wildcard ``*``, and every prefixed pattern the
name starts with); ``ANY`` with a name selects the patterns of exactly that name, of any
pattern type; a missing (null) name selects every name. Entry filters compare exactly (a
null principal or host selects all; the wildcard principal ``User:*`` is not expanded).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Self

#: the wildcard resource name (literal pattern) and host
WILDCARD: Final = "*"
#: the only name of the cluster resource
CLUSTER_NAME: Final = "kafka-cluster"
#: the principal that matches every principal (of type User)
WILDCARD_PRINCIPAL: Final = "User:*"


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class _Coded(enum.IntEnum):
    @classmethod
    def from_code(cls, code: int) -> Self:
        try:
            return cls(code)
        except ValueError:
            return cls(0)  # UNKNOWN

    @property
    def camel(self) -> str:
        """``TransactionalId``, ``ClusterAction``: the ZooKeeper and kafka-acls spelling."""
        return _camel(self.name)

    @classmethod
    def parse(cls, text: str) -> Self:
        """Either spelling, any case (``transactional-id`` too); ValueError otherwise."""
        key = text.strip().replace("-", "").replace("_", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == key:
                return member
        raise ValueError(f"{text!r} is not a {cls.__name__}")


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: the resource types an ACL may name (stored, authorized)
STORED_RESOURCE_TYPES: Final = (
    ResourceType.TOPIC,
    ResourceType.GROUP,
    ResourceType.CLUSTER,
    ResourceType.TRANSACTIONAL_ID,
    ResourceType.DELEGATION_TOKEN,
)
STORED_PATTERN_TYPES: Final = (PatternType.LITERAL, PatternType.PREFIXED)


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission.name})"
        )


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


def validate_binding(binding: AclBinding) -> None:
    """ValueError naming what makes ``binding`` unfit to store: an unknown or filter-only
    element, an empty resource name, a cluster resource not named ``kafka-cluster``, a
    principal not of the form ``Type:name``, an empty host."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type not in STORED_RESOURCE_TYPES:
        raise ValueError(f"resource type {pattern.resource_type.name} cannot hold ACLs")
    if pattern.pattern_type not in STORED_PATTERN_TYPES:
        raise ValueError(f"pattern type {pattern.pattern_type.name} cannot be stored")
    if not pattern.name:
        raise ValueError("the resource name is empty")
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise ValueError(f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise ValueError(f"operation {entry.operation.name} cannot be stored")
    if entry.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise ValueError(f"permission type {entry.permission.name} cannot be stored")
    principal_type, sep, principal_name = entry.principal.partition(":")
    if not sep or not principal_type or not principal_name:
        raise ValueError(f"principal {entry.principal!r} is not of the form Type:name")
    if not entry.host:
        raise ValueError("the host is empty")


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != (
            pattern.resource_type
        ):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and (
            self.pattern_type != pattern.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH: the stored patterns that apply to a resource called self.name
        if pattern.pattern_type is PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD)
        return self.name.startswith(pattern.name)


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches(self, entry: AccessControlEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and self.operation in (AclOperation.ANY, entry.operation)
            and self.permission in (AclPermissionType.ANY, entry.permission)
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter
    entry: AccessControlEntryFilter

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)


def validate_filter(binding_filter: AclBindingFilter) -> None:
    """ValueError when the filter has an unknown element (Kafka refuses those)."""
    pattern, entry = binding_filter.pattern, binding_filter.entry
    if pattern.resource_type is ResourceType.UNKNOWN:
        raise ValueError("unknown resource type")
    if pattern.pattern_type is PatternType.UNKNOWN:
        raise ValueError("unknown pattern type")
    if entry.operation is AclOperation.UNKNOWN:
        raise ValueError("unknown operation")
    if entry.permission is AclPermissionType.UNKNOWN:
        raise ValueError("unknown permission type")


#: the filter that selects every ACL
MATCH_ALL: Final = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
)
