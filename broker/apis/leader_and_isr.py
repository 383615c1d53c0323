"""LeaderAndIsr (4), v0-5: the controller makes this broker leader or follower.

Thin: the ReplicaManager applies each partition state (and fences stale controller and
leader epochs, per partition; its disk work runs in a worker thread); this handler
checks the broker epoch, flattens the request's versions into partition states that
carry their topic name, and shapes the answer (v5+ groups errors by topic id, earlier
versions list them flat by name).
"""

from __future__ import annotations

import logging
import uuid

from broker.apis.epochs import is_stale_broker_epoch
from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.topic_overrides import load_topic_configs
from protocol import ErrorCode, Response, make_response
from protocol.messages import LeaderAndIsrRequest, LeaderAndIsrResponse

PartitionState = LeaderAndIsrRequest.LeaderAndIsrPartitionState

log = logging.getLogger(__name__)


def partition_states(
    body: LeaderAndIsrRequest,
) -> tuple[list[PartitionState], dict[str, uuid.UUID]]:
    """Every partition state with ``topic_name`` filled in, and the topic ids (v5+)."""
    states = list(body.ungrouped_partition_states)
    topic_ids: dict[str, uuid.UUID] = {}
    for topic in body.topic_states:
        if topic.topic_id.int != 0:  # zero: a version without topic ids
            topic_ids[topic.topic_name] = topic.topic_id
        for state in topic.partition_states:
            state.topic_name = topic.topic_name
            states.append(state)
    return states, topic_ids


async def handle(ctx: ReplicaAccess, request: ApiRequest[LeaderAndIsrRequest]) -> Response:
    body = request.body
    version = request.header.api_version
    states, topic_ids = partition_states(body)
    if is_stale_broker_epoch(ctx, body.broker_epoch):
        ours = ctx.controller.broker_epoch
        log.info("LeaderAndIsr for broker epoch %s, ours %s", body.broker_epoch, ours)
        return make_response(
            request.header, LeaderAndIsrResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        )
    rm = ctx.replica_manager
    if rm.is_stale_controller_epoch(body.controller_epoch):
        log.warning(
            "LeaderAndIsr from controller %s with stale epoch %s (seen %s)",
            body.controller_id,
            body.controller_epoch,
            rm.controller_epoch,
        )
        return make_response(
            request.header, LeaderAndIsrResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
        )
    # before the logs are made, so a log starts with its topic's overrides
    await load_topic_configs(ctx.zk, ctx.topic_configs, {s.topic_name for s in states})
    errors = await rm.become_leader_or_follower(
        body.controller_id, body.controller_epoch, states, topic_ids, body.live_leaders
    )
    response = LeaderAndIsrResponse(error_code=ErrorCode.NONE)
    if version >= 5:
        by_topic: dict[str, list[LeaderAndIsrResponse.LeaderAndIsrPartitionError]] = {}
        for (topic, partition), code in sorted(errors.items()):
            by_topic.setdefault(topic, []).append(
                LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                    partition_index=partition, error_code=code
                )
            )
        response.topics = [
            LeaderAndIsrResponse.LeaderAndIsrTopicError(
                topic_id=topic_ids.get(topic, uuid.UUID(int=0)), partition_errors=parts
            )
            for topic, parts in by_topic.items()
        ]
    else:
        response.partition_errors = [
            LeaderAndIsrResponse.LeaderAndIsrPartitionError(
                topic_name=topic, partition_index=partition, error_code=code
            )
            for (topic, partition), code in sorted(errors.items())
        ]
    return make_response(request.header, response)
