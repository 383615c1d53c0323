"""InitProducerId (22), versions 0-4: a producer id for an idempotent producer.

Transactions are not offered: a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
which clients surface at once instead of retrying. Without one, Kafka's coordinator hands
out a fresh producer id at epoch 0 on every call, including a KIP-360 call (v3+) that
names the producer id and epoch it had: for an idempotent producer a new id is the epoch
bump, since no transaction state has to be fenced. A request naming only one of the two
is INVALID_REQUEST. Failing to claim a block of ids (ZooKeeper away) answers
COORDINATOR_NOT_AVAILABLE, which clients retry.
"""

from __future__ import annotations

import logging

from broker.apis.request import ApiRequest
from broker.apis.services import ProducerIds
from protocol import ErrorCode, Response, make_response
from protocol.messages import InitProducerIdRequest, InitProducerIdResponse, RequestHeader
from protocol.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

log = logging.getLogger(__name__)


def request_error(body: InitProducerIdRequest) -> int:
    """The error a request gets before any id is handed out (pure)."""
    if body.transactional_id is not None:
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
    error = request_error(body)
    if error:
        return _response(header, error)
    try:
        producer_ids = ctx.manager
        producer_id = await producer_ids.generate_producer_id()
    except Exception as exc:  # any ZooKeeper failure: the client retries later
        log.warning("cannot hand out a producer id: %s", exc)
        return _response(header, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return _response(header, ErrorCode.NONE, producer_id, 0)
