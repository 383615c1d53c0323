"""``minikafka configs --entity-type users``: users' SCRAM credentials, as kafka-configs
handles them.

::

    minikafka configs --bootstrap-server H:P --entity-type users --entity-name alice --alter \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=a-secret],SCRAM-SHA-512=[password=s]'
    minikafka configs --bootstrap-server H:P --entity-type users --entity-name alice --alter \\
        --delete-config SCRAM-SHA-512
    minikafka configs --bootstrap-server H:P --entity-type users [--entity-name alice] --describe

``--add-config`` takes one ``MECHANISM=[iterations=N,password=P]`` per mechanism
(``iterations`` defaults to 4096, as Kafka's tool; Kafka accepts 4096 to 16384);
``--delete-config`` names mechanisms. Through ``--bootstrap-server`` the change is an
AlterUserScramCredentials request (the client salts the password; the password itself is
never sent), the description a DescribeUserScramCredentials one, printed as Kafka does::

    SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192

(nothing for a user without credentials; every user with one when ``--entity-name`` is
left out). ``--alter`` prints ``Completed updating config for user alice.``

``--zookeeper H:P[/chroot]`` instead writes (and reads) /config/users/<user> directly, with
its change notification, as Kafka 3.x's ``kafka-configs --zookeeper`` does: the way to
create the first credentials before any broker runs (running brokers follow the
notification within a second). It prints ``Completed updating config for entity:
user-principal 'alice'.``
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Mapping
from typing import Final, TextIO

from client import KafkaClient
from client.errors import KafkaError
from client.scram_admin import (
    DEFAULT_ITERATIONS,
    ScramCredentialInfo,
    ScramDeletion,
    ScramUpsertion,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from protocol import ErrorCode
from protocol.sasl.scram import SCRAM_MECHANISMS
from tools.command import CommandError
from zk import scram
from zk.errors import ScramCredentialNotFoundError, ZooKeeperUnavailableError
from zk.session import ZkSession

USERS: Final = "users"
#: how long --zookeeper waits for ZooKeeper to answer
ZOOKEEPER_TIMEOUT_S: Final = 30.0


_PASSWORD: Final = re.compile(r"(password=)[^,\]]*")


def mask_passwords(text: str) -> str:
    """``text`` (a command line) with every ``password=...`` value hidden, for error
    reports that echo the arguments."""
    return _PASSWORD.sub(r"\1[hidden]", text)


def parse_scram_value(mechanism: str, value: str) -> tuple[str, int]:
    """``iterations=8192,password=secret`` (the part inside the brackets) -> (password,
    iterations); iterations default to 4096."""
    if mechanism not in SCRAM_MECHANISMS:
        raise CommandError(
            f"Invalid config {mechanism!r} for users: only SCRAM credentials "
            f"({', '.join(SCRAM_MECHANISMS)}) are supported"
        )
    fields: dict[str, str] = {}
    for item in value.split(","):
        key, sep, text = item.partition("=")
        if not sep or key.strip() not in ("iterations", "password"):
            raise CommandError(
                f"Invalid {mechanism} value: expected [iterations=N,password=P] (names only: "
                f"{key.strip() or '?'})"
            )
        fields[key.strip()] = text
    password = fields.get("password", "")
    if not password:
        raise CommandError(f"Invalid {mechanism} value: a password is required")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise CommandError(f"Invalid {mechanism} iterations: not a number") from None
    return password, iterations


def describe_line(user: str, infos: list[ScramCredentialInfo]) -> str:
    shown = ", ".join(f"{i.mechanism}=iterations={i.iterations}" for i in infos)
    return f"SCRAM credential configs for user-principal '{user}' are {shown}"


def _changes(
    user: str, added: Mapping[str, str], deleted: list[str]
) -> tuple[list[ScramUpsertion], list[ScramDeletion]]:
    if not user:
        raise CommandError("--entity-name is required with --alter for users")
    if not added and not deleted:
        raise CommandError("--alter needs --add-config or --delete-config")
    upserts = []
    for mechanism, value in added.items():
        password, iterations = parse_scram_value(mechanism, value)
        upserts.append(ScramUpsertion(user, mechanism, password, iterations))
    for mechanism in deleted:
        if mechanism not in SCRAM_MECHANISMS:
            raise CommandError(f"Invalid config {mechanism!r} to delete for users")
    return upserts, [ScramDeletion(user, m) for m in deleted]


async def describe(client: KafkaClient, user: str | None, out: TextIO) -> None:
    found = await describe_user_scram_credentials(client, None if user is None else [user])
    for name, result in found.items():
        if isinstance(result, KafkaError):
            if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
                continue  # no credentials: nothing to print, as Kafka's tool
            raise CommandError(str(result))
        print(describe_line(name, result), file=out)


async def alter(
    client: KafkaClient, user: str, added: Mapping[str, str], deleted: list[str], out: TextIO
) -> None:
    upserts, deletions = _changes(user, added, deleted)
    results = await alter_user_scram_credentials(client, [*deletions, *upserts])
    if user not in results:
        raise CommandError(f"the broker's answer has no result for user {user!r}")
    error = results[user]
    if error is not None:
        raise CommandError(str(error))
    print(f"Completed updating config for user {user}.", file=out)


def _zookeeper_describe(session: ZkSession, user: str | None) -> list[str]:
    users = scram.get_scram_users(session) if user is None else [user]
    lines = []
    for name in users:
        credentials = scram.get_user_credentials(session, name)
        if credentials:
            infos = [
                ScramCredentialInfo(m, credentials[m].iterations)
                for m in SCRAM_MECHANISMS
                if m in credentials
            ]
            lines.append(describe_line(name, infos))
    return lines


def _zookeeper_alter(
    session: ZkSession, user: str, upserts: list[ScramUpsertion], deletions: list[ScramDeletion]
) -> None:
    credentials = {}
    for u in upserts:
        try:
            credentials.update(scram.scram_credentials(u.password, [u.mechanism], u.iterations))
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    try:
        scram.alter_user_credentials(session, user, credentials, [d.mechanism for d in deletions])
    except ScramCredentialNotFoundError as exc:
        raise CommandError(str(exc)) from None


def _zookeeper(
    connect: str,
    user: str | None,
    changes: tuple[list[ScramUpsertion], list[ScramDeletion]] | None,
) -> list[str]:
    """Blocking: connect, describe or alter, disconnect; the lines to print."""
    try:
        session = ZkSession.connect(connect, connect_timeout_s=ZOOKEEPER_TIMEOUT_S)
    except ZooKeeperUnavailableError as exc:
        raise CommandError(str(exc)) from None
    try:
        if changes is None:
            return _zookeeper_describe(session, user)
        _zookeeper_alter(session, user or "", *changes)
        return [f"Completed updating config for entity: user-principal '{user}'."]
    finally:
        session.close()


async def through_zookeeper(
    args: argparse.Namespace, added: Mapping[str, str], deleted: list[str], out: TextIO
) -> None:
    changes = None if args.describe else _changes(args.entity_name or "", added, deleted)
    lines = await asyncio.to_thread(_zookeeper, args.zookeeper, args.entity_name, changes)
    for line in lines:
        print(line, file=out)
