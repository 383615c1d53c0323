"""UpdateMetadata (6), v0-7: the controller's view of brokers and leaders, for the cache.

After fencing (broker epoch, controller epoch as the ReplicaManager last accepted it),
the MetadataCache applies the body and the request's controller epoch becomes the newest
seen; then the create-topics purgatory is poked for each
topic the update mentioned, since a DelayedCreateTopics may now see all its leaders,
and the ReplicaManager told that the live brokers may have changed (a DeleteRecords
waiting on a follower whose broker died may now complete). Partitions the update deleted
take their topic's overrides and the groups' commits of them (the group store writes the
tombstones) with them.
"""

from __future__ import annotations

import logging

from broker.apis.epochs import is_stale_broker_epoch
from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.delayed.create_topics import topic_key
from protocol import ErrorCode, Response, make_response
from protocol.messages import UpdateMetadataRequest, UpdateMetadataResponse

log = logging.getLogger(__name__)


async def handle(ctx: ReplicaAccess, request: ApiRequest[UpdateMetadataRequest]) -> Response:
    body = request.body
    if is_stale_broker_epoch(ctx, body.broker_epoch):
        ours = ctx.controller.broker_epoch
        log.info("UpdateMetadata: broker epoch %s, ours %s", body.broker_epoch, ours)
        return make_response(
            request.header, UpdateMetadataResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
        )
    rm = ctx.replica_manager
    if rm.is_stale_controller_epoch(body.controller_epoch):
        log.warning(
            "UpdateMetadata from controller %s with stale epoch %s (seen %s)",
            body.controller_id,
            body.controller_epoch,
            rm.controller_epoch,
        )
        return make_response(
            request.header, UpdateMetadataResponse(error_code=ErrorCode.STALE_CONTROLLER_EPOCH)
        )
    touched, deleted = ctx.metadata_cache.update_metadata(body)
    log.info(
        "UpdateMetadata from controller %d epoch %d: %d topics",
        body.controller_id,
        body.controller_epoch,
        len(touched),
    )
    # as Kafka's maybeUpdateMetadataCache: the newest controller epoch seen, so that a
    # zombie controller's later requests are refused even before any LeaderAndIsr
    rm.controller_epoch = body.controller_epoch
    if deleted:
        log.info("metadata: %d partitions deleted", len(deleted))
    # a topic re-created under the same name must not inherit the old overrides: forget
    # them with the topic (also when this broker's cache never had it)
    for topic in touched:
        if not ctx.metadata_cache.contains_topic(topic):
            ctx.topic_configs.forget(topic)
    if deleted:  # commits go with their partitions
        ctx.group_store.on_partitions_deleted(deleted)
    purgatory = ctx.topic_purgatory
    for topic in touched:
        purgatory.check_and_complete(topic_key(topic))
    rm.live_brokers_changed()  # a dead follower no longer holds a DeleteRecords back
    return make_response(request.header, UpdateMetadataResponse(error_code=ErrorCode.NONE))
