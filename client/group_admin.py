"""Consumer group administration: list, describe, read and rewrite committed offsets,
delete groups and offsets.

Every broker is the coordinator of some groups and knows only those: ListGroups is asked
of every broker and the answers merged; the other calls go to each group's coordinator
(:mod:`client.coordinator`), with its retries on NOT_COORDINATOR and the like.

- ``describe_groups``: DescribeGroups. A group the coordinator does not know is reported
  in state ``Dead`` with no members, as Kafka reports it. Members' assignments are
  decoded when the group speaks the consumer protocol.
- ``list_group_offsets`` / ``alter_group_offsets``: OffsetFetch / OffsetCommit. An
  alteration commits with generation -1 and no member id, as from outside the group; the
  coordinator accepts it only while the group has no members (UNKNOWN_MEMBER_ID
  otherwise), which is why ``consumer-groups --reset-offsets`` checks the state first.
- ``delete_groups``: DeleteGroups (GROUP_NOT_EMPTY while members remain).
- ``delete_offsets``: OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC for partitions of a topic
  an active member consumes).

Results are per group (and per partition): one failing group does not fail the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from client.assignors import (
    CONSUMER_PROTOCOL_TYPE,
    MemberAssignment,
    decode_assignment,
)
from client.client import KafkaClient
from client.cluster_view import BrokerNode
from client.coordinator import COORDINATOR_ERRORS, CoordinatorCache, check
from client.errors import KafkaError
from client.group import NO_GENERATION, commit_offsets, fetch_offsets
from protocol import ApiKey, ErrorCode, ProtocolError
from protocol.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
    OffsetDeleteRequest,
)
from protocol.values import TopicPartition

#: the state Kafka reports for a group it does not know
DEAD: Final = "Dead"
EMPTY: Final = "Empty"


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    #: "" from brokers answering ListGroups below v4 (they do not report states)
    state: str


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: MemberAssignment = field(default_factory=MemberAssignment)


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    #: the assignor chosen (for consumer groups), "" while none is
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: BrokerNode | None
    error_code: int = ErrorCode.NONE

    @property
    def is_active(self) -> bool:
        """Kafka's tool refuses to reset the offsets of a group unless it is Empty or
        Dead (no member could be consuming from them)."""
        return self.state not in (EMPTY, DEAD)


async def list_groups(client: KafkaClient, states: Sequence[str] = ()) -> dict[str, GroupListing]:
    """Every broker's groups (those in ``states`` only, when given), by group id."""
    await client.refresh_metadata(None)

    def body(version: int) -> Any:
        return ListGroupsRequest(states_filter=list(states), types_filter=[])

    async def ask(node: int) -> Any:
        answer = await client.retrying(lambda: client.request(node, ApiKey.LIST_GROUPS, body))
        check(answer.error_code, f"ListGroups on broker {node}")
        return answer

    answers = await asyncio.gather(*(ask(n) for n in sorted(client.view.brokers)))
    out: dict[str, GroupListing] = {}
    for answer in answers:
        for g in answer.groups:
            state = g.group_state or ""
            if states and state and state not in states:
                continue
            out[g.group_id] = GroupListing(g.group_id, g.protocol_type, state)
    return dict(sorted(out.items()))


def _member(m: Any, protocol_type: str) -> MemberDescription:
    assignment = MemberAssignment()
    if protocol_type == CONSUMER_PROTOCOL_TYPE and m.member_assignment:
        # another client's bytes we cannot read: the member is shown without partitions
        with contextlib.suppress(ProtocolError):
            assignment = decode_assignment(m.member_assignment)
    return MemberDescription(
        m.member_id, m.group_instance_id, m.client_id, m.client_host.lstrip("/"), assignment
    )


async def describe_groups(
    client: KafkaClient, group_ids: Sequence[str], coordinators: CoordinatorCache | None = None
) -> dict[str, GroupDescription]:
    coordinators = coordinators or CoordinatorCache(client)
    out: dict[str, GroupDescription] = {}
    for group_id in group_ids:

        def body(version: int, group_id: str = group_id) -> Any:
            return DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False)

        async def once(node: int, group_id: str = group_id) -> tuple[int, Any]:
            answer = await client.request(node, ApiKey.DESCRIBE_GROUPS, body)
            (g,) = answer.groups
            check(g.error_code if g.error_code in COORDINATOR_ERRORS else ErrorCode.NONE)
            return node, g

        node, g = await coordinators.call(group_id, once)
        out[group_id] = GroupDescription(
            group_id,
            g.group_state,
            g.protocol_type,
            g.protocol_data,
            tuple(_member(m, g.protocol_type) for m in g.members),
            client.view.brokers.get(node),
            g.error_code,
        )
    return out


async def list_group_offsets(
    client: KafkaClient,
    group_id: str,
    partitions: Sequence[TopicPartition] | None = None,
) -> dict[TopicPartition, int]:
    """The group's committed offsets (of ``partitions``; None: all it has)."""
    return await fetch_offsets(CoordinatorCache(client), group_id, partitions)


async def alter_group_offsets(
    client: KafkaClient, group_id: str, offsets: Mapping[TopicPartition, int]
) -> None:
    """Commit ``offsets`` for a group without members; KafkaError when refused."""
    await commit_offsets(
        CoordinatorCache(client), group_id, offsets, generation=NO_GENERATION, member_id=""
    )


async def delete_groups(client: KafkaClient, group_ids: Sequence[str]) -> dict[str, int]:
    """group id -> error code (NONE: deleted)."""
    coordinators = CoordinatorCache(client)
    out: dict[str, int] = {}
    for group_id in group_ids:

        def body(version: int, group_id: str = group_id) -> Any:
            return DeleteGroupsRequest(groups_names=[group_id])

        async def once(node: int) -> int:
            answer = await client.request(node, ApiKey.DELETE_GROUPS, body)
            (r,) = answer.results
            if r.error_code in COORDINATOR_ERRORS:
                raise KafkaError(r.error_code)
            return int(r.error_code)

        try:
            out[group_id] = await coordinators.call(group_id, once)
        except KafkaError as exc:
            out[group_id] = exc.error_code
    return out


async def delete_offsets(
    client: KafkaClient, group_id: str, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, int]:
    """Delete the group's committed offsets of ``partitions``: partition -> error code.
    A group-level refusal (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP...) raises KafkaError."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)

    def body(version: int) -> Any:
        return OffsetDeleteRequest(
            group_id=group_id,
            topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(
                    name=t,
                    partitions=[
                        OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p)
                        for p in ps
                    ],
                )
                for t, ps in by_topic.items()
            ],
        )

    async def once(node: int) -> dict[TopicPartition, int]:
        answer = await client.request(node, ApiKey.OFFSET_DELETE, body)
        check(answer.error_code, f"OffsetDelete {group_id}")
        return {
            TopicPartition(t.name, p.partition_index): int(p.error_code)
            for t in answer.topics
            for p in t.partitions
        }

    return await CoordinatorCache(client).call(group_id, once)
