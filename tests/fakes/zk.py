"""FakeZk: the test double of zk.facade.ZkFacade, ZooKeeper's state kept in dictionaries.

It is a ZkFacade (so the assembly's services, a KafkaController or a handler take it as they
take the real one), built over a ZkSession whose kazoo client is never started. Every
coroutine a test needs is answered from memory here, with the real one's signature and
errors (TopicExistsError, TopicNotFoundError, ...); a coroutine not faked reaches
``_run`` and fails at once, naming the family function the test would have needed.

State a test seeds or inspects:

- ``topics``: name -> (assignment, znode version); ``add_topic`` seeds one.
- ``entity_configs``: (entity type, name) -> dynamic config; a topic's overrides are the
  ("topics", <t>) entity, as in /config/topics/<t>. ``config_changes`` lists the entities
  whose change was announced. SCRAM credentials live there too, as the ("users",
  <sanitized user>) entity; ``fail_credential_writes`` makes their writes raise
  ConnectionError, as an unreachable ZooKeeper would (client quota writes too). Client
  quotas are keys of the ("users", <u>), ("users", "<u>/clients/<c>") and ("clients",
  <c>) entities, as in zk.client_quotas.
- ``queued_deletions`` (/admin/delete_topics), ``deleted_entries`` (entries the controller
  removed), ``deleted_topics`` ((topic, epoch zkVersion) whose znodes it removed).
- producer-id blocks: ``claims`` (every block handed out), ``block_size`` (overrides the
  size asked for), ``fail_claims`` (a claim raises ConnectionError, as an unreachable
  ZooKeeper would).
- ``isr_changes``: the partitions of every ISR change notification written.

Each coroutine yields to the loop once before answering, as a real round trip would, so
concurrent callers really interleave.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Concatenate, ParamSpec, TypeVar

from kazoo.client import KazooClient

from protocol.sasl.scram import ScramCredential
from protocol.values import TopicPartition
from zk import codec, paths
from zk.errors import (
    ScramCredentialNotFoundError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    TopicNotFoundError,
)
from zk.facade import ZkFacade
from zk.model import TopicAssignment
from zk.quota_entities import (
    EntityKey,
    entity_path,
    parse_entity_path,
    quotas_from_config,
    updated_quota_config,
)
from zk.scram_codec import (
    USERS_ENTITY,
    credentials_from_config,
    desanitize_user,
    sanitize_user,
    updated_config,
)
from zk.session import Watch, ZkSession

P = ParamSpec("P")
T = TypeVar("T")


class FakeZk(ZkFacade):
    def __init__(self) -> None:
        super().__init__(ZkSession(KazooClient(hosts="127.0.0.1:1")))
        self.topics: dict[str, tuple[TopicAssignment, int]] = {}
        self.entity_configs: dict[tuple[str, str], dict[str, str]] = {}
        self.config_changes: list[str] = []
        self.queued_deletions: list[str] = []
        self.deleted_entries: list[str] = []
        self.deleted_topics: list[tuple[str, int]] = []
        self.claims: list[codec.ProducerIdBlock] = []
        self.block_size: int | None = None
        self.fail_claims = False
        self.isr_changes: list[list[TopicPartition]] = []
        self.fail_credential_writes = False

    async def _run(
        self, fn: Callable[Concatenate[ZkSession, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        raise NotImplementedError(f"FakeZk does not fake {fn.__module__}.{fn.__qualname__}")

    # -- seeding ---------------------------------------------------------------------------

    def add_topic(
        self,
        name: str,
        partitions: Mapping[int, Sequence[int]] | None = None,
        config: Mapping[str, str] | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> TopicAssignment:
        """A topic as CreateTopics would have written it (one partition on broker 0 unless
        ``partitions`` says otherwise), with ``config`` as its overrides."""
        replicas = {p: tuple(r) for p, r in (partitions or {0: (0,)}).items()}
        assignment = TopicAssignment(name, topic_id or uuid.uuid4(), replicas)
        self.topics[name] = (assignment, 0)
        self.entity_configs[(paths.TOPICS_ENTITY, name)] = dict(config or {})
        return assignment

    # -- topics ----------------------------------------------------------------------------

    async def get_topics(self, watch: Watch | None = None) -> list[str]:
        await asyncio.sleep(0)
        return sorted(self.topics)

    async def get_topic(
        self, topic: str, watch: Watch | None = None
    ) -> tuple[TopicAssignment, int] | None:
        await asyncio.sleep(0)
        return self.topics.get(topic)

    async def create_topic(self, assignment: TopicAssignment, config: Mapping[str, str]) -> None:
        await asyncio.sleep(0)
        if assignment.topic in self.topics:
            raise TopicExistsError(assignment.topic)
        self.topics[assignment.topic] = (assignment, 0)
        self.entity_configs[(paths.TOPICS_ENTITY, assignment.topic)] = dict(config)

    async def create_topics(
        self, new: Sequence[tuple[TopicAssignment, Mapping[str, str]]]
    ) -> dict[str, Exception | None]:
        out: dict[str, Exception | None] = {}
        for assignment, config in new:
            try:
                await self.create_topic(assignment, config)
                out[assignment.topic] = None
            except TopicExistsError as exc:
                out[assignment.topic] = exc
        return out

    async def get_topic_list(
        self, names: Sequence[str], watches: Mapping[str, Watch] | None = None
    ) -> dict[str, tuple[TopicAssignment, int] | codec.ZkDataError | None]:
        await asyncio.sleep(0)
        return {name: self.topics.get(name) for name in names}

    async def set_topic_assignment(self, assignment: TopicAssignment, expected_version: int) -> int:
        await asyncio.sleep(0)
        from kazoo.exceptions import BadVersionError, NoNodeError

        if assignment.topic not in self.topics:
            raise NoNodeError(paths.topic(assignment.topic))
        _, version = self.topics[assignment.topic]
        if version != expected_version:
            raise BadVersionError(paths.topic(assignment.topic))
        self.topics[assignment.topic] = (assignment, version + 1)
        return version + 1

    async def delete_topic_znodes(
        self, topic: str, epoch_zk_version: int, attempts: int = 3
    ) -> None:
        await asyncio.sleep(0)
        self.deleted_topics.append((topic, epoch_zk_version))
        self.topics.pop(topic, None)
        self.entity_configs.pop((paths.TOPICS_ENTITY, topic), None)
        self.queued_deletions = [t for t in self.queued_deletions if t != topic]

    # -- configs ---------------------------------------------------------------------------

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return dict(self.entity_configs.get((paths.TOPICS_ENTITY, topic), {}))

    async def get_topic_configs(
        self, names: Sequence[str]
    ) -> dict[str, dict[str, str] | Exception]:
        out: dict[str, dict[str, str] | Exception] = {}
        for name in names:
            try:
                out[name] = await self.get_topic_config(name)
            except Exception as exc:  # a test making one read fail
                out[name] = exc
        return out

    async def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return dict(self.entity_configs.get((entity_type, name), {}))

    async def set_entity_config(
        self, entity_type: str, name: str, config: Mapping[str, str]
    ) -> str:
        await asyncio.sleep(0)
        self.entity_configs[(entity_type, name)] = dict(config)
        self.config_changes.append(f"{entity_type}/{name}")
        return f"{paths.CONFIG_CHANGE_PREFIX}{len(self.config_changes) - 1:010d}"

    # -- SCRAM credentials (the "users" entities) ------------------------------------------

    async def get_user_credentials(self, user: str) -> dict[str, ScramCredential]:
        await asyncio.sleep(0)
        config = self.entity_configs.get((USERS_ENTITY, sanitize_user(user)), {})
        return credentials_from_config(config)[0]

    async def get_all_user_credentials(self) -> dict[str, dict[str, ScramCredential]]:
        await asyncio.sleep(0)
        found = {
            desanitize_user(name): credentials_from_config(config)[0]
            for (kind, name), config in self.entity_configs.items()
            if kind == USERS_ENTITY
        }
        return {user: credentials for user, credentials in found.items() if credentials}

    async def alter_user_credentials(
        self, user: str, upserts: Mapping[str, ScramCredential], deletions: Iterable[str]
    ) -> dict[str, ScramCredential]:
        await asyncio.sleep(0)
        if self.fail_credential_writes:
            raise ConnectionError("ZooKeeper is unreachable (FakeZk.fail_credential_writes)")
        key = (USERS_ENTITY, sanitize_user(user))
        current = self.entity_configs.get(key, {})
        deletions = list(deletions)
        missing = [m for m in deletions if m not in current]
        if missing:
            raise ScramCredentialNotFoundError(f"user {user!r} has no {missing}")
        self.entity_configs[key] = updated_config(current, upserts, deletions)
        self.config_changes.append(f"{USERS_ENTITY}/{key[1]}")
        return credentials_from_config(self.entity_configs[key])[0]

    async def get_all_client_quotas(self) -> dict[EntityKey, dict[str, float]]:
        await asyncio.sleep(0)
        found: dict[EntityKey, dict[str, float]] = {}
        for (kind, name), config in self.entity_configs.items():
            entity = parse_entity_path(kind, name)
            quotas = quotas_from_config(config)
            if entity is not None and quotas:
                found[entity] = quotas
        return found

    async def alter_client_quotas(
        self, entity: EntityKey, sets: Mapping[str, float], removals: Iterable[str]
    ) -> dict[str, float]:
        await asyncio.sleep(0)
        if self.fail_credential_writes:
            raise ConnectionError("ZooKeeper is unreachable (FakeZk.fail_credential_writes)")
        kind, _, name = entity_path(entity).partition("/")
        current = self.entity_configs.get((kind, name), {})
        self.entity_configs[(kind, name)] = updated_quota_config(current, sets, set(removals))
        self.config_changes.append(f"{kind}/{name}")
        return quotas_from_config(self.entity_configs[(kind, name)])

    # -- topic deletion --------------------------------------------------------------------

    async def mark_topic_for_deletion(self, topic: str) -> None:
        await asyncio.sleep(0)
        if topic not in self.topics:
            raise TopicNotFoundError(topic)
        if topic in self.queued_deletions:
            raise TopicAlreadyMarkedForDeletionError(topic)
        self.queued_deletions.append(topic)

    async def get_topic_deletions(self, watch: Watch | None = None) -> list[str]:
        await asyncio.sleep(0)
        return list(self.queued_deletions)

    async def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None:
        await asyncio.sleep(0)
        self.deleted_entries += topics
        self.queued_deletions = [t for t in self.queued_deletions if t not in topics]

    # -- producer ids and ISR changes ------------------------------------------------------

    async def allocate_producer_id_block(
        self, broker_id: int, size: int = codec.PRODUCER_ID_BLOCK_SIZE, attempts: int = 100
    ) -> codec.ProducerIdBlock:
        await asyncio.sleep(0)
        if self.fail_claims:
            raise ConnectionError("ZooKeeper is away")
        previous = self.claims[-1] if self.claims else None
        block = codec.next_producer_id_block(previous, broker_id, self.block_size or size)
        self.claims.append(block)
        return block

    async def propagate_isr_change(self, partitions: Iterable[TopicPartition]) -> str:
        await asyncio.sleep(0)
        self.isr_changes.append(list(partitions))
        return (
            f"{paths.ISR_CHANGE_NOTIFICATION}/{paths.ISR_CHANGE_PREFIX}{len(self.isr_changes):010d}"
        )
