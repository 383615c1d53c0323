"""What the client subcommands share: the broker option, Kafka's client properties files,
the error they refuse with, and their exit status.

Security settings reach every client command the way Kafka's tools take them: a
``.properties`` file of client properties under ``--command-config`` for the admin tools,
``--producer.config`` / ``--consumer.config`` for the console and perf tools, and single
``KEY=VALUE`` keys under ``--producer-property`` / ``--consumer-property``, which win over
the file's. ``client_config`` turns them into the ``ClientConfig`` (with its
``ClientSecurity``: client.properties) the command's KafkaClient connects with; a key that
cannot be used is a ``CommandError`` naming it.

An admin command (topics, configs, log-dirs, leader-election, reassign-partitions,
consumer-groups, delete-records) runs one coroutine against the cluster. A problem it can
name -- a bad command line or file, an answer the cluster refused (:class:`CommandError`),
a client error -- is printed on stderr in the wording of the Kafka tool it mirrors, and the
command exits with status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from client import ClientError
from client.client import ClientConfig, KafkaClient
from client.console import parse_properties
from client.properties import ClientPropertyError, client_security
from client.security import ClientSecurity
from config.errors import ConfigError
from config.properties import read_properties

#: where a client property belongs to security (not reported as unknown by the tools)
SECURITY_KEY_PREFIXES = ("security.", "sasl.", "ssl.", "enable.ssl.")


def add_bootstrap_server(parser: argparse.ArgumentParser) -> None:
    """The required ``--bootstrap-server HOST:PORT[,...]`` every admin command asks, with
    ``--command-config``, the client properties it connects with."""
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT[,...]", help="brokers to ask"
    )
    add_command_config(parser)


def add_command_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties file (security.protocol, sasl.*, ssl.* ...)",
    )


def add_client_config(parser: argparse.ArgumentParser, role: str) -> None:
    """``--<role>.config FILE`` (role: producer or consumer), as Kafka's console and perf
    tools name it."""
    parser.add_argument(
        f"--{role}.config",
        dest=f"{role}_config",
        metavar="FILE",
        help=f"{role} properties file (security.protocol, sasl.*, ssl.* ...)",
    )


def is_security_key(key: str) -> bool:
    return key.startswith(SECURITY_KEY_PREFIXES)


def client_properties(args: argparse.Namespace, role: str | None = None) -> dict[str, str]:
    """The client properties of the command line: the file of ``--command-config`` (no
    role) or ``--<role>.config``, then the ``--<role>-property KEY=VALUE`` singles."""
    path = getattr(args, "command_config" if role is None else f"{role}_config", None)
    props: dict[str, str] = {}
    if path:
        try:
            props.update(read_properties(path))
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
        except ConfigError as exc:
            raise CommandError(f"{path}: {exc}") from None
    if role is not None:
        singles = getattr(args, f"{role}_property", None) or []
        try:
            props.update(parse_properties(singles, f"--{role}-property"))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    return props


def security_of(props: Mapping[str, str]) -> ClientSecurity:
    """The ClientSecurity of client properties; a CommandError names a key it refuses."""
    try:
        return client_security(props)
    except ClientPropertyError as exc:
        raise CommandError(str(exc)) from None


def client_config(
    args: argparse.Namespace, role: str | None = None, **settings: Any
) -> ClientConfig:
    """The ClientConfig a command connects with: ``settings`` (client_id, timeouts) and
    the security of its client properties (``client_properties``)."""
    return ClientConfig(security=security_of(client_properties(args, role)), **settings)


def admin_client(args: argparse.Namespace) -> KafkaClient:
    """An admin command's client: ``--bootstrap-server`` with ``--command-config``."""
    return KafkaClient(args.bootstrap_server, client_config(args))


class CommandError(Exception):
    """A problem with the command, its files or the cluster's answer, reported as Kafka's
    tool reports it (no traceback, exit status 1)."""


def run_command(
    work: Coroutine[Any, Any, object],
    report: Callable[[Exception], None],
    also: tuple[type[Exception], ...] = (),
) -> int:
    """Run ``work`` to its end: exit status 0, or 1 once ``report`` has printed the
    error. ``also`` names further exception types the command reports rather than raises."""
    reported: tuple[type[Exception], ...] = (CommandError, ClientError, *also)
    try:
        asyncio.run(work)
    except reported as exc:
        report(exc)
        return 1
    return 0
