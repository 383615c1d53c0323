"""FindCoordinator (10), v0-4: which broker coordinates a group or a transactional id.

A group's coordinator is the leader of its ``__consumer_offsets`` partition
(broker.group.partitioner), answered as that broker's endpoint on the listener the request
came in on (as Metadata lists brokers). v0-3 ask for one key; v4 for a batch
(``coordinator_keys``), each answered in ``coordinators`` with its own error.

Per key:

- key type 0 (group): the leader of the group's partition; COORDINATOR_NOT_AVAILABLE
  while the offsets topic does not exist (its creation is started: see
  broker.group.offsets_topic), or the partition has no live leader;
- key type 1 (transaction): the leader of the id's ``__transaction_state`` partition
  (broker.txn.topic), with the same errors as a group's while the topic is being created
  or the partition has no live leader; while transactions are off
  (``minikafka.transactions.enable``), TRANSACTIONAL_ID_AUTHORIZATION_FAILED, on which
  clients give up at once rather than retrying;
- any other key type: INVALID_REQUEST.

A success carries the error message Kafka writes for it, its error's name ``NONE`` (Kafka
sets every answer's message from its error, and the message of no error is its name), in
v1-3's top-level field and in each of v4's coordinators alike.

The answer does not wait for the coordinator to have loaded the group: the client's next
request to it gets COORDINATOR_LOAD_IN_PROGRESS until then, as in Kafka.
"""

from __future__ import annotations

from broker.admin.topics import OFFSETS_TOPIC
from broker.apis.request import ListenerRequest
from broker.apis.services import GroupAccess
from broker.txn import transactions_enabled
from broker.txn.topic import TRANSACTION_TOPIC
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1

#: the first version that batches keys
BATCHED_VERSION = 4
#: the error message of a success, as Kafka writes it
SUCCESS_MESSAGE = ErrorCode.NONE.name

Coordinator = FindCoordinatorResponse.Coordinator


def no_node(key: str, error: int, message: str) -> Coordinator:
    """An answer without a coordinator (Kafka's Node.noNode: id -1, no host, port -1)."""
    return Coordinator(
        key=key, node_id=-1, host="", port=-1, error_code=error, error_message=message
    )


def authorized_find(
    ctx: GroupAccess, request: object, key: str, key_type: int, listener: str
) -> Coordinator:
    """As Kafka: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the
    transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) before anything else."""
    access = ctx.broker.access
    if key_type == GROUP_KEY_TYPE and not access.authorize(
        request, AclOperation.DESCRIBE, ResourceType.GROUP, key
    ):
        return no_node(key, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    if key_type == TRANSACTION_KEY_TYPE and not access.authorize(
        request, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        return no_node(
            key,
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "Transactional Id authorization failed.",
        )
    return find(ctx, key, key_type, listener)


def find(ctx: GroupAccess, key: str, key_type: int, listener: str) -> Coordinator:
    """The coordinator of one key, or why there is none."""
    cache = ctx.metadata_cache
    if key_type == TRANSACTION_KEY_TYPE:
        if not transactions_enabled(ctx.config):
            return no_node(
                key,
                ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "transactions are not supported by this broker",
            )
        topic = TRANSACTION_TOPIC
        txns = ctx.transactions
        if not cache.contains_topic(topic):
            txns.request_topic()
            return no_node(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{topic} is being created")
        partition = txns.store.partition_for(key)
    elif key_type == GROUP_KEY_TYPE:
        topic = OFFSETS_TOPIC
        store = ctx.store
        if not cache.contains_topic(topic):
            store.request_offsets_topic()
            return no_node(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{topic} is being created")
        partition = store.partition_for(key)
    else:
        return no_node(key, ErrorCode.INVALID_REQUEST, f"unknown coordinator key type {key_type}")
    leader = cache.leader(topic, partition)
    endpoint = cache.alive_endpoint(leader, listener) if leader is not None else None
    if leader is None or endpoint is None:
        return no_node(
            key,
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"{topic}-{partition} has no leader on listener {listener}",
        )
    host, port = endpoint
    return Coordinator(
        key=key,
        node_id=leader,
        host=host,
        port=port,
        error_code=ErrorCode.NONE,
        error_message=SUCCESS_MESSAGE,
    )


async def handle(ctx: GroupAccess, request: ListenerRequest[FindCoordinatorRequest]) -> Response:
    body = request.body
    listener = request.listener.upper()
    if request.header.api_version >= BATCHED_VERSION:
        coordinators = [
            authorized_find(ctx, request, key, body.key_type, listener)
            for key in body.coordinator_keys
        ]
        return make_response(
            request.header, FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
        )
    found = authorized_find(ctx, request, body.key, body.key_type, listener)
    response = FindCoordinatorResponse(
        throttle_time_ms=0,
        error_code=found.error_code,
        error_message=found.error_message,
        node_id=found.node_id,
        host=found.host,
        port=found.port,
    )
    return make_response(request.header, response)
