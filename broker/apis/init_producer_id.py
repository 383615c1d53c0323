"""InitProducerId (22), versions 0-4: a producer id for an idempotent or transactional producer.

Without a transactional id, Kafka's coordinator hands out a fresh producer id at epoch 0
on every call, including a KIP-360 call (v3+) that names the producer id and epoch it
had: for an idempotent producer a new id is the epoch bump, since no transaction state
has to be fenced. A request naming only one of the two is INVALID_REQUEST. Failing to
claim a block of ids (ZooKeeper away) answers COORDINATOR_NOT_AVAILABLE, which clients
retry.

With a transactional id, the transaction coordinator answers (broker.txn.coordinator:
epoch bumps, fencing, KIP-360 recovery, CONCURRENT_TRANSACTIONS while an open
transaction is aborted); PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4. While
transactions are off (``minikafka.transactions.enable``, broker.txn) a transactional id
gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients surface at once instead of
retrying.
"""

from __future__ import annotations

import logging

from broker.apis.request import ApiRequest
from broker.apis.services import ProducerIds
from broker.txn import transactions_enabled
from broker.txn.rules import fencing_error
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import InitProducerIdRequest, InitProducerIdResponse, RequestHeader
from protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

log = logging.getLogger(__name__)

#: the first version that is told PRODUCER_FENCED (KIP-588)
FENCED_VERSION = 4


def request_error(body: InitProducerIdRequest, transactions: bool = False) -> int:
    """The error a request gets before any id is handed out (pure). ``transactions``:
    whether this broker offers them."""
    if body.transactional_id is not None and not transactions:
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    given = (body.producer_id != NO_PRODUCER_ID, body.producer_epoch != NO_PRODUCER_EPOCH)
    if given[0] != given[1]:
        return ErrorCode.INVALID_REQUEST
    return ErrorCode.NONE


def _response(
    header: RequestHeader, error: int, producer_id: int = -1, epoch: int = -1
) -> Response:
    body = InitProducerIdResponse(
        throttle_time_ms=0, error_code=error, producer_id=producer_id, producer_epoch=epoch
    )
    return make_response(header, body)


async def handle(ctx: ProducerIds, request: ApiRequest[InitProducerIdRequest]) -> Response:
    header, body = request.header, request.body
    error = request_error(body, transactions_enabled(ctx.config))
    if error:
        return _response(header, error)
    access = ctx.broker.access
    if body.transactional_id is not None and not access.authorize(
        request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        return _response(header, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if (
        body.transactional_id is None
        and access.enabled
        and not access.authorize(
            request, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME, quiet=True
        )
        and not access.authorize_any(request, AclOperation.WRITE, ResourceType.TOPIC)
    ):
        # KIP-679: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
        access.authorize(request, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)
        return _response(header, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if body.transactional_id is not None:
        expected = None
        if body.producer_id != NO_PRODUCER_ID:
            expected = (body.producer_id, body.producer_epoch)
        result = await ctx.transactions.init_producer_id(
            body.transactional_id, body.transaction_timeout_ms, expected
        )
        error = fencing_error(result.error, header.api_version, FENCED_VERSION)
        return _response(header, error, result.producer_id, result.producer_epoch)
    try:
        producer_ids = ctx.manager
        producer_id = await producer_ids.generate_producer_id()
    except Exception as exc:  # any ZooKeeper failure: the client retries later
        log.warning("cannot hand out a producer id: %s", exc)
        return _response(header, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return _response(header, ErrorCode.NONE, producer_id, 0)
