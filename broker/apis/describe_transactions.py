"""DescribeTransactions (65), v0: the state of transactional ids coordinated here.

Per id: its state's name (``Ongoing``, ``PrepareCommit``, ...), timeout, start time,
producer id and epoch and the partitions of its transaction; NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS for an id that is not (yet) here, TRANSACTIONAL_ID_NOT_FOUND
for one this coordinator does not know. TRANSACTIONAL_ID_AUTHORIZATION_FAILED while
transactions are off.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import Transactions
from broker.txn import transactions_enabled
from broker.txn.model import TxnMetadata
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import DescribeTransactionsRequest, DescribeTransactionsResponse

Resp = DescribeTransactionsResponse


def _state(tid: str, error: int, meta: TxnMetadata | None) -> Resp.TransactionState:
    if meta is None:
        return Resp.TransactionState(
            error_code=error,
            transactional_id=tid,
            transaction_state="",
            transaction_timeout_ms=0,
            transaction_start_time_ms=-1,
            producer_id=-1,
            producer_epoch=-1,
            topics=[],
        )
    topics: dict[str, list[int]] = {}
    for tp in sorted(meta.partitions):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return Resp.TransactionState(
        error_code=ErrorCode.NONE,
        transactional_id=tid,
        transaction_state=meta.state.display,
        transaction_timeout_ms=meta.timeout_ms,
        transaction_start_time_ms=meta.start_ms,
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        topics=[Resp.TopicData(topic=t, partitions=p) for t, p in topics.items()],
    )


async def handle(ctx: Transactions, request: ApiRequest[DescribeTransactionsRequest]) -> Response:
    header, body = request.header, request.body
    enabled = transactions_enabled(ctx.config)
    access = ctx.broker.access
    states = []
    for tid in body.transactional_ids:
        if not enabled or not access.authorize(
            request, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid
        ):
            states.append(_state(tid, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None))
            continue
        error, meta = ctx.coordinator.describe(tid)
        states.append(_state(tid, error, meta))
    return make_response(header, Resp(throttle_time_ms=0, transaction_states=states))
