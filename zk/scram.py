"""SCRAM credentials in ZooKeeper: /config/users/<user> and its notifications (blocking).

Each user is an entity of the dynamic-config layout (``zk.configs``): its znode holds the
credentials by mechanism (payload and name encoding: ``zk.scram_codec``). A change of a
user's credentials is one multi-op that writes the znode and creates the sequential
``/config/changes/config_change_<seq>`` naming ``users/<sanitized user>``, so a broker
that reads the notification finds the new credentials. The write is conditional on the
znode's version as read: two writers changing different mechanisms of one user at once
both land (the later one re-reads and retries), and keys other than credentials (quotas)
survive.

Brokers follow the notifications (``broker.security.credential_cache``). Before any
broker runs, the first credentials are written here directly, as Kafka 3.x's
``kafka-configs --zookeeper`` does: :func:`create_scram_user` connects, writes and
disconnects (``minikafka configs --zookeeper`` and ``cluster up --security``).

No password reaches this module: callers derive the credential (salt, stored and server
keys) first.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from kazoo.exceptions import BadVersionError, NodeExistsError

from protocol.sasl.scram import MAX_ITERATIONS, MIN_ITERATIONS, SCRAM_MECHANISMS, ScramCredential
from zk import codec, paths
from zk.errors import ScramCredentialNotFoundError
from zk.scram_codec import (
    USERS_ENTITY,
    credentials_from_config,
    desanitize_user,
    sanitize_user,
    updated_config,
)
from zk.session import ZkSession
from zk.transactions import CreateOp, Op, SetDataOp, commit, first_failure

log = logging.getLogger(__name__)

CONFIG_USERS: Final = f"{paths.CONFIG}/{USERS_ENTITY}"
#: conditional writes lost to concurrent writers before giving up
WRITE_ATTEMPTS: Final = 10


def user_path(user: str) -> str:
    return paths.entity_config(USERS_ENTITY, sanitize_user(user))


def get_scram_users(session: ZkSession) -> list[str]:
    """Every user with a znode under /config/users (credentials or not), sorted."""
    return sorted(desanitize_user(name) for name in session.children(CONFIG_USERS))


def get_user_credentials(session: ZkSession, user: str) -> dict[str, ScramCredential]:
    """The user's credentials by mechanism name; empty when there are none. A
    credential whose text is malformed is left out, with a warning naming the user."""
    path = user_path(user)
    found = session.get(path)
    if found is None:
        return {}
    credentials, bad = credentials_from_config(codec.decode_entity_config(path, found[0]))
    for mechanism, why in bad.items():
        log.warning("ignoring the %s credential of user %r: %s", mechanism, user, why)
    return credentials


def get_all_user_credentials(session: ZkSession) -> dict[str, dict[str, ScramCredential]]:
    """user -> mechanism -> credential, for every user that has a credential (a user
    whose znode is malformed is left out, with a warning)."""
    out: dict[str, dict[str, ScramCredential]] = {}
    for user in get_scram_users(session):
        try:
            credentials = get_user_credentials(session, user)
        except codec.ZkDataError:  # that user is skipped, not the rest
            log.warning("ignoring the credentials of user %r: the znode is not JSON", user)
            continue
        if credentials:
            out[user] = credentials
    return out


def alter_user_credentials(
    session: ZkSession,
    user: str,
    upserts: Mapping[str, ScramCredential],
    deletions: Iterable[str],
) -> dict[str, ScramCredential]:
    """Set the credentials of ``upserts`` and remove the mechanisms of ``deletions`` for
    ``user``, and announce the change, in one multi-op. Returns the user's credentials
    as written.

    Conditional on the znode's version: a concurrent writer makes it re-read and retry
    (RuntimeError after ``WRITE_ATTEMPTS`` lost races). ValueError for an empty user or a
    mechanism that is not a SCRAM mechanism; ScramCredentialNotFoundError, with nothing
    written, when a deletion names a credential the user does not have."""
    if not user:
        raise ValueError("the user name is empty")
    deletions = list(deletions)
    path = user_path(user)
    session.kazoo.ensure_path(CONFIG_USERS)
    session.kazoo.ensure_path(paths.CONFIG_CHANGES)
    notify = CreateOp(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        codec.encode_config_change(f"{USERS_ENTITY}/{sanitize_user(user)}"),
        sequential=True,
    )
    for _ in range(WRITE_ATTEMPTS):
        found = session.get(path)
        current = {} if found is None else codec.decode_entity_config(path, found[0])
        missing = [m for m in deletions if m not in current]
        if missing:
            raise ScramCredentialNotFoundError(
                f"user {user!r} has no {', '.join(missing)} credential to delete"
            )
        config = updated_config(current, upserts, deletions)
        data = codec.encode_entity_config(config)
        write: Op = (
            CreateOp(path, data) if found is None else SetDataOp(path, data, found[1].version)
        )
        results = commit(session, [write, notify])
        failure = first_failure(results)
        if failure is None:
            return credentials_from_config(config)[0]
        if not isinstance(failure, BadVersionError | NodeExistsError):
            raise failure
    raise RuntimeError(f"{path}: lost {WRITE_ATTEMPTS} races with concurrent writers")


def create_scram_user(
    zookeeper_connect: str,
    user: str,
    password: str,
    mechanisms: Sequence[str],
    iterations: int,
    connect_timeout_s: float,
) -> None:
    """Connect to ``zookeeper_connect`` (``host:port[,...][/chroot]``), give ``user`` a
    credential for ``password`` under each of ``mechanisms`` (a fresh random salt each),
    announce it, and disconnect: the first credentials of a cluster, written before any
    broker runs (or while they run: they follow the notification).

    ValueError for an unknown mechanism or an iteration count Kafka refuses;
    ZooKeeperUnavailableError when no server answers within ``connect_timeout_s``."""
    credentials = scram_credentials(password, mechanisms, iterations)
    session = ZkSession.connect(zookeeper_connect, connect_timeout_s=connect_timeout_s)
    try:
        alter_user_credentials(session, user, credentials, [])
    finally:
        session.close()


def scram_credentials(
    password: str, mechanisms: Sequence[str], iterations: int
) -> dict[str, ScramCredential]:
    """A new credential (random salt) for ``password`` under each mechanism."""
    if not password:
        raise ValueError("the password is empty")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}, not {iterations}"
        )
    out: dict[str, ScramCredential] = {}
    for name in mechanisms:
        mechanism = SCRAM_MECHANISMS.get(name)
        if mechanism is None:
            raise ValueError(f"{name!r} is not a SCRAM mechanism ({', '.join(SCRAM_MECHANISMS)})")
        out[name] = mechanism.credential(password, iterations)
    return out
