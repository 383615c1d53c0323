"""AddPartitionsToTxn (24), v0-4: partitions join a producer's transaction.

v0-3 (clients): one transaction, ``v3_and_below_*`` fields; the answer lists each
partition's error (broker.txn.coordinator: UNKNOWN_TOPIC_OR_PARTITION for partitions the
cluster lacks with OPERATION_NOT_ATTEMPTED for the rest, else the add's one outcome; an add
arriving while the producer's previous transaction completes is answered once it has, see
broker.txn.coordinator).
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).

v4 (brokers, KIP-890): a batch of transactions; with ``verify_only`` a partition leader
asks whether each partition is already in the producer's open transaction (nothing is
written); without it, the partitions are added as for a client. The top-level error is
NONE; each transaction's partitions carry their own. While transactions are off
(``minikafka.transactions.enable``) every partition is answered
TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.apis.request import ApiRequest
from broker.apis.services import Transactions
from broker.txn import transactions_enabled
from broker.txn.rules import fencing_error
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from protocol.values import TopicPartition

#: the first version told PRODUCER_FENCED; the first batched (broker) version
FENCED_VERSION = 2
BATCHED_VERSION = 4

Req = AddPartitionsToTxnRequest
Resp = AddPartitionsToTxnResponse


def _partitions(topics: list[Req.AddPartitionsToTxnTopic]) -> list[TopicPartition]:
    return [TopicPartition(t.name, p) for t in topics for p in t.partitions]


def _results(
    errors: Mapping[TopicPartition, int], version: int
) -> list[Resp.AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[Resp.AddPartitionsToTxnPartitionResult]] = {}
    for tp, error in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            Resp.AddPartitionsToTxnPartitionResult(
                partition_index=tp.partition,
                partition_error_code=fencing_error(error, version, FENCED_VERSION),
            )
        )
    return [
        Resp.AddPartitionsToTxnTopicResult(name=name, results_by_partition=parts)
        for name, parts in by_topic.items()
    ]


async def _one(
    ctx: Transactions,
    enabled: bool,
    tid: str,
    producer_id: int,
    epoch: int,
    partitions: list[TopicPartition],
    verify_only: bool,
    request: object = None,
) -> dict[TopicPartition, int]:
    """``request``: the client's (v0-3), whose WRITE on the transactional id and on each
    topic is checked as Kafka does (None: v4, a broker's, checked as a whole)."""
    if not enabled:
        return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    access = ctx.broker.access
    if request is not None and access.enabled:
        if not access.authorize(request, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
            return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        writable = access.allowed(
            request, AclOperation.WRITE, ResourceType.TOPIC, {tp.topic for tp in partitions}
        )
        if any(tp.topic not in writable for tp in partitions):
            return {
                tp: ErrorCode.OPERATION_NOT_ATTEMPTED
                if tp.topic in writable
                else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                for tp in partitions
            }
    coordinator = ctx.coordinator
    if verify_only:
        return coordinator.verify_partitions(tid, producer_id, epoch, partitions)
    return await coordinator.add_partitions(tid, producer_id, epoch, partitions)


async def handle(ctx: Transactions, request: ApiRequest[AddPartitionsToTxnRequest]) -> Response:
    header, body = request.header, request.body
    version = header.api_version
    enabled = transactions_enabled(ctx.config)
    if version >= BATCHED_VERSION:
        if not ctx.broker.access.authorize(
            request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
        ):
            refused = Resp(
                throttle_time_ms=0,
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                results_by_transaction=[],
            )
            return make_response(header, refused)
        results = []
        for txn in body.transactions:
            errors = await _one(
                ctx,
                enabled,
                txn.transactional_id,
                txn.producer_id,
                txn.producer_epoch,
                _partitions(txn.topics),
                txn.verify_only,
            )
            results.append(
                Resp.AddPartitionsToTxnResult(
                    transactional_id=txn.transactional_id, topic_results=_results(errors, version)
                )
            )
        response = Resp(throttle_time_ms=0, error_code=0, results_by_transaction=results)
        return make_response(header, response)
    errors = await _one(
        ctx,
        enabled,
        body.v3_and_below_transactional_id,
        body.v3_and_below_producer_id,
        body.v3_and_below_producer_epoch,
        _partitions(body.v3_and_below_topics),
        False,
        request,
    )
    response = Resp(throttle_time_ms=0, results_by_topic_v3_and_below=_results(errors, version))
    return make_response(header, response)
