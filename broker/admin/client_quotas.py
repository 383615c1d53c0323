"""The rules of DescribeClientQuotas and AlterClientQuotas (pure), as Kafka's ZooKeeper
mode applies them.

An entity is a list of (entity type, name or None for the default). Allowed: ``user``,
``client-id``, ``user`` with ``client-id``; an ``ip`` entity is valid alone but its only
quota (``connection_creation_rate``) is not implemented here, so altering one is refused.
Any other type, a type given twice, an empty entity or ``ip`` beside another type is
INVALID_REQUEST. A key must be ``producer_byte_rate`` or ``consumer_byte_rate``
(``request_percentage`` and ``controller_mutation_rate`` are not implemented, and are
refused rather than accepted and ignored); a value set must be a whole number of at least
1 (a byte rate is a long in Kafka), else INVALID_REQUEST naming the key.

Describe filters: each component names a type and matches an exact name (0), the default
(1) or any name (2, the default included, as Kafka's "specified"); ``strict`` keeps only
entities with no other component. A filter that repeats a type or names an unknown one is
INVALID_REQUEST for the whole request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protocol import ErrorCode
from zk.quota_entities import (
    CLIENT_ID,
    IP,
    QUOTA_KEYS,
    USER,
    EntityKey,
    entity_key,
)


@dataclass(frozen=True)
class Failure:
    """Why a request (describe) or an entry (alter) is refused."""

    code: int
    message: str


MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2

ENTITY_TYPES = frozenset({USER, CLIENT_ID, IP})


@dataclass(frozen=True)
class QuotaOp:
    key: str
    value: float
    remove: bool


def parse_entity(components: Sequence[tuple[str, str | None]]) -> EntityKey | Failure:
    """The table key of a request's entity, or why it is refused."""
    if not components:
        return Failure(ErrorCode.INVALID_REQUEST, "the quota entity is empty")
    found: dict[str, str | None] = {}
    for entity_type, name in components:
        if entity_type not in ENTITY_TYPES:
            return Failure(
                ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {entity_type}"
            )
        if entity_type in found:
            return Failure(
                ErrorCode.INVALID_REQUEST, f"Duplicate {entity_type} entity type in the entity"
            )
        found[entity_type] = name
    if IP in found:
        if len(found) > 1:
            return Failure(ErrorCode.INVALID_REQUEST, "Invalid quota entity combination")
        return Failure(
            ErrorCode.INVALID_REQUEST, "ip quotas (connection_creation_rate) are not supported"
        )
    return entity_key(
        found.get(USER),
        found.get(CLIENT_ID),
        has_user=USER in found,
        has_client=CLIENT_ID in found,
    )


def check_ops(ops: Sequence[QuotaOp]) -> tuple[dict[str, float], set[str]] | Failure:
    """The sets and removals of an entry, or why it is refused."""
    sets: dict[str, float] = {}
    removals: set[str] = set()
    for op in ops:
        if op.key not in QUOTA_KEYS:
            return Failure(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {op.key}")
        if op.key in sets or op.key in removals:
            return Failure(ErrorCode.INVALID_REQUEST, f"Duplicate quota key {op.key}")
        if op.remove:
            removals.add(op.key)
            continue
        value = op.value
        if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
            return Failure(
                ErrorCode.INVALID_REQUEST, f"Configuration {op.key} must be a Long value"
            )
        if value < 1:
            return Failure(
                ErrorCode.INVALID_REQUEST,
                f"Invalid value {value:g} for configuration {op.key}: must be at least 1",
            )
        sets[op.key] = value
    return sets, removals


def entity_components(entity: EntityKey) -> list[tuple[str, str | None]]:
    """An entity as the response lists it: (type, name or None for the default)."""
    has_user, user, has_client, client = entity
    out: list[tuple[str, str | None]] = []
    if has_user:
        out.append((USER, user))
    if has_client:
        out.append((CLIENT_ID, client))
    return out


def describe(
    table: Mapping[EntityKey, Mapping[str, float]],
    components: Sequence[tuple[str, int, str | None]],
    strict: bool,
) -> list[tuple[EntityKey, dict[str, float]]] | Failure:
    """The entities of ``table`` a filter of (type, match type, match) selects."""
    wanted: dict[str, tuple[int, str | None]] = {}
    for entity_type, match_type, match in components:
        if entity_type not in ENTITY_TYPES:
            return Failure(
                ErrorCode.INVALID_REQUEST, f"Custom entity type {entity_type!r} not supported"
            )
        if entity_type in wanted:
            return Failure(
                ErrorCode.INVALID_REQUEST, f"Duplicate filter component entity type {entity_type}"
            )
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            return Failure(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        if match_type == MATCH_EXACT and match is None:
            return Failure(ErrorCode.INVALID_REQUEST, "an exact match needs a name")
        wanted[entity_type] = (match_type, match)
    out = []
    for entity, quotas in sorted(table.items(), key=lambda item: repr(item[0])):
        names = dict(entity_components(entity))
        if strict and set(names) != set(wanted):
            continue
        if all(_matches(names, t, m) for t, m in wanted.items()):
            out.append((entity, dict(quotas)))
    return out


def _matches(
    names: Mapping[str, str | None], entity_type: str, match: tuple[int, str | None]
) -> bool:
    if entity_type not in names:
        return False
    match_type, value = match
    name = names[entity_type]
    if match_type == MATCH_EXACT:
        return name == value
    if match_type == MATCH_DEFAULT:
        return name is None
    return True
