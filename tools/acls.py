"""``minikafka acls``: add, remove and list ACLs (kafka-acls).

    minikafka acls --bootstrap-server H:P --add --allow-principal User:alice \\
        [--allow-host H] [--deny-principal P] [--deny-host H] --operation Read \\
        (--topic T | --group G | --cluster | --transactional-id X ...) \\
        [--resource-pattern-type literal|prefixed] [--producer [--idempotent] | --consumer]
    minikafka acls --bootstrap-server H:P --remove [... same selection ...] [--force]
    minikafka acls --bootstrap-server H:P --list [--topic T ...] [--principal P]
        [--resource-pattern-type any|match|literal|prefixed]

As Kafka's tool: a principal given without hosts gets host ``*``; no ``--operation``
means ALL; ``--producer`` grants WRITE, DESCRIBE and CREATE on the topics (WRITE and
DESCRIBE on the transactional ids, IDEMPOTENT_WRITE on the cluster with
``--idempotent``), ``--consumer`` READ and DESCRIBE on the topics and READ on the groups.
Output follows kafka-acls': ``Adding ACLs for resource `ResourcePattern(...)`:`` with one
tab-indented ``(principal=..., host=..., operation=..., permissionType=...)`` per ACL, then
the resource's current ACLs; ``--remove`` asks before removing unless ``--force``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TextIO

from client.acls import create_acls, delete_acls, describe_acls
from client.client import KafkaClient
from client.errors import KafkaError
from protocol.acls import (
    CLUSTER_NAME,
    WILDCARD,
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
)
from tools.command import CommandError, add_bootstrap_server, admin_client, run_command

NL = "\n"


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--add", action="store_true", help="add ACLs")
    actions.add_argument("--remove", action="store_true", help="remove ACLs")
    actions.add_argument("--list", action="store_true", help="list ACLs")
    for flag in ("allow-principal", "deny-principal", "allow-host", "deny-host"):
        parser.add_argument(f"--{flag}", action="append", default=[], metavar="VALUE")
    parser.add_argument(
        "--principal", action="append", default=[], help="list only these principals' ACLs"
    )
    parser.add_argument(
        "--operation", action="append", default=[], help="Read, Write, Create, Describe, All ..."
    )
    parser.add_argument("--topic", action="append", default=[])
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--transactional-id", action="append", default=[])
    parser.add_argument("--delegation-token", action="append", default=[])
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        default="literal",
        help="literal or prefixed (add); also any or match (list, remove)",
    )
    parser.add_argument("--producer", action="store_true", help="a producer's ACLs")
    parser.add_argument("--consumer", action="store_true", help="a consumer's ACLs")
    parser.add_argument("--idempotent", action="store_true", help="with --producer")
    parser.add_argument("--force", action="store_true", help="remove without asking")


def _pattern_type(args: argparse.Namespace) -> PatternType:
    try:
        pattern_type = PatternType.parse(args.resource_pattern_type)
    except ValueError:
        raise CommandError(
            f"unknown --resource-pattern-type {args.resource_pattern_type!r}"
        ) from None
    if pattern_type is PatternType.UNKNOWN:
        raise CommandError("unknown --resource-pattern-type")
    if args.add and pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise CommandError(
            "A '--resource-pattern-type' value of 'literal' or 'prefixed' is required with --add"
        )
    return pattern_type


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    found: list[tuple[ResourceType, str]] = []
    found += [(ResourceType.TOPIC, t) for t in args.topic]
    found += [(ResourceType.GROUP, g) for g in args.group]
    found += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    found += [(ResourceType.DELEGATION_TOKEN, t) for t in args.delegation_token]
    if args.cluster:
        found.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return found


def _principals(values: Iterable[str], flag: str) -> list[str]:
    out = []
    for value in values:
        kind, sep, name = value.partition(":")
        if not sep or not kind or not name:
            raise CommandError(f"{flag} {value!r}: a principal is Type:name (User:alice)")
        out.append(value)
    return out


def _entries(
    args: argparse.Namespace, operations: Iterable[AclOperation]
) -> list[AccessControlEntry]:
    allow = _principals(args.allow_principal, "--allow-principal")
    deny = _principals(args.deny_principal, "--deny-principal")
    if not allow and not deny:
        raise CommandError("You must specify one of: --allow-principal, --deny-principal")
    allow_hosts = args.allow_host or [WILDCARD]
    deny_hosts = args.deny_host or [WILDCARD]
    out = []
    for operation in operations:
        for principal in allow:
            out += [
                AccessControlEntry(principal, h, operation, AclPermissionType.ALLOW)
                for h in allow_hosts
            ]
        for principal in deny:
            out += [
                AccessControlEntry(principal, h, operation, AclPermissionType.DENY)
                for h in deny_hosts
            ]
    return out


def _operations(args: argparse.Namespace) -> list[AclOperation]:
    out: list[AclOperation] = []
    for text in args.operation or ["All"]:
        try:
            operation = AclOperation.parse(text)
        except ValueError:
            raise CommandError(f"unknown --operation {text!r}") from None
        if operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise CommandError(f"unknown --operation {text!r}")
        out.append(operation)
    return out


def _bindings(args: argparse.Namespace, pattern_type: PatternType) -> list[AclBinding]:
    """What --add / --remove names: each resource with its operations' entries."""
    resources = _resources(args)
    if args.producer or args.consumer:
        return _convenience(args, resources, pattern_type)
    if not resources:
        raise CommandError(
            "You must provide at least one resource: --topic <topic> or --cluster or "
            "--group <group> or --transactional-id <id> or --delegation-token <token>"
        )
    entries = _entries(args, _operations(args))
    return [
        AclBinding(ResourcePattern(t, n, pattern_type), e) for t, n in resources for e in entries
    ]


