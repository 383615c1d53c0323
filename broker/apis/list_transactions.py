"""ListTransactions (66), v0: the transactional ids coordinated by this broker.

Filtered by state names (those that name no state are echoed back in
``unknown_state_filters`` and match nothing) and by producer ids; empty filters match
all. COORDINATOR_LOAD_IN_PROGRESS while a partition of ``__transaction_state`` is
loading here (the list would be partial). Empty while transactions are off.
"""

from __future__ import annotations

from broker.apis.request import ApiRequest
from broker.apis.services import Transactions
from broker.txn import transactions_enabled
from broker.txn.states import TxnState
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.messages import ListTransactionsRequest, ListTransactionsResponse

Resp = ListTransactionsResponse


async def handle(ctx: Transactions, request: ApiRequest[ListTransactionsRequest]) -> Response:
    header, body = request.header, request.body
    states = [TxnState.from_display(name) for name in body.state_filters]
    unknown = [
        name for name, state in zip(body.state_filters, states, strict=True) if state is None
    ]
    known = [s for s in states if s is not None]
    listed: list[Resp.TransactionState] = []
    error: int = ErrorCode.NONE
    coordinator = ctx.coordinator
    if transactions_enabled(ctx.config) and not (unknown and not known):
        if coordinator.store.loading_partitions:
            error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        else:
            listed = [
                Resp.TransactionState(
                    transactional_id=m.transactional_id,
                    producer_id=m.producer_id,
                    transaction_state=m.state.display,
                )
                for m in coordinator.list(known, body.producer_id_filters)
            ]
    # as Kafka: only the transactional ids the request may describe are listed
    access = ctx.broker.access
    if access.enabled and listed:
        visible = access.allowed(
            request,
            AclOperation.DESCRIBE,
            ResourceType.TRANSACTIONAL_ID,
            [t.transactional_id for t in listed],
            quiet=True,
        )
        listed = [t for t in listed if t.transactional_id in visible]
    response = Resp(
        throttle_time_ms=0,
        error_code=error,
        unknown_state_filters=unknown,
        transaction_states=listed,
    )
    return make_response(header, response)
