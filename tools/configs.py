"""``minikafka configs``: describe and alter topic and broker configs (kafka-configs).

Flags and output follow Kafka's tool::

    minikafka configs --bootstrap-server H:P --entity-type topics|brokers \\
        (--entity-name N | --entity-default) --describe
    minikafka configs --bootstrap-server H:P --entity-type topics|brokers \\
        (--entity-name N | --entity-default) --alter \\
        [--add-config k1=v1,k2=[a,b]] [--delete-config k1,k2]

``--describe`` prints the entity's dynamic configs, one indented line each with its
synonyms, strongest first::

    Dynamic configs for topic t are:
      retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, ...}

(``Dynamic configs for broker 1 are:``; ``Default configs for brokers in the cluster are:``
for ``--entity-default``). ``--alter`` sends IncrementalAlterConfigs (SET for each added
key, DELETE for each deleted one) and prints ``Completed updating config for topic t.``
A list value is written in brackets (``cleanup.policy=[compact,delete]``). Errors print
``Error while executing config command with args ...`` on stderr and exit with status 1.

``--entity-type users`` handles users' SCRAM credentials (tools.scram_configs), through
the brokers or, with ``--zookeeper H:P`` instead of ``--bootstrap-server``, in ZooKeeper
directly (before any broker runs). ``--entity-type users|clients`` with quota keys
(``producer_byte_rate``, ``consumer_byte_rate``) handles client quotas
(tools.quota_configs), through the brokers or ZooKeeper; the two entity types may be given
together (``--entity-type users --entity-name u --entity-type clients --entity-name c``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, Final, TextIO

from broker.config import ConfigSource
from client import KafkaClient, describe_configs, incremental_alter_configs
from client.admin import BROKER_RESOURCE, DELETE, SET, TOPIC_RESOURCE, ConfigEntry
from tools import quota_configs, scram_configs
from tools.command import CommandError, add_command_config, admin_client, run_command

#: --entity-type -> (ConfigResource type, the word Kafka's messages use)
ENTITY_TYPES: Final = {"topics": (TOPIC_RESOURCE, "topic"), "brokers": (BROKER_RESOURCE, "broker")}


def configure(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="brokers to ask")
    where.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[/chroot]",
        help="users and clients only: write SCRAM credentials or client quotas in ZooKeeper "
        "directly (no broker needed)",
    )
    add_command_config(parser)
    parser.add_argument(
        "--entity-type",
        required=True,
        action=_EntityType,
        choices=sorted([*ENTITY_TYPES, *quota_configs.QUOTA_ENTITY_TYPES]),
        help="repeated (users then clients) for a user's client-id quota",
    )
    parser.add_argument(
        "--entity-name", action=_EntityName, help="topic name, broker id, user or client id"
    )
    parser.add_argument(
        "--entity-default",
        action=_EntityName,
        nargs=0,
        help="the cluster-wide broker default, or the default user or client id",
    )
    parser.set_defaults(entity_types=[], entity_names=[], entity_name=None, entity_default=False)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="print the dynamic configs")
    action.add_argument("--alter", action="store_true", help="add or delete configs")
    parser.add_argument("--add-config", default="", metavar="k1=v1,k2=[v1,v2]")
    parser.add_argument("--delete-config", default="", metavar="k1,k2")


class _EntityType(argparse.Action):
    """--entity-type, repeatable: every value in ``entity_types``, the first one also as
    ``entity_type``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        types = [*namespace.entity_types, str(values)]
        namespace.entity_types = types
        namespace.entity_type = types[0]


class _EntityName(argparse.Action):
    """--entity-name N / --entity-default, in order: ``entity_names`` (None for a
    default); the first also as ``entity_name`` / ``entity_default``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        name = None if option_string == "--entity-default" else str(values)
        names = [*namespace.entity_names, name]
        namespace.entity_names = names
        if len(names) == 1:
            namespace.entity_name = name
            namespace.entity_default = name is None


def parse_add_config(text: str) -> dict[str, str]:
    """``k1=v1,k2=[a,b],k3=v3`` -> {k1: v1, k2: "a,b", k3: v3}: commas inside brackets
    belong to the value (a list)."""
    items: list[str] = []
    depth, current = 0, ""
    for ch in text:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    out: dict[str, str] = {}
    for item in (i.strip() for i in items if i.strip()):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(
                "Invalid entity config: all configs to be added must be in the format "
                f'"key=val": {item}'
            )
        value = value.strip()
        out[key.strip()] = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    return out


def _source_name(source: int) -> str:
    try:
        return ConfigSource(source).name
    except ValueError:
        return "UNKNOWN"


def format_entry(entry: ConfigEntry) -> str:
    """One describe line, Kafka's: ``  k=v sensitive=false synonyms={SOURCE:k=v, ...}``."""
    value = "null" if entry.is_sensitive or entry.value is None else entry.value
    synonyms = ", ".join(
        f"{_source_name(s)}:{n}={'null' if v is None else v}" for n, v, s in entry.synonyms
    )
    sensitive = str(entry.is_sensitive).lower()
    return f"  {entry.name}={value} sensitive={sensitive} synonyms={{{synonyms}}}"


