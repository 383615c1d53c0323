"""ElectLeaders (43), v0-2: an operator asks for preferred or unclean leader elections.

Only the active controller serves it; elsewhere every listed partition, and the top
level (v1+), answer NOT_CONTROLLER, and clients ask the controller they find next. v0 has
no election type: it means preferred. ``topic_partitions`` null asks for every partition;
the answer then leaves out those that needed no election (ELECTION_NOT_NEEDED), as
Kafka's does. The decisions and per-partition errors are the controller's
(``KafkaController.elect_leaders``, controller.elect_leaders).

Waiting: the handler waits, up to ``timeout_ms``, for the controller's event to finish:
the new leaderships are then written to ZooKeeper and the LeaderAndIsr and
UpdateMetadata requests queued to the brokers. (Kafka's DelayedElectLeader waits further,
until the broker's own metadata cache shows the new leaders; here the brokers learn of
them a moment after the answer.) Partitions the controller has not answered in time get
REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import asyncio
import logging

from broker.apis.request import ApiRequest
from broker.apis.services import ClusterAdmin
from controller.elect_leaders import ElectionOutcome, ElectionType
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import ElectLeadersRequest, ElectLeadersResponse
from protocol.values import TopicPartition

log = logging.getLogger(__name__)

Result = ElectLeadersResponse.ReplicaElectionResult
PartitionResult = ElectLeadersResponse.PartitionResult


def requested_partitions(body: ElectLeadersRequest) -> list[TopicPartition] | None:
    """The partitions listed, in order, without repeats (None: all of them)."""
    if body.topic_partitions is None:
        return None
    listed = (TopicPartition(t.topic, p) for t in body.topic_partitions for p in t.partitions)
    return list(dict.fromkeys(listed))


def build_response(
    error_code: int, outcomes: dict[TopicPartition, ElectionOutcome], *, all_partitions: bool
) -> ElectLeadersResponse:
    """Results grouped by topic, in request order; for an all-partitions request, only
    the partitions that were elected or failed."""
    by_topic: dict[str, list[PartitionResult]] = {}
    for tp, outcome in outcomes.items():
        if all_partitions and outcome.error_code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        by_topic.setdefault(tp.topic, []).append(
            PartitionResult(
                partition_id=tp.partition,
                error_code=outcome.error_code,
                error_message=outcome.message,
            )
        )
    return ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=error_code,
        replica_election_results=[
            Result(topic=topic, partition_result=results) for topic, results in by_topic.items()
        ],
    )


async def handle(ctx: ClusterAdmin, request: ApiRequest[ElectLeadersRequest]) -> Response:
    body = request.body
    partitions = requested_partitions(body)
    every = partitions or []

    def answer_all(code: int, message: str | None = None) -> Response:
        outcomes = {tp: ElectionOutcome(code, message) for tp in every}
        return make_response(
            request.header, build_response(code, outcomes, all_partitions=partitions is None)
        )

    # as Kafka: ALTER on the cluster, else every partition CLUSTER_AUTHORIZATION_FAILED
    if not ctx.broker.access.authorize(
        request, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        return answer_all(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    election_type = body.election_type if request.header.api_version >= 1 else 0
    if election_type not in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        return answer_all(ErrorCode.INVALID_REQUEST, f"unknown election type {election_type}")
    controller = ctx.controller.active()
    if controller is None:
        return answer_all(ErrorCode.NOT_CONTROLLER)
    timeout_s = max(0, body.timeout_ms) / 1000
    try:
        outcomes = await asyncio.wait_for(
            controller.elect_leaders(partitions, ElectionType(election_type)), timeout_s
        )
    except TimeoutError:
        log.info("ElectLeaders: no answer from the controller in %sms", body.timeout_ms)
        return answer_all(ErrorCode.REQUEST_TIMED_OUT)
    if outcomes is None:  # stopped being the controller meanwhile
        return answer_all(ErrorCode.NOT_CONTROLLER)
    ordered = {tp: outcomes[tp] for tp in (partitions or sorted(outcomes)) if tp in outcomes}
    return make_response(
        request.header, build_response(ErrorCode.NONE, ordered, all_partitions=partitions is None)
    )
