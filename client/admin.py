"""Topic administration: create, add partitions, delete, describe (Metadata), the
configs of topics and brokers (DescribeConfigs, IncrementalAlterConfigs), each
broker's log directories (DescribeLogDirs), partition reassignments
(AlterPartitionReassignments, ListPartitionReassignments), and the deletion of records
below an offset (DeleteRecords, to each partition's leader).

CreateTopics, CreatePartitions, DeleteTopics, ElectLeaders and the reassignment APIs go to
the controller (a broker that is not answers NOT_CONTROLLER, and we retry after a
metadata refresh); configs of topics
and of the cluster-wide broker default may go to any broker, a broker's own to that
broker. Results are per topic: one failing topic does not fail the
others, so each function returns a mapping topic -> outcome rather than raising.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from client.client import KafkaClient
from client.cluster_view import TopicInfo
from client.errors import ClientError, KafkaError, UnsupportedApi
from protocol import ApiKey, ErrorCode, error_name
from protocol.messages import (
    AlterPartitionReassignmentsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
)
from protocol.values import TopicPartition

#: ConfigResource types: a topic, a broker (name: its id, or "" for the cluster default)
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
#: ConfigSource values (DescribeConfigs v1+)
DYNAMIC_TOPIC_CONFIG = 1
DEFAULT_CONFIG = 5


@dataclass(frozen=True)
class NewTopic:
    name: str
    #: -1: the broker's num.partitions / default.replication.factor (CreateTopics v4+)
    partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str] = field(default_factory=dict)
    #: partition -> broker ids; when given, partitions and replication factor are -1
    assignments: Mapping[int, Sequence[int]] | None = None


@dataclass(frozen=True)
class TopicResult:
    name: str
    error_code: int = ErrorCode.NONE
    error_message: str | None = None
    topic_id: uuid.UUID | None = None

    @property
    def ok(self) -> bool:
        return self.error_code == ErrorCode.NONE

    def describe_error(self) -> str:
        name = error_name(self.error_code)
        return f"{name}: {self.error_message}" if self.error_message else name


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    is_sensitive: bool
    #: (name, value, source), strongest first (when asked for)
    synonyms: tuple[tuple[str, str | None, int], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG


async def _to_controller(client: KafkaClient, api_key: int, build: Any, timeout_s: float) -> Any:
    """Send to the controller; NOT_CONTROLLER at the top level or in every result makes
    the call retriable (refresh, then ask the new controller)."""

    async def once() -> Any:
        controller = client.view.controller_id
        node = controller if controller in client.view.brokers else None
        body = await client.request(node, api_key, build)
        if getattr(body, "error_code", ErrorCode.NONE) == ErrorCode.NOT_CONTROLLER:
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        results = (
            getattr(body, "topics", None)
            or getattr(body, "results", None)
            or getattr(body, "responses", None)
        )
        if results and all(
            getattr(r, "error_code", None) == ErrorCode.NOT_CONTROLLER for r in results
        ):
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        return body

    return await client.retrying(once, timeout_s=timeout_s)


async def create_topics(
    client: KafkaClient,
    topics: Sequence[NewTopic],
    *,
    timeout_ms: int = 30_000,
    validate_only: bool = False,
) -> dict[str, TopicResult]:
    def build(version: int) -> Any:
        creatable = []
        for t in topics:
            assignments = [
                CreateTopicsRequest.CreatableReplicaAssignment(
                    partition_index=p, broker_ids=list(brokers)
                )
                for p, brokers in sorted((t.assignments or {}).items())
            ]
            configs = [
                CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                for k, v in t.configs.items()
            ]
            creatable.append(
                CreateTopicsRequest.CreatableTopic(
                    name=t.name,
                    num_partitions=-1 if assignments else t.partitions,
                    replication_factor=-1 if assignments else t.replication_factor,
                    assignments=assignments,
                    configs=configs,
                )
            )
        return CreateTopicsRequest(
            topics=creatable, timeout_ms=timeout_ms, validate_only=validate_only
        )

    body = await _to_controller(client, ApiKey.CREATE_TOPICS, build, timeout_ms / 1000 + 30)
    return {
        r.name: TopicResult(
            r.name,
            r.error_code,
            r.error_message,
            r.topic_id if r.topic_id != uuid.UUID(int=0) else None,
        )
        for r in body.topics
    }


async def create_partitions(
    client: KafkaClient, counts: Mapping[str, int], *, timeout_ms: int = 30_000
) -> dict[str, TopicResult]:
    """Raise each topic's partition count to ``counts[topic]`` (never lowers it)."""

    def build(version: int) -> Any:
        return CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(
                    name=name, count=count, assignments=None
                )
                for name, count in counts.items()
            ],
            timeout_ms=timeout_ms,
            validate_only=False,
        )

    body = await _to_controller(client, ApiKey.CREATE_PARTITIONS, build, timeout_ms / 1000 + 30)
    return {r.name: TopicResult(r.name, r.error_code, r.error_message) for r in body.results}


