"""DescribeCluster (60), v0-1: cluster id, controller and live brokers, from the cache.

Admin clients (Kafka's AdminClient.describeCluster) use it instead of Metadata when the
broker offers it. v1's ``endpoint_type`` asks for brokers (1) or KRaft controllers (2); a
ZooKeeper-mode broker serves only brokers (MISMATCHED_ENDPOINT_TYPE otherwise).
"""

from __future__ import annotations

from broker.apis.metadata import CLUSTER_OPERATIONS
from broker.apis.request import ListenerRequest
from broker.apis.services import ClusterAdmin
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, ResourceType
from protocol.messages import DescribeClusterRequest, DescribeClusterResponse
from protocol.values import AUTHORIZED_OPERATIONS_OMITTED

ENDPOINT_TYPE_BROKER = 1


async def handle(ctx: ClusterAdmin, request: ListenerRequest[DescribeClusterRequest]) -> Response:
    body = request.body
    endpoint_type = body.endpoint_type
    if endpoint_type != ENDPOINT_TYPE_BROKER:
        response = DescribeClusterResponse(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="The broker only handles broker endpoints (endpoint type 1).",
            endpoint_type=endpoint_type,
            cluster_id=ctx.cluster_id,
        )
        return make_response(request.header, response)
    cache = ctx.metadata_cache
    listener = request.listener.upper()
    brokers = []
    for broker in cache.alive_brokers():
        endpoint = broker.endpoint(listener)
        if endpoint is not None:
            brokers.append(
                DescribeClusterResponse.DescribeClusterBroker(
                    broker_id=broker.id, host=endpoint[0], port=endpoint[1], rack=broker.rack
                )
            )
    controller_id = cache.controller_id
    response = DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=ENDPOINT_TYPE_BROKER,
        cluster_id=ctx.cluster_id,
        controller_id=-1 if controller_id is None else controller_id,
        brokers=brokers,
        cluster_authorized_operations=(
            AUTHORIZED_OPERATIONS_OMITTED
            if not body.include_cluster_authorized_operations
            else ctx.broker.access.authorized_operations(
                request, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS
            )
            if ctx.broker.access.enabled
            else 0
        ),
    )
    return make_response(request.header, response)
