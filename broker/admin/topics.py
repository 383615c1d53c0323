"""Topic creation, partition addition and deletion requests: validate, assign replicas,
write to ZooKeeper.

Any broker can create a topic (Kafka's ZooKeeper mode): it writes /config/topics/<t> and
/brokers/topics/<t> (with a new topic id) in one multi-op; the controller sees the new
child of /brokers/topics, creates the partition states and sends LeaderAndIsr and
UpdateMetadata. Adding partitions rewrites the topic znode conditionally on its version;
the controller's per-topic watch picks it up.

Deleting only queues the topic under /admin/delete_topics (``queue_deletion``); the
controller's TopicDeletionManager carries it out. While it is queued the topic's znode
stays, so creating the same name again is TOPIC_ALREADY_EXISTS until deletion completed.

``plan_topic`` and ``plan_partitions`` are pure decisions (what to write, or which Kafka
error to answer); ``create_topic`` and ``add_partitions`` write through zk.facade.ZkFacade.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from broker.admin.assignment import (
    AssignmentError,
    assign_replicas,
    check_manual_assignment,
    start_index_for_new_partitions,
)
from broker.config import BrokerConfig, ConfigError, validate_topic_configs
from protocol import ErrorCode
from storage.errors import InvalidTopicError
from storage.names import validate_topic_name
from zk.errors import TopicAlreadyMarkedForDeletionError, TopicExistsError, TopicNotFoundError
from zk.facade import ZkFacade
from zk.model import TopicAssignment

#: CreateTopics' "use the broker default" for partitions and replication factor
NO_NUM_PARTITIONS = -1
NO_REPLICATION_FACTOR = -1


class AdminError(Exception):
    """A request the cluster refuses, with the Kafka error code to answer."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = int(error_code)
        self.message = message


@dataclass(frozen=True)
class TopicPlan:
    """A validated topic, ready to write."""

    name: str
    topic_id: uuid.UUID
    assignment: dict[int, list[int]]
    configs: dict[str, str]

    @property
    def num_partitions(self) -> int:
        return len(self.assignment)

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0]) if self.assignment else 0

    def to_assignment(self) -> TopicAssignment:
        return TopicAssignment(
            self.name, self.topic_id, {p: tuple(r) for p, r in self.assignment.items()}
        )


#: the group coordinator's offsets topic (Kafka's GROUP_METADATA_TOPIC_NAME)
OFFSETS_TOPIC = "__consumer_offsets"


def offsets_topic_settings(config: BrokerConfig) -> tuple[int, int, dict[str, str]]:
    """Partitions, replication factor and configs of __consumer_offsets when it is created
    (on first use: FindCoordinator, or a Metadata request that names it)."""
    return (
        config.get_int("offsets.topic.num.partitions"),
        config.get_int("offsets.topic.replication.factor"),
        {
            "cleanup.policy": "compact",
            "segment.bytes": str(config.get_int("offsets.topic.segment.bytes")),
        },
    )


def _collision_key(name: str) -> str:
    # '.' and '_' collide in metric names, so Kafka refuses names equal up to them
    return name.replace(".", "_")


def check_topic_name(name: str, existing: Collection[str]) -> None:
    try:
        validate_topic_name(name)
    except InvalidTopicError as exc:
        raise AdminError(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None
    if name in existing:
        raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    key = _collision_key(name)
    clashes = sorted(t for t in existing if _collision_key(t) == key)
    if clashes:
        raise AdminError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic '{name}' collides with existing topics: {', '.join(clashes)}",
        )


def plan_topic(
    name: str,
    num_partitions: int,
    replication_factor: int,
    manual: Mapping[int, Sequence[int]],
    configs: Mapping[str, str | None],
    *,
    live_brokers: Sequence[int],
    existing_topics: Collection[str],
    default_partitions: int,
    default_replication_factor: int,
    rng: random.Random | None = None,
) -> TopicPlan:
    """Validate a CreateTopics entry and decide its replica assignment."""
    check_topic_name(name, existing_topics)
    if manual and (
        num_partitions != NO_NUM_PARTITIONS or replication_factor != NO_REPLICATION_FACTOR
    ):
        raise AdminError(
            ErrorCode.INVALID_REQUEST,
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time.",
        )
    if any(v is None for v in configs.values()):
        raise AdminError(ErrorCode.INVALID_CONFIG, "Null value not supported for topic configs")
    try:
        validate_topic_configs(configs)
    except ConfigError as exc:
        raise AdminError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    try:
        if manual:
            assignment = {p: list(r) for p, r in manual.items()}
            check_manual_assignment(assignment, None)
        else:
            partitions = (
                default_partitions if num_partitions == NO_NUM_PARTITIONS else num_partitions
            )
            factor = (
                default_replication_factor
                if replication_factor == NO_REPLICATION_FACTOR
                else replication_factor
            )
            assignment = assign_replicas(live_brokers, partitions, factor, rng=rng)
    except AssignmentError as exc:
        raise AdminError(exc.error_code, exc.message) from None
    return TopicPlan(
        name, uuid.uuid4(), assignment, {k: v for k, v in configs.items() if v is not None}
    )


