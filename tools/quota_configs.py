"""``minikafka configs --entity-type users|clients``: client quotas, as kafka-configs
handles them.

::

    minikafka configs --bootstrap-server H:P --alter --entity-type clients --entity-name c1 \\
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    minikafka configs --bootstrap-server H:P --alter --entity-type users --entity-default \\
        --delete-config producer_byte_rate
    minikafka configs --bootstrap-server H:P --alter --entity-type users --entity-name u \\
        --entity-type clients --entity-name c --add-config producer_byte_rate=1024
    minikafka configs --bootstrap-server H:P --describe --entity-type clients [--entity-name c]

Each ``--entity-type`` takes the ``--entity-name`` or ``--entity-default`` that follows
it, in order; a user and a client id together name the combined entity. ``--alter``
sends AlterClientQuotas (a value must be a number; the broker refuses a rate that is not a
whole number of at least 1, and keys other than ``producer_byte_rate`` and
``consumer_byte_rate``) and prints ``Completed updating config for entity: client-id
'c1'.``; ``--describe`` sends DescribeClientQuotas and prints one line per entity, as
Kafka's tool does::

    Quota configs for client-id 'c1' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0

(``the default client-id`` for a default; every entity of the types given when a name
is left out). For users the same znode holds SCRAM credentials: a users ``--alter`` whose
keys are all quota keys goes here, one whose keys are all SCRAM mechanisms goes to
``tools.scram_configs``; ``--describe`` of users prints both.

``--zookeeper H:P[/chroot]`` instead of ``--bootstrap-server`` reads and writes the
znodes directly (``zk.client_quotas``: the same checks as a broker's, the change
notification in the same multi-op), as Kafka 3.x's ``kafka-configs --zookeeper`` does;
running brokers follow the notification.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Final, TextIO

from broker.admin import client_quotas as rules
from client import KafkaClient
from client.quota_admin import (
    MATCH_EXACT,
    MATCH_SPECIFIED,
    QuotaAlteration,
    alter_client_quotas,
    describe_client_quotas,
)
from tools.command import CommandError
from zk import client_quotas as zk_quotas
from zk.errors import ZooKeeperUnavailableError
from zk.quota_entities import EntityKey
from zk.session import ZkSession

#: how long --zookeeper waits for ZooKeeper to answer
ZOOKEEPER_TIMEOUT_S: Final = 30.0

#: --entity-type -> the entity type of the quota APIs
QUOTA_ENTITY_TYPES: Final = {"users": "user", "clients": "client-id"}
QUOTA_KEYS: Final = frozenset({"producer_byte_rate", "consumer_byte_rate"})
#: how the tool's lines name each entity type
_WORDS: Final = {"user": "user-principal", "client-id": "client-id"}
_ORDER: Final = {"user": 0, "client-id": 1}


def quota_entity(types: Sequence[str], names: Sequence[str | None]) -> dict[str, str | None]:
    """The entity of ``--entity-type`` / ``--entity-name|--entity-default`` pairs."""
    if len(types) != len(names):
        raise CommandError("each --entity-type needs its --entity-name or --entity-default")
    entity: dict[str, str | None] = {}
    for entity_type, name in zip(types, names, strict=True):
        if entity_type not in QUOTA_ENTITY_TYPES:
            raise CommandError(f"--entity-type {entity_type} cannot be combined with others")
        key = QUOTA_ENTITY_TYPES[entity_type]
        if key in entity:
            raise CommandError(f"--entity-type {entity_type} is given twice")
        entity[key] = name
    return entity


def describe_entity(entity: Sequence[tuple[str, str | None]]) -> str:
    parts = sorted(entity, key=lambda item: _ORDER.get(item[0], 9))
    return ", ".join(
        f"the default {_WORDS.get(t, t)}" if n is None else f"{_WORDS.get(t, t)} '{n}'"
        for t, n in parts
    )


def describe_line(entity: Sequence[tuple[str, str | None]], quotas: Mapping[str, float]) -> str:
    shown = ", ".join(f"{k}={float(v)!r}" for k, v in sorted(quotas.items()))
    return f"Quota configs for {describe_entity(entity)} are {shown}"


def parse_values(added: Mapping[str, str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, text in added.items():
        try:
            out[key] = float(text)
        except ValueError:
            raise CommandError(
                f"Cannot parse quota configuration value for {key}: {text}"
            ) from None
    return out


async def describe(
    client: KafkaClient, types: Sequence[str], names: Sequence[str | None], out: TextIO
) -> None:
    found = await describe_client_quotas(client, _components(types, names), strict=True)
    for entity, quotas in sorted(found.items(), key=lambda item: repr(item[0])):
        print(describe_line(entity, quotas), file=out)


async def alter(
    client: KafkaClient,
    types: Sequence[str],
    names: Sequence[str | None],
    added: Mapping[str, str],
    deleted: Sequence[str],
    out: TextIO,
) -> None:
    entity = quota_entity(types, names)
    if not added and not deleted:
        raise CommandError("--alter needs --add-config or --delete-config")
    alterations = [QuotaAlteration(entity, k, v) for k, v in parse_values(added).items()]
    alterations += [QuotaAlteration(entity, k, None) for k in deleted]
    results = await alter_client_quotas(client, alterations)
    for error in results.values():
        if error is not None:
            raise CommandError(str(error))
    shown = describe_entity(list(entity.items()))
    print(f"Completed updating config for entity: {shown}.", file=out)


def _components(
    types: Sequence[str], names: Sequence[str | None]
) -> list[tuple[str, int, str | None]]:
    components: list[tuple[str, int, str | None]] = []
    for i, entity_type in enumerate(types):
        key = QUOTA_ENTITY_TYPES[entity_type]
        if i < len(names):
            name = names[i]
            components.append((key, MATCH_EXACT if name is not None else 1, name))
        else:
            components.append((key, MATCH_SPECIFIED, None))
    return components


def _zookeeper(
    connect: str,
    types: Sequence[str],
    names: Sequence[str | None],
    change: tuple[Mapping[str, str], Sequence[str]] | None,
) -> list[str]:
    """Blocking: connect, describe or alter, disconnect; the lines to print."""
    write = None if change is None else _checked_change(types, names, *change)
    try:
        session = ZkSession.connect(connect, connect_timeout_s=ZOOKEEPER_TIMEOUT_S)
    except ZooKeeperUnavailableError as exc:
        raise CommandError(str(exc)) from None
    try:
        if write is None:
            table = zk_quotas.get_all_client_quotas(session)
            found = rules.describe(table, _components(types, names), strict=True)
            if isinstance(found, rules.Failure):
                raise CommandError(found.message)
            return [describe_line(rules.entity_components(e), q) for e, q in found]
        key, sets, removals = write
        zk_quotas.alter_client_quotas(session, key, sets, removals)
        shown = describe_entity(rules.entity_components(key))
        return [f"Completed updating config for entity: {shown}."]
    finally:
        session.close()


def _checked_change(
    types: Sequence[str],
    names: Sequence[str | None],
    added: Mapping[str, str],
    deleted: Sequence[str],
) -> tuple[EntityKey, dict[str, float], set[str]]:
    """The entity and its change, checked as a broker checks AlterClientQuotas."""
    key = rules.parse_entity(list(quota_entity(types, names).items()))
    if isinstance(key, rules.Failure):
        raise CommandError(key.message)
    if not added and not deleted:
        raise CommandError("--alter needs --add-config or --delete-config")
    ops = [rules.QuotaOp(k, v, False) for k, v in parse_values(added).items()]
    ops += [rules.QuotaOp(k, 0.0, True) for k in deleted]
    checked = rules.check_ops(ops)
    if isinstance(checked, rules.Failure):
        raise CommandError(checked.message)
    return key, checked[0], checked[1]


async def through_zookeeper(
    connect: str,
    types: Sequence[str],
    names: Sequence[str | None],
    change: tuple[Mapping[str, str], Sequence[str]] | None,
    out: TextIO,
) -> None:
    for line in await asyncio.to_thread(_zookeeper, connect, types, names, change):
        print(line, file=out)