async def delete_topics(
    client: KafkaClient, names: Sequence[str], *, timeout_ms: int = 30_000
) -> dict[str, TopicResult]:
    """Raises UnsupportedApi when the brokers do not serve DeleteTopics."""
    conn = await client.any_connection()
    if not conn.supports(ApiKey.DELETE_TOPICS):
        raise UnsupportedApi("the brokers do not support DeleteTopics; nothing was deleted")

    def build(version: int) -> Any:
        if version >= 6:
            states = [DeleteTopicsRequest.DeleteTopicState(name=n) for n in names]
            return DeleteTopicsRequest(topics=states, timeout_ms=timeout_ms)
        return DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms)

    body = await _to_controller(client, ApiKey.DELETE_TOPICS, build, timeout_ms / 1000 + 30)
    return {
        r.name: TopicResult(r.name, r.error_code, getattr(r, "error_message", None))
        for r in body.responses
    }


@dataclass(frozen=True)
class ElectionResult:
    """One partition's answer to ElectLeaders (error_code NONE: a new leader was elected)."""

    topic: str
    partition: int
    error_code: int
    error_message: str | None = None


async def elect_leaders(
    client: KafkaClient,
    election_type: int,
    partitions: Sequence[tuple[str, int]] | None,
    *,
    timeout_ms: int = 30_000,
) -> list[ElectionResult]:
    """Ask the controller for preferred (0) or unclean (1) leader elections of
    ``partitions`` (topic, partition), or of every partition (None: then only those
    elected or failed are answered)."""

    def build(version: int) -> Any:
        if version == 0 and election_type != 0:
            raise UnsupportedApi("the brokers only support preferred leader elections")
        listed: dict[str, list[int]] = {}
        for topic, p in partitions or ():
            listed.setdefault(topic, []).append(p)
        return ElectLeadersRequest(
            election_type=election_type,
            topic_partitions=None
            if partitions is None
            else [
                ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps)
                for t, ps in listed.items()
            ],
            timeout_ms=timeout_ms,
        )

    async def once() -> Any:
        controller = client.view.controller_id
        node = controller if controller in client.view.brokers else None
        body = await client.request(node, ApiKey.ELECT_LEADERS, build)
        codes = [r.error_code for t in body.replica_election_results for r in t.partition_result]
        if body.error_code == ErrorCode.NOT_CONTROLLER or (
            codes and all(c == ErrorCode.NOT_CONTROLLER for c in codes)
        ):
            raise KafkaError(ErrorCode.NOT_CONTROLLER)
        if body.error_code != ErrorCode.NONE:
            raise KafkaError(body.error_code)
        return body

    body = await client.retrying(once, timeout_s=timeout_ms / 1000 + 30)
    return [
        ElectionResult(t.topic, r.partition_id, r.error_code, r.error_message)
        for t in body.replica_election_results
        for r in t.partition_result
    ]


async def describe_topics(
    client: KafkaClient, names: Sequence[str] | None = None
) -> dict[str, TopicInfo]:
    """Topics as Metadata describes them (None: every topic), without auto-creation.
    A named topic that does not exist comes back with its error code set."""
    view = await client.refresh_metadata(names)
    wanted = sorted(view.topics) if names is None else list(names)
    return {n: view.topics[n] for n in wanted if n in view.topics}


async def describe_topic_configs(
    client: KafkaClient, names: Sequence[str]
) -> dict[str, list[ConfigEntry] | KafkaError]:
    """Each topic's configuration entries (or the error DescribeConfigs gave for it)."""
    return await describe_configs(client, TOPIC_RESOURCE, names)


def _node_for(resource_type: int, name: str) -> int | None:
    """A broker's own configs are asked of that broker; the rest of any broker."""
    return int(name) if resource_type == BROKER_RESOURCE and name.isdigit() else None