def plan_partitions(
    current: TopicAssignment,
    new_count: int,
    manual: Sequence[Sequence[int]] | None,
    *,
    live_brokers: Sequence[int],
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """The replicas of the partitions CreatePartitions adds (only the new ones)."""
    existing = len(current.partitions)
    if new_count < existing:
        raise AdminError(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {existing} partitions, which is higher than the "
            f"requested {new_count}.",
        )
    if new_count == existing:
        raise AdminError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {existing} partitions.")
    adding = new_count - existing
    factor = len(current.partitions.get(0, ()))
    try:
        if manual is not None:
            if len(manual) != adding:
                raise AdminError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Increasing the number of partitions by {adding} but {len(manual)} "
                    "assignments provided.",
                )
            new = {existing + i: list(r) for i, r in enumerate(manual)}
            check_manual_assignment(
                new, live_brokers, first_partition=existing, replication_factor=factor
            )
            return new
        start = start_index_for_new_partitions(live_brokers, current.partitions)
        return assign_replicas(
            live_brokers, adding, factor, start_index=start, start_partition=existing, rng=rng
        )
    except AssignmentError as exc:
        raise AdminError(exc.error_code, exc.message) from None


async def existing_topics(zk: ZkFacade) -> list[str]:
    return await zk.get_topics()


async def create_topic(zk: ZkFacade, plan: TopicPlan) -> None:
    """Write the topic's config and assignment; TOPIC_ALREADY_EXISTS if someone won."""
    try:
        await zk.create_topic(plan.to_assignment(), plan.configs)
    except TopicExistsError:
        raise AdminError(
            ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{plan.name}' already exists."
        ) from None


async def create_topics(zk: ZkFacade, plans: Sequence[TopicPlan]) -> dict[str, Exception | None]:
    """:func:`create_topic` for many topics, their writes in flight together: per topic
    None when written, else the AdminError (TOPIC_ALREADY_EXISTS) or the error that
    failed it (a connection failure fails every topic)."""
    try:
        written = await zk.create_topics([(p.to_assignment(), p.configs) for p in plans])
    except Exception as exc:
        return dict.fromkeys((p.name for p in plans), exc)
    out: dict[str, Exception | None] = {}
    for plan in plans:
        failure = written.get(plan.name)
        if isinstance(failure, TopicExistsError):
            failure = AdminError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{plan.name}' already exists."
            )
        out[plan.name] = failure
    return out


async def read_topic(zk: ZkFacade, topic: str) -> tuple[TopicAssignment, int]:
    found = await zk.get_topic(topic)
    if found is None:
        raise AdminError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
        )
    return found


async def add_partitions(
    zk: ZkFacade, current: TopicAssignment, version: int, new: Mapping[int, Sequence[int]]
) -> None:
    """Rewrite the topic znode with the new partitions, conditional on ``version``."""
    from kazoo.exceptions import BadVersionError

    partitions = {**current.partitions, **{p: tuple(r) for p, r in new.items()}}
    updated = TopicAssignment(
        current.topic,
        current.topic_id,
        partitions,
        dict(current.adding_replicas),
        dict(current.removing_replicas),
    )
    try:
        await zk.set_topic_assignment(updated, version)
    except BadVersionError:
        # another writer (a reassignment, a concurrent CreatePartitions) got there first
        raise AdminError(
            ErrorCode.REASSIGNMENT_IN_PROGRESS,
            f"Topic '{current.topic}' changed while adding partitions; retry.",
        ) from None


async def queue_deletion(zk: ZkFacade, topic: str) -> None:
    """Queue ``topic`` for deletion; one queued already is not an error (the caller
    waits for it like for its own request, as Kafka does)."""
    try:
        await zk.mark_topic_for_deletion(topic)
    except TopicAlreadyMarkedForDeletionError:
        return
    except TopicNotFoundError:
        raise AdminError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
        ) from None
