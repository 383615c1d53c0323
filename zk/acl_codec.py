"""ACL znode paths and payloads, as Kafka's ZooKeeper authorizer lays them out (pure).

Storage, one znode per resource pattern holding all its ACLs:

- literal patterns: ``/kafka-acl/<Type>/<name>`` (``Type`` in camel case: ``Topic``,
  ``Group``, ``Cluster``, ``TransactionalId``, ``DelegationToken``);
- prefixed patterns: ``/kafka-acl-extended/prefixed/<Type>/<name>``.

The payload is version-1 JSON::

    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                          "operation":"Read","host":"*"}]}

Change notifications are sequential znodes ``acl_changes_<10 digits>``:

- under ``/kafka-acl-changes`` for literal patterns, the payload ``Topic:<name>``;
- under ``/kafka-acl-extended-changes`` for the others, the payload
  ``{"version":1,"resourceType":"TOPIC","name":"<name>","patternType":"PREFIXED"}``
  (type names read case-insensitively).

Resource names are znode names as they are: Kafka does not escape them, and a topic, group
or transactional id cannot contain ``/`` in practice; one that does is refused here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from zk.codec import ZkDataError

LITERAL_ROOT: Final = "/kafka-acl"
PREFIXED_ROOT: Final = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES: Final = "/kafka-acl-changes"
EXTENDED_CHANGES: Final = "/kafka-acl-extended-changes"
CHANGE_PREFIX: Final = "acl_changes_"
ACL_VERSION: Final = 1


def root(pattern_type: PatternType) -> str:
    if pattern_type is PatternType.LITERAL:
        return LITERAL_ROOT
    if pattern_type is PatternType.PREFIXED:
        return PREFIXED_ROOT
    raise ValueError(f"pattern type {pattern_type.name} is not stored")


def changes_root(pattern_type: PatternType) -> str:
    return LITERAL_CHANGES if pattern_type is PatternType.LITERAL else EXTENDED_CHANGES


def acl_path(pattern: ResourcePattern) -> str:
    if "/" in pattern.name:
        raise ValueError(f"resource name {pattern.name!r} cannot be a znode name")
    return f"{root(pattern.pattern_type)}/{pattern.resource_type.camel}/{pattern.name}"


def change_sequence(name: str) -> int:
    """The sequence of a notification znode's name; -1 for any other child."""
    digits = name.removeprefix(CHANGE_PREFIX)
    return int(digits) if name.startswith(CHANGE_PREFIX) and digits.isdigit() else -1


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    acls = [
        {
            "principal": e.principal,
            "permissionType": e.permission.camel,
            "operation": e.operation.camel,
            "host": e.host,
        }
        for e in sorted(entries, key=str)
    ]
    return json.dumps({"version": ACL_VERSION, "acls": acls}, separators=(",", ":")).encode()


def _loads(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZkDataError(f"{what}: not JSON") from exc


def decode_acls(path: str, data: bytes) -> frozenset[AccessControlEntry]:
    """The ACLs of one pattern znode; ZkDataError naming ``path`` when malformed (an empty
    znode holds no ACLs)."""
    if not data:
        return frozenset()
    doc = _loads(data, path)
    if not isinstance(doc, dict) or not isinstance(doc.get("acls"), list):
        raise ZkDataError(f"{path}: no acls list")
    out: set[AccessControlEntry] = set()
    for raw in doc["acls"]:
        try:
            entry = AccessControlEntry(
                str(raw["principal"]),
                str(raw["host"]),
                AclOperation.parse(str(raw["operation"])),
                AclPermissionType.parse(str(raw["permissionType"])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ZkDataError(f"{path}: malformed ACL {raw!r}") from exc
        out.add(entry)
    return frozenset(out)


def encode_change(pattern: ResourcePattern) -> bytes:
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{pattern.resource_type.camel}:{pattern.name}".encode()
    doc = {
        "version": ACL_VERSION,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_change(changes_path: str, data: bytes) -> ResourcePattern:
    """The pattern a notification under ``changes_path`` names; ZkDataError if malformed."""
    try:
        if changes_path == LITERAL_CHANGES:
            type_name, sep, name = data.decode().partition(":")
            if not sep:
                raise ValueError("no ':'")
            return ResourcePattern(ResourceType.parse(type_name), name, PatternType.LITERAL)
        doc = _loads(data, changes_path)
        return ResourcePattern(
            ResourceType.parse(str(doc["resourceType"])),
            str(doc["name"]),
            PatternType.parse(str(doc["patternType"])),
        )
    except (UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ZkDataError(f"{changes_path}: malformed ACL change {data!r}") from exc