async def describe_configs(
    client: KafkaClient, resource_type: int, names: Sequence[str], synonyms: bool = False
) -> dict[str, list[ConfigEntry] | KafkaError]:
    """Each resource's configuration entries (or the error DescribeConfigs gave for it)."""
    out: dict[str, list[ConfigEntry] | KafkaError] = {}
    for name in names:

        def build(version: int, name: str = name) -> Any:
            return DescribeConfigsRequest(
                resources=[
                    DescribeConfigsRequest.DescribeConfigsResource(
                        resource_type=resource_type, resource_name=name, configuration_keys=None
                    )
                ],
                include_synonyms=synonyms,
            )

        body = await client.retrying(
            functools.partial(
                client.request, _node_for(resource_type, name), ApiKey.DESCRIBE_CONFIGS, build
            )
        )
        (r,) = body.results
        if r.error_code != ErrorCode.NONE:
            out[name] = KafkaError(r.error_code, r.error_message)
            continue
        out[name] = [
            ConfigEntry(
                c.name,
                c.value,
                c.config_source,
                c.read_only,
                c.is_sensitive,
                tuple((s.name, s.value, s.source) for s in c.synonyms or ()),
            )
            for c in r.configs
        ]
    return out


#: IncrementalAlterConfigs operations
SET, DELETE = 0, 1


async def incremental_alter_configs(
    client: KafkaClient,
    resource_type: int,
    name: str,
    ops: Sequence[tuple[str, int, str | None]],
    validate_only: bool = False,
) -> None:
    """Apply (key, operation, value) edits to one resource; KafkaError when refused."""

    def build(version: int) -> Any:
        return IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=name,
                    configs=[
                        IncrementalAlterConfigsRequest.AlterableConfig(
                            name=key, config_operation=op, value=value
                        )
                        for key, op, value in ops
                    ],
                )
            ],
            validate_only=validate_only,
        )

    node = _node_for(resource_type, name)
    body = await client.retrying(
        lambda: client.request(node, ApiKey.INCREMENTAL_ALTER_CONFIGS, build)
    )
    (r,) = body.responses
    if r.error_code != ErrorCode.NONE:
        raise KafkaError(r.error_code, r.error_message)


@dataclass(frozen=True)
class LogDirPartition:
    """One partition in a log directory: its size on disk and how far its log end is below
    the high watermark."""

    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirInfo:
    """A broker's log directory; ``error`` is set (and no partitions) when it is offline."""

    path: str
    error: KafkaError | None
    partitions: tuple[LogDirPartition, ...]


async def describe_log_dirs(
    client: KafkaClient, broker_id: int, topics: Mapping[str, Sequence[int]] | None = None
) -> list[LogDirInfo]:
    """Broker ``broker_id``'s log directories, with the partitions of ``topics`` (topic ->
    partitions; None: every partition) that each holds."""

    def build(version: int) -> Any:
        wanted = (
            None
            if topics is None
            else [
                DescribeLogDirsRequest.DescribableLogDirTopic(topic=t, partitions=list(ps))
                for t, ps in topics.items()
            ]
        )
        return DescribeLogDirsRequest(topics=wanted)

    body = await client.retrying(lambda: client.request(broker_id, ApiKey.DESCRIBE_LOG_DIRS, build))
    return [
        LogDirInfo(
            r.log_dir,
            None if r.error_code == ErrorCode.NONE else KafkaError(r.error_code),
            tuple(
                LogDirPartition(
                    t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key
                )
                for t in r.topics
                for p in t.partitions
            ),
        )
        for r in body.results
    ]


@dataclass(frozen=True)
class OngoingReassignment:
    """A partition being reassigned: its replica set now, and the replicas being added
    and removed (the target is ``replicas`` less ``removing``)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def _top_level(body: Any) -> None:
    if body.error_code != ErrorCode.NONE:
        raise KafkaError(body.error_code, body.error_message)


async def alter_partition_reassignments(
    client: KafkaClient,
    targets: Mapping[TopicPartition, Sequence[int] | None],
    *,
    timeout_ms: int = 30_000,
) -> dict[TopicPartition, KafkaError | None]:
    """Reassign each partition to its target replicas (None cancels its reassignment);
    per partition, None when it started, else the broker's error."""

    def build(version: int) -> Any:
        by_topic: dict[str, list[AlterPartitionReassignmentsRequest.ReassignablePartition]] = {}
        for tp, replicas in targets.items():
            by_topic.setdefault(tp.topic, []).append(
                AlterPartitionReassignmentsRequest.ReassignablePartition(
                    partition_index=tp.partition,
                    replicas=None if replicas is None else list(replicas),
                )
            )
        return AlterPartitionReassignmentsRequest(
            timeout_ms=timeout_ms,
            topics=[
                AlterPartitionReassignmentsRequest.ReassignableTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
        )

    body = await _to_controller(
        client, ApiKey.ALTER_PARTITION_REASSIGNMENTS, build, timeout_ms / 1000 + 30
    )
    _top_level(body)
    return {
        TopicPartition(t.name, p.partition_index): (
            None if p.error_code == ErrorCode.NONE else KafkaError(p.error_code, p.error_message)
        )
        for t in body.responses
        for p in t.partitions
    }


async def list_partition_reassignments(
    client: KafkaClient,
    partitions: Sequence[TopicPartition] | None = None,
    *,
    timeout_ms: int = 30_000,
) -> dict[TopicPartition, OngoingReassignment]:
    """The reassignments in progress among ``partitions`` (None: all of them)."""

    def build(version: int) -> Any:
        if partitions is None:
            return ListPartitionReassignmentsRequest(timeout_ms=timeout_ms, topics=None)
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return ListPartitionReassignmentsRequest(
            timeout_ms=timeout_ms,
            topics=[
                ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                    name=t, partition_indexes=ps
                )
                for t, ps in by_topic.items()
            ],
        )

    body = await _to_controller(
        client, ApiKey.LIST_PARTITION_REASSIGNMENTS, build, timeout_ms / 1000 + 30
    )
    _top_level(body)
    return {
        TopicPartition(t.name, p.partition_index): OngoingReassignment(
            tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
        )
        for t in body.topics
        for p in t.partitions
    }


