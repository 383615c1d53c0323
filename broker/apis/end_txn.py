"""EndTxn (26), v0-3: commit or abort a producer's transaction.

Answered once PrepareCommit / PrepareAbort is written (broker.txn.coordinator); the
markers follow. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588);
TRANSACTIONAL_ID_AUTHORIZATION_FAILED while transactions are off.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import Transactions
from broker.txn import transactions_enabled
from broker.txn.rules import fencing_error
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import EndTxnRequest, EndTxnResponse

FENCED_VERSION = 2


async def handle(ctx: Transactions, request: ApiRequest[EndTxnRequest]) -> Response:
    header, body = request.header, request.body
    access = ctx.broker.access
    if not transactions_enabled(ctx.config) or not access.authorize(
        request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        error: int = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = await ctx.coordinator.end_txn(
            body.transactional_id, body.producer_id, body.producer_epoch, body.committed
        )
    error = fencing_error(error, header.api_version, FENCED_VERSION)
    return make_response(header, EndTxnResponse(throttle_time_ms=0, error_code=error))