def _convenience(
    args: argparse.Namespace, resources: list[tuple[ResourceType, str]], pattern_type: PatternType
) -> list[AclBinding]:
    ops: dict[ResourceType, list[AclOperation]] = {}
    if args.producer:
        ops[ResourceType.TOPIC] = [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
        ops[ResourceType.TRANSACTIONAL_ID] = [AclOperation.WRITE, AclOperation.DESCRIBE]
    if args.consumer:
        if not args.group:
            raise CommandError("With --consumer you must specify a --group")
        topic_ops = ops.setdefault(ResourceType.TOPIC, [])
        topic_ops += [o for o in (AclOperation.READ, AclOperation.DESCRIBE) if o not in topic_ops]
        ops[ResourceType.GROUP] = [AclOperation.READ]
    if not args.topic:
        raise CommandError("With --producer or --consumer you must specify a --topic")
    out = [
        AclBinding(ResourcePattern(t, n, pattern_type), e)
        for t, n in resources
        if t in ops
        for e in _entries(args, ops[t])
    ]
    if args.producer and args.idempotent:
        cluster = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
        out += [AclBinding(cluster, e) for e in _entries(args, [AclOperation.IDEMPOTENT_WRITE])]
    return out


def _grouped(bindings: Iterable[AclBinding]) -> dict[ResourcePattern, list[AccessControlEntry]]:
    out: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in bindings:
        out.setdefault(binding.pattern, []).append(binding.entry)
    return out


def _block(title: str, entries: Iterable[AccessControlEntry]) -> str:
    lines = NL.join(f"\t{e}" for e in entries)
    return f"{title}: {NL} {lines} {NL}"


async def _print_current(
    client: KafkaClient, patterns: Iterable[ResourcePattern], out: TextIO
) -> None:
    for pattern in patterns:
        found = await describe_acls(client, _exact(pattern))
        print(_block(f"Current ACLs for resource `{pattern}`", [b.entry for b in found]), file=out)


def _exact(pattern: ResourcePattern) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(pattern.resource_type, pattern.name, pattern.pattern_type),
        AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
    )


async def _add(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    bindings = _bindings(args, _pattern_type(args))
    grouped = _grouped(bindings)
    for pattern, entries in grouped.items():
        print(_block(f"Adding ACLs for resource `{pattern}`", entries), file=out)
    errors = [e for e in await create_acls(client, bindings) if e is not None]
    if errors:
        raise CommandError(str(errors[0]))
    await _print_current(client, grouped, out)


def _filter_text(f: ResourcePatternFilter) -> str:
    name = "<any>" if f.name is None else f.name
    return (
        f"ResourcePatternFilter(resourceType={f.resource_type.name}, name={name}, "
        f"patternType={f.pattern_type.name})"
    )


def _resource_filters(
    args: argparse.Namespace, pattern_type: PatternType
) -> list[ResourcePatternFilter]:
    resources = _resources(args)
    if not resources:
        return [ResourcePatternFilter(ResourceType.ANY, None, pattern_type)]
    return [ResourcePatternFilter(t, n, pattern_type) for t, n in resources]


def _confirm(question: str, args: argparse.Namespace) -> bool:
    if args.force:
        return True
    print(question)
    return sys.stdin.readline().strip().lower() == "y"


async def _remove(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    pattern_type = _pattern_type(args)
    given = bool(args.allow_principal or args.deny_principal)
    filters: list[AclBindingFilter] = []
    for resource_filter in _resource_filters(args, pattern_type):
        if given:
            bindings = _bindings(args, pattern_type) if _resources(args) else []
            entries = [b.entry for b in bindings if b.pattern.name == resource_filter.name]
            question = (
                f"Are you sure you want to remove ACLs: {NL} "
                + NL.join(f"\t{e}" for e in entries)
                + f" {NL} from resource filter `{_filter_text(resource_filter)}`? (y/n)"
            )
            chosen = [
                AclBindingFilter(
                    resource_filter,
                    AccessControlEntryFilter(e.principal, e.host, e.operation, e.permission),
                )
                for e in entries
            ]
        else:
            question = (
                "Are you sure you want to delete all ACLs for resource filter "
                f"`{_filter_text(resource_filter)}`? (y/n)"
            )
            chosen = [
                AclBindingFilter(
                    resource_filter,
                    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
                )
            ]
        if _confirm(question, args):
            filters += chosen
    if not filters:
        return
    for result in await delete_acls(client, filters):
        if isinstance(result, KafkaError):
            raise CommandError(str(result))
    await _list(client, args, out)


async def _list(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    pattern_type = _pattern_type(args)
    principals = _principals(args.principal, "--principal")
    found: list[AclBinding] = []
    for resource_filter in _resource_filters(args, pattern_type):
        entry_filter = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)
        found += await describe_acls(client, AclBindingFilter(resource_filter, entry_filter))
    if principals:
        found = [b for b in found if b.entry.principal in principals]
    for pattern, entries in _grouped(found).items():
        print(_block(f"Current ACLs for resource `{pattern}`", entries), file=out)


async def main(args: argparse.Namespace, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # looked up now, not at import
    action = _add if args.add else _remove if args.remove else _list
    async with admin_client(args) as client:
        await action(client, args, out)


def run(args: argparse.Namespace) -> int:
    def report(exc: Exception) -> None:
        print(f"Error while executing ACL command: {exc}", file=sys.stderr)

    return run_command(main(args), report)
