"""``minikafka acls``' command line as kafka-acls reads it: defaults (host *, operation
All), the --producer / --consumer conveniences, and refusals of malformed input before
anything is sent."""

from __future__ import annotations

import argparse

import pytest

from protocol.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from tools import acls
from tools.command import CommandError
from tools.main import build_parser


def args(*words: str) -> argparse.Namespace:
    return build_parser("acls").parse_args(["acls", "--bootstrap-server", "h:1", *words])


def test_defaults_are_every_host_and_all_operations() -> None:
    parsed = args("--add", "--allow-principal", "User:a", "--deny-principal", "User:b",
                  "--deny-host", "10.0.0.9", "--topic", "t")  # fmt: skip
    bindings = acls._bindings(parsed, acls._pattern_type(parsed))
    entries = {(b.entry.principal, b.entry.host, b.entry.operation, b.entry.permission)
               for b in bindings}  # fmt: skip
    assert entries == {
        ("User:a", "*", AclOperation.ALL, AclPermissionType.ALLOW),
        ("User:b", "10.0.0.9", AclOperation.ALL, AclPermissionType.DENY),
    }
    assert {b.pattern.pattern_type for b in bindings} == {PatternType.LITERAL}


def test_producer_and_consumer_conveniences() -> None:
    parsed = args("--add", "--allow-principal", "User:a", "--producer", "--idempotent",
                  "--consumer", "--topic", "orders-", "--group", "billing",
                  "--transactional-id", "tx", "--resource-pattern-type", "prefixed")  # fmt: skip
    bindings = acls._bindings(parsed, acls._pattern_type(parsed))
    by_type: dict[ResourceType, set[AclOperation]] = {}
    for b in bindings:
        by_type.setdefault(b.pattern.resource_type, set()).add(b.entry.operation)
    assert by_type == {
        ResourceType.TOPIC: {
            AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE, AclOperation.READ,
        },
        ResourceType.GROUP: {AclOperation.READ},
        ResourceType.TRANSACTIONAL_ID: {AclOperation.WRITE, AclOperation.DESCRIBE},
        ResourceType.CLUSTER: {AclOperation.IDEMPOTENT_WRITE},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("words", "why"),
    [
        (("--add", "--allow-principal", "alice", "--topic", "t"), "Type:name"),
        (("--add", "--allow-principal", "User:a", "--topic", "t",
          "--resource-pattern-type", "match"), "literal' or 'prefixed"),
        (("--list", "--resource-pattern-type", "suffixed"), "resource-pattern-type"),
        (("--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"),
         "operation"),
        (("--add", "--topic", "t"), "--allow-principal"),
        (("--add", "--allow-principal", "User:a"), "at least one resource"),
        (("--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"), "--group"),
    ],
)  # fmt: skip
def test_malformed_input_is_refused_before_sending(words: tuple[str, ...], why: str) -> None:
    parsed = args(*words)
    with pytest.raises(CommandError, match=why):
        pattern = acls._pattern_type(parsed)
        if parsed.add:
            acls._bindings(parsed, pattern)
