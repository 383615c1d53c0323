"""Client quotas in ZooKeeper: /config/users, /config/clients and their notifications
(blocking).

An entity's quotas are keys of its dynamic config (``{"version":1,"config":{...}}``,
``zk.codec``): /config/users/<user>, /config/users/<user>/clients/<client-id> and
/config/clients/<client-id>, ``<default>`` for a default component, names sanitized
(``zk.quota_entities`` has the layout and the precedence). A change writes
the znode and creates the ``/config/changes/config_change_<seq>`` naming the entity's path
(``users/alice/clients/c``) in one multi-op, conditional on the znode's version as read,
so a concurrent change of the user's SCRAM credentials (``zk.scram``) is re-read, never
overwritten: keys that are not quotas always survive. An entity left without any key is
kept as an empty config (Kafka leaves the znode too).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Final

from kazoo.exceptions import BadVersionError, NodeExistsError

from zk import codec, paths
from zk.quota_entities import (
    CLIENTS_DIR,
    USERS_DIR,
    EntityKey,
    entity_path,
    parse_entity_path,
    quotas_from_config,
    updated_quota_config,
)
from zk.session import ZkSession
from zk.transactions import CreateOp, Op, SetDataOp, commit, first_failure

log = logging.getLogger(__name__)

#: conditional writes lost to concurrent writers before giving up
WRITE_ATTEMPTS: Final = 10


def _read_quotas(session: ZkSession, entity_type: str, name: str) -> dict[str, float] | None:
    path = f"{paths.CONFIG}/{entity_type}/{name}"
    found = session.get(path)
    if found is None:
        return None
    try:
        return quotas_from_config(codec.decode_entity_config(path, found[0]))
    except codec.ZkDataError:
        log.warning("ignoring the quotas of %s: the znode is not JSON", path)
        return None


def get_all_client_quotas(session: ZkSession) -> dict[EntityKey, dict[str, float]]:
    """Every entity that has a quota, with its quotas."""
    out: dict[EntityKey, dict[str, float]] = {}

    def take(entity_type: str, name: str) -> None:
        entity = parse_entity_path(entity_type, name)
        quotas = _read_quotas(session, entity_type, name)
        if entity is not None and quotas:
            out[entity] = quotas

    for user in session.children(f"{paths.CONFIG}/{USERS_DIR}"):
        take(USERS_DIR, user)
        for client in session.children(f"{paths.CONFIG}/{USERS_DIR}/{user}/{CLIENTS_DIR}"):
            take(USERS_DIR, f"{user}/{CLIENTS_DIR}/{client}")
    for client in session.children(f"{paths.CONFIG}/{CLIENTS_DIR}"):
        take(CLIENTS_DIR, client)
    return out


def alter_client_quotas(
    session: ZkSession, entity: EntityKey, sets: Mapping[str, float], removals: Iterable[str]
) -> dict[str, float]:
    """Set ``sets`` and remove ``removals`` in ``entity``'s quotas and announce the change,
    in one conditional multi-op (retried on a concurrent writer). Returns the entity's
    quotas as written."""
    relative = entity_path(entity)
    path = f"{paths.CONFIG}/{relative}"
    session.kazoo.ensure_path(path.rsplit("/", 1)[0])
    session.kazoo.ensure_path(paths.CONFIG_CHANGES)
    notify = CreateOp(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        codec.encode_config_change(relative),
        sequential=True,
    )
    for _ in range(WRITE_ATTEMPTS):
        found = session.get(path)
        current = {} if found is None else codec.decode_entity_config(path, found[0])
        config = updated_quota_config(current, sets, set(removals))
        data = codec.encode_entity_config(config)
        write: Op = (
            CreateOp(path, data) if found is None else SetDataOp(path, data, found[1].version)
        )
        failure = first_failure(commit(session, [write, notify]))
        if failure is None:
            return quotas_from_config(config)
        if not isinstance(failure, BadVersionError | NodeExistsError):
            raise failure
    raise RuntimeError(f"{path}: lost {WRITE_ATTEMPTS} races with concurrent writers")