@dataclass(frozen=True)
class DeleteRecordsResult:
    """One partition's answer to DeleteRecords: its low watermark (the log start every
    live replica has reached) when error_code is NONE."""

    topic: str
    partition: int
    low_watermark: int
    error_code: int = ErrorCode.NONE


#: DeleteRecords errors retried after a metadata refresh: the leader moved
_LEADERSHIP_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE})


async def delete_records(
    client: KafkaClient,
    offsets: Mapping[TopicPartition, int],
    *,
    timeout_ms: int = 30_000,
) -> dict[TopicPartition, DeleteRecordsResult]:
    """Delete the records below ``offsets[tp]`` (-1: the high watermark) in each
    partition: one DeleteRecords request per leader, each waiting up to ``timeout_ms``
    for the replicas. A partition whose leader moved is sent again to the new one after
    a metadata refresh, within the client's retries and operation timeout; a partition
    of an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION."""
    pending = dict(offsets)
    results: dict[TopicPartition, DeleteRecordsResult] = {}
    #: why a pending partition is not done yet (its answer if the retries run out)
    last_error = dict.fromkeys(offsets, int(ErrorCode.LEADER_NOT_AVAILABLE))
    deadline_ms = client.clock.monotonic_ms() + int(client.config.operation_timeout_s * 1000)
    attempt = 0

    def final(tp: TopicPartition, error_code: int, low_watermark: int = -1) -> None:
        results[tp] = DeleteRecordsResult(tp.topic, tp.partition, low_watermark, error_code)
        pending.pop(tp, None)

    async def send(leader: int, tps: list[TopicPartition]) -> None:
        by_topic: dict[str, list[DeleteRecordsRequest.DeleteRecordsPartition]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(
                DeleteRecordsRequest.DeleteRecordsPartition(
                    partition_index=tp.partition, offset=pending[tp]
                )
            )
        body = DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequest.DeleteRecordsTopic(name=t, partitions=ps)
                for t, ps in by_topic.items()
            ],
            timeout_ms=timeout_ms,
        )
        try:
            response = await client.request(
                leader, ApiKey.DELETE_RECORDS, body, timeout_s=timeout_ms / 1000 + 30
            )
        except ClientError as exc:
            if not exc.retriable:
                raise
            for tp in tps:  # they stay pending
                last_error[tp] = getattr(exc, "error_code", ErrorCode.REQUEST_TIMED_OUT)
            return
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if tp not in pending:
                    continue
                if p.error_code in _LEADERSHIP_ERRORS:
                    last_error[tp] = p.error_code
                else:
                    final(tp, p.error_code, p.low_watermark)

    await client.refresh_metadata(sorted({tp.topic for tp in offsets}))
    while True:
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in list(pending):
            topic = client.view.topics.get(tp.topic)
            if topic is None or tp.partition not in topic.partitions:
                final(tp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            leader = client.view.leader(tp.topic, tp.partition)
            if leader >= 0:
                by_leader.setdefault(leader, []).append(tp)
        await asyncio.gather(*(send(leader, tps) for leader, tps in by_leader.items()))
        attempt += 1
        remaining_ms = deadline_ms - client.clock.monotonic_ms()
        if not pending or attempt > client.config.retries or remaining_ms <= 0:
            break
        backoff_s = min(client.config.retry_backoff_s * 2 ** (attempt - 1), 1.0)
        await asyncio.sleep(min(backoff_s, remaining_ms / 1000))
        await client.refresh_metadata(sorted({tp.topic for tp in pending}))
    for tp in list(pending):
        final(tp, last_error[tp])
    return results