def _entity(args: argparse.Namespace) -> tuple[int, str, str, int]:
    """(resource type, resource name, how messages name it, the dynamic source shown)."""
    resource_type, word = ENTITY_TYPES[args.entity_type]
    if not args.entity_default and args.entity_name is None:
        raise CommandError("--entity-name or --entity-default is required")
    if args.entity_default:
        if resource_type != BROKER_RESOURCE:
            raise CommandError("--entity-default is only for --entity-type brokers")
        return (
            resource_type,
            "",
            "default config for brokers in the cluster",
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        )
    source = (
        ConfigSource.DYNAMIC_TOPIC_CONFIG
        if resource_type == TOPIC_RESOURCE
        else ConfigSource.DYNAMIC_BROKER_CONFIG
    )
    return resource_type, args.entity_name, f"config for {word} {args.entity_name}", source


async def _describe(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    resource_type, name, _, source = _entity(args)
    result = (await describe_configs(client, resource_type, [name], synonyms=True))[name]
    if not isinstance(result, list):
        raise CommandError(str(result))
    if args.entity_default:
        print("Default configs for brokers in the cluster are:", file=out)
    else:
        word = ENTITY_TYPES[args.entity_type][1]
        print(f"Dynamic configs for {word} {name} are:", file=out)
    for entry in result:
        if entry.source == source:
            print(format_entry(entry), file=out)


def _edits(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    """--add-config and --delete-config, parsed."""
    added = parse_add_config(args.add_config)
    return added, [k.strip() for k in args.delete_config.split(",") if k.strip()]


async def _alter(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    resource_type, name, what, _ = _entity(args)
    added, deleted = _edits(args)
    if not added and not deleted:
        raise CommandError("--alter needs --add-config or --delete-config")
    ops = [(k, SET, v) for k, v in added.items()] + [(k, DELETE, None) for k in deleted]
    await incremental_alter_configs(client, resource_type, name, ops)
    print(f"Completed updating {what}.", file=out)


def _is_quota_change(args: argparse.Namespace) -> bool:
    """Whether a users/clients command is about quotas (every clients one is; a users
    one when it names a client id too, a default user, or only quota keys)."""
    if args.entity_types != [scram_configs.USERS] or args.entity_default:
        return True
    if args.describe:
        return False  # a user's description shows both
    added, deleted = _edits(args)
    keys = [*added, *deleted]
    quota = [k for k in keys if k in quota_configs.QUOTA_KEYS]
    if quota and len(quota) != len(keys):
        raise CommandError("quota configs and SCRAM credentials cannot be altered together")
    return bool(quota)


async def _users_and_clients(client: KafkaClient, args: argparse.Namespace, out: TextIO) -> None:
    types, names = args.entity_types, args.entity_names
    if args.describe:
        await quota_configs.describe(client, types, names, out)
        if types == [scram_configs.USERS] and not args.entity_default:
            await scram_configs.describe(client, args.entity_name, out)
    elif _is_quota_change(args):
        added, deleted = _edits(args)
        await quota_configs.alter(client, types, names, added, deleted, out)
    else:
        added, deleted = _edits(args)
        await scram_configs.alter(client, args.entity_name or "", added, deleted, out)


async def main(args: argparse.Namespace, out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # looked up now, not at import
    types = args.entity_types
    quota_types = all(t in quota_configs.QUOTA_ENTITY_TYPES for t in types)
    if len(types) > 1 and not quota_types:
        raise CommandError("only --entity-type users and clients may be given together")
    if len(args.entity_names) > len(types):
        raise CommandError("one --entity-name or --entity-default per --entity-type")
    if args.zookeeper is not None:
        if not quota_types:
            raise CommandError(
                "--zookeeper is only supported for users' SCRAM credentials and client quotas"
            )
        added, deleted = _edits(args) if args.alter else ({}, [])
        quota = _is_quota_change(args)
        if quota or args.describe:  # a user's description shows both
            change = (added, deleted) if args.alter else None
            await quota_configs.through_zookeeper(
                args.zookeeper, types, args.entity_names, change, out
            )
        if quota:
            return
        await scram_configs.through_zookeeper(args, added, deleted, out)
        return
    async with admin_client(args) as client:
        if quota_types:
            await _users_and_clients(client, args, out)
        else:
            await (_describe if args.describe else _alter)(client, args, out)


def run(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    def report(exc: Exception) -> None:
        shown = scram_configs.mask_passwords(" ".join(sys.argv[1:] if argv is None else argv))
        print(f"Error while executing config command with args '{shown}'", file=sys.stderr)
        print(str(exc) or repr(exc), file=sys.stderr)

    return run_command(main(args), report, also=(ValueError,))
