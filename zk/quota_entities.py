"""Quota entities, their znodes and the precedence that picks one for a client (pure).

An entity names a user, a client id, or both; each component is a name or the default
(``None`` here, ``<default>`` in ZooKeeper). The quotas of an entity live in the dynamic
config of its znode, as Kafka's ZooKeeper mode keeps them::

  /config/users/<user>                      {"version":1,"config":{"producer_byte_rate":"1024"}}
  /config/users/<user>/clients/<client-id>
  /config/clients/<client-id>

with ``<default>`` for a default component and names sanitized as users' names are
(``zk.scram_codec.sanitize_user``: URL encoding, so that any name is one path element).
A change notification names the same path without ``/config/`` (``users/alice/clients/c``).
The users' znodes also carry SCRAM credentials: a quota value is any key of
``QUOTA_KEYS``, and a writer of one kind keeps the other kind's keys.

Precedence, for a request of user U with client id C, per quota key (the first entity
having that key wins): U+C, U+default client, U alone, default user+C, default user+
default client, default user alone, C alone, default client alone. The metrics and the
rate of a matched entity are kept per *quota tags* (user, client id): a component the
entity names (or defaults) is the request's actual value, one it leaves out is empty. So a
default quota is each client's own allowance, never one shared by all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote, unquote

#: the quota keys this broker enforces (request_percentage and controller_mutation_rate
#: are not implemented)
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
QUOTA_KEYS: Final = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE})

#: entity types as the admin APIs name them
USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"

#: znode directories of each entity type
USERS_DIR: Final = "users"
CLIENTS_DIR: Final = "clients"
DEFAULT_ZNODE: Final = "<default>"

#: an entity: (user, client id) where each is ("name"), None (the default) or absent;
#: absent is told apart by the ``has_user`` / ``has_client`` flags of the key
EntityKey = tuple[bool, str | None, bool, str | None]


def entity_key(
    user: str | None = None,
    client_id: str | None = None,
    *,
    has_user: bool,
    has_client: bool,
) -> EntityKey:
    """The table key of an entity; a component not present must be None."""
    if not (has_user or has_client):
        raise ValueError("a quota entity names a user, a client id or both")
    return (has_user, user if has_user else None, has_client, client_id if has_client else None)


def user_entity(user: str | None) -> EntityKey:
    return entity_key(user, has_user=True, has_client=False)


def client_entity(client_id: str | None) -> EntityKey:
    return entity_key(client_id=client_id, has_user=False, has_client=True)


def user_client_entity(user: str | None, client_id: str | None) -> EntityKey:
    return entity_key(user, client_id, has_user=True, has_client=True)


def sanitize(name: str) -> str:
    """A user or client id as one znode name (the SCRAM users' encoding)."""
    return quote(name, safe="")


def _znode_name(name: str | None) -> str:
    return DEFAULT_ZNODE if name is None else sanitize(name)


def _from_znode(name: str) -> str | None:
    return None if name == DEFAULT_ZNODE else unquote(name)


def entity_path(key: EntityKey) -> str:
    """The entity's path below /config (``users/alice/clients/c``), as notifications
    name it."""
    has_user, user, has_client, client = key
    if has_user and has_client:
        return f"{USERS_DIR}/{_znode_name(user)}/{CLIENTS_DIR}/{_znode_name(client)}"
    if has_user:
        return f"{USERS_DIR}/{_znode_name(user)}"
    return f"{CLIENTS_DIR}/{_znode_name(client)}"


def parse_entity_path(entity_type: str, name: str) -> EntityKey | None:
    """The entity of /config/<entity_type>/<name> (``name`` may be
    ``<user>/clients/<client>``); None for a path that names no quota entity."""
    if entity_type == CLIENTS_DIR and "/" not in name:
        return client_entity(_from_znode(name))
    if entity_type != USERS_DIR:
        return None
    parts = name.split("/")
    if len(parts) == 1:
        return user_entity(_from_znode(parts[0]))
    if len(parts) == 3 and parts[1] == CLIENTS_DIR:
        return user_client_entity(_from_znode(parts[0]), _from_znode(parts[2]))
    return None


def quotas_from_config(config: Mapping[str, str]) -> dict[str, float]:
    """The quota values an entity's dynamic config holds (other keys, SCRAM credentials
    among them, ignored; a value that is not a positive number is left out)."""
    out: dict[str, float] = {}
    for key in QUOTA_KEYS:
        text = config.get(key)
        if text is None:
            continue
        try:
            value = float(text)
        except ValueError:
            continue
        if value > 0 and math.isfinite(value):
            out[key] = value
    return out


def format_quota(value: float) -> str:
    """A quota value as the znode stores it: an integer without its ``.0``."""
    return str(int(value)) if value.is_integer() else repr(value)


def updated_quota_config(
    config: Mapping[str, str], sets: Mapping[str, float], removals: set[str]
) -> dict[str, str]:
    """``config`` with ``sets`` written and ``removals`` dropped; other keys stay."""
    out = {k: v for k, v in config.items() if k not in removals}
    for key, value in sets.items():
        out[key] = format_quota(value)
    return out


def precedence(user: str, client_id: str) -> tuple[EntityKey, ...]:
    """The entities that may give a request of ``user`` / ``client_id`` its quota, in
    Kafka's order (the module docstring)."""
    return (
        user_client_entity(user, client_id),
        user_client_entity(user, None),
        user_entity(user),
        user_client_entity(None, client_id),
        user_client_entity(None, None),
        user_entity(None),
        client_entity(client_id),
        client_entity(None),
    )


def resolve(
    table: Mapping[EntityKey, Mapping[str, float]], key: str, user: str, client_id: str
) -> tuple[float, tuple[str, str]] | None:
    """The quota ``key`` that applies to ``user`` / ``client_id`` and the tags its rate is
    kept under (module docstring); None when no entity sets it."""
    for entity in precedence(user, client_id):
        found = table.get(entity)
        if found is None or key not in found:
            continue
        has_user, _, has_client, _ = entity
        return found[key], (user if has_user else "", client_id if has_client else "")
    return None
