"""AddOffsetsToTxn (25), v0-3: a group's offsets partition joins a transaction.

The group's ``__consumer_offsets`` partition is added to the producer's transaction
(broker.txn.coordinator), so that the markers that end it also settle the offsets the
producer then commits with TxnOffsetCommit. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
before v2 (KIP-588); TRANSACTIONAL_ID_AUTHORIZATION_FAILED while transactions are off.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import Transactions
from broker.txn import transactions_enabled
from broker.txn.rules import fencing_error
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

FENCED_VERSION = 2


async def handle(ctx: Transactions, request: ApiRequest[AddOffsetsToTxnRequest]) -> Response:
    header, body = request.header, request.body
    access = ctx.broker.access
    if not transactions_enabled(ctx.config) or not access.authorize(
        request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        error: int = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not access.authorize(request, AclOperation.READ, ResourceType.GROUP, body.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        error = await ctx.coordinator.add_offsets(
            body.transactional_id, body.producer_id, body.producer_epoch, body.group_id
        )
    error = fencing_error(error, header.api_version, FENCED_VERSION)
    return make_response(header, AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=error))
