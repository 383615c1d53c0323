"""Client quotas: describe (DescribeClientQuotas) and alter (AlterClientQuotas), as
Kafka's Admin client does.

An entity is a mapping of entity type (``user``, ``client-id``) to a name, or None for
the default entity of that type. Any broker answers both (Kafka's ZooKeeper mode: the
broker writes ZooKeeper itself). Altering is per entity: one refused entity (an unknown
key, a rate that is not a whole positive number) does not fail the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from client.client import KafkaClient
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest

#: an entity: entity type -> name (None: the default)
QuotaEntity = Mapping[str, str | None]

MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_SPECIFIED = 2


@dataclass(frozen=True, slots=True)
class QuotaAlteration:
    """Set (``value``) or remove (``value`` None) one quota key of ``entity``."""

    entity: QuotaEntity
    key: str
    value: float | None


def entity_tuple(entity: QuotaEntity) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(entity.items()))


async def describe_client_quotas(
    client: KafkaClient,
    components: Sequence[tuple[str, int, str | None]] = (),
    *,
    strict: bool = False,
) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """The quotas of every entity the filter selects (entity as sorted (type, name)
    pairs). ``components``: (entity type, match type, match). KafkaError when refused."""

    def build(version: int) -> Any:
        return DescribeClientQuotasRequest(
            components=[
                DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=name)
                for t, m, name in components
            ],
            strict=strict,
        )

    body = await client.retrying(lambda: client.request(None, ApiKey.DESCRIBE_CLIENT_QUOTAS, build))
    if body.error_code != ErrorCode.NONE:
        raise KafkaError(body.error_code, body.error_message)
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in body.entries or ()
    }


async def alter_client_quotas(
    client: KafkaClient, alterations: Sequence[QuotaAlteration], *, validate_only: bool = False
) -> dict[tuple[tuple[str, str | None], ...], KafkaError | None]:
    """Apply the alterations, grouped by entity; each entity -> None (done) or the error
    that refused its whole change."""
    grouped: dict[tuple[tuple[str, str | None], ...], list[QuotaAlteration]] = {}
    for alteration in alterations:
        grouped.setdefault(entity_tuple(alteration.entity), []).append(alteration)
    Entry = AlterClientQuotasRequest.EntryData

    def build(version: int) -> Any:
        return AlterClientQuotasRequest(
            entries=[
                Entry(
                    entity=[
                        AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n)
                        for t, n in entity
                    ],
                    ops=[
                        AlterClientQuotasRequest.OpData(
                            key=a.key,
                            value=0.0 if a.value is None else a.value,
                            remove=a.value is None,
                        )
                        for a in items
                    ],
                )
                for entity, items in grouped.items()
            ],
            validate_only=validate_only,
        )

    body = await client.retrying(lambda: client.request(None, ApiKey.ALTER_CLIENT_QUOTAS, build))
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): (
            None
            if entry.error_code == ErrorCode.NONE
            else KafkaError(entry.error_code, entry.error_message)
        )
        for entry in body.entries
    }
