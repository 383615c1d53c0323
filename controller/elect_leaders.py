"""Leader elections an operator asks for (ElectLeaders, API 43): which partitions get one.

Two types, as Kafka's ``ElectionType``: PREFERRED (0) moves leadership back to the first
assigned replica when it is alive and in the ISR; UNCLEAN (1) elects a leader for a
partition that has none, from the ISR if a member is alive, else from any live replica
(the topic's ``unclean.leader.election.enable`` does not matter: asking is the consent).

``triage`` (pure) answers at once what needs no election: unknown partitions
(UNKNOWN_TOPIC_OR_PARTITION), topics being deleted (INVALID_TOPIC_EXCEPTION), partitions
without replicas (INVALID_REPLICA_ASSIGNMENT) and partitions already led as asked
(ELECTION_NOT_NEEDED: the preferred replica leads; for unclean, a live leader). The
controller runs the election for the rest; one that finds nobody eligible is
PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE (``failed``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from controller.context import ControllerContext
from protocol.errors import ErrorCode
from protocol.values import NO_LEADER, TopicPartition


class ElectionType(enum.IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class ElectionOutcome:
    """One partition's answer: NONE with the ``leader`` elected, or an error."""

    error_code: int
    message: str | None = None
    leader: int = NO_LEADER


def triage(
    ctx: ControllerContext, partitions: Iterable[TopicPartition], election_type: ElectionType
) -> tuple[list[TopicPartition], dict[TopicPartition, ElectionOutcome]]:
    """Split the requested partitions into those to elect (in order, without repeats) and
    those answered now."""
    to_elect: list[TopicPartition] = []
    answered: dict[TopicPartition, ElectionOutcome] = {}
    for tp in dict.fromkeys(partitions):
        outcome = _answer_now(ctx, tp, election_type)
        if outcome is None:
            to_elect.append(tp)
        else:
            answered[tp] = outcome
    return to_elect, answered


def _answer_now(
    ctx: ControllerContext, tp: TopicPartition, election_type: ElectionType
) -> ElectionOutcome | None:
    if tp.partition not in ctx.assignments.get(tp.topic, {}):
        return ElectionOutcome(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
        )
    if ctx.is_topic_queued_for_deletion(tp.topic):
        return ElectionOutcome(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
    replicas = ctx.partition_replicas(tp)
    if not replicas:
        return ElectionOutcome(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The partition has no replicas"
        )
    st = ctx.leadership.get(tp)
    leader = NO_LEADER if st is None else st.leader_and_isr.leader
    if election_type is ElectionType.PREFERRED and leader == replicas[0]:
        return ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED, leader=leader)
    if election_type is ElectionType.UNCLEAN and leader != NO_LEADER and leader in ctx.live_brokers:
        return ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED, leader=leader)
    return None


def failed(election_type: ElectionType, why: str) -> ElectionOutcome:
    """The answer for a partition whose election found no eligible leader."""
    if election_type is ElectionType.PREFERRED:
        return ElectionOutcome(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, why)
    return ElectionOutcome(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, why)
