"""WriteTxnMarkers (27), versions 0-1: a transaction's COMMIT or ABORT marker, appended.

The transaction coordinator sends it to each leader of the partitions a transaction
wrote to (and an admin client's abortTransaction sends it to one leader, on a client
listener). Each marker of the request names a producer (id and epoch), the result
(``transaction_result``: true commit, false abort), the coordinator's epoch and the
partitions. For each of those this broker leads, it appends one control batch::

    attributes   control | transactional, producer id and epoch of the marker,
                 base sequence -1 (markers carry none)
    one record   key   version int16 0 | type int16 (0 ABORT, 1 COMMIT)
                 value version int16 0 | coordinator_epoch int32

(:func:`marker_batch`; the record is :func:`protocol.records.control.control_record`).
The log checks it against the producer's state (``Log.append(from_coordinator=True)``):
an older producer epoch is INVALID_PRODUCER_EPOCH, an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED; a partition led elsewhere is NOT_LEADER_OR_FOLLOWER.
Markers are written with acks=all semantics, as Kafka writes them: a marker's answer
waits (in the produce purgatory) until its partitions' high watermarks passed it, or
``request.timeout.ms``. The answer lists every partition with its own error code.

A marker on a ``__consumer_offsets`` partition also ends the transaction's pending
offsets there (TxnOffsetCommit): committed offsets take effect, aborted ones are
dropped (``GroupMetadataManager.complete_txn_offsets``), once the marker is written.
"""

from __future__ import annotations

import asyncio

from broker.admin.topics import OFFSETS_TOPIC
from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.delayed.produce import ProducePartitionResult
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from protocol.records.builder import build_batch
from protocol.records.control import ControlType, control_record
from protocol.records.validation import validate_records
from protocol.values import TopicPartition

_Marker = WriteTxnMarkersRequest.WritableTxnMarker
_Result = WriteTxnMarkersResponse.WritableTxnMarkerResult
_TopicResult = WriteTxnMarkersResponse.WritableTxnMarkerTopicResult
_PartitionResult = WriteTxnMarkersResponse.WritableTxnMarkerPartitionResult


def marker_batch(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, now_ms: int
) -> bytearray:
    """The control batch of one marker (see the module doc)."""
    kind = ControlType.COMMIT if commit else ControlType.ABORT
    return build_batch(
        [control_record(kind, coordinator_epoch, now_ms)],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
    )


def marker_partitions(marker: _Marker) -> list[TopicPartition]:
    return [TopicPartition(t.name, p) for t in marker.topics for p in t.partition_indexes]


async def write_marker(ctx: ReplicaAccess, marker: _Marker) -> dict[TopicPartition, int]:
    """Append one marker to each of its partitions; the error code of each once the
    appends are replicated (or failed, or timed out)."""
    partitions = marker_partitions(marker)
    if not partitions:
        return {}
    batch = marker_batch(
        marker.producer_id,
        marker.producer_epoch,
        marker.transaction_result,
        marker.coordinator_epoch,
        ctx.clock.time_ms(),
    )
    # One batch, validated once (it is ours); each partition appends its own copy (the
    # log rewrites offsets and the leader epoch in place).
    checked = validate_records(batch, from_client=False)
    entries = {tp: checked._replace(buffer=bytearray(batch)) for tp in partitions}
    future: asyncio.Future[dict[TopicPartition, ProducePartitionResult]]
    future = ctx.event_loop.create_future()

    def done(results: dict[TopicPartition, ProducePartitionResult]) -> None:
        if not future.done():
            future.set_result(results)

    ctx.replica_manager.append_records(
        entries,
        required_acks=-1,
        timeout_ms=ctx.config.get_int("request.timeout.ms"),
        on_done=done,
        internal_topics_allowed=True,
        from_coordinator=True,
    )
    results = await future
    missing = ProducePartitionResult(ErrorCode.UNKNOWN_SERVER_ERROR)
    errors = {tp: results.get(tp, missing).error_code for tp in partitions}
    for tp, error in errors.items():
        if tp.topic == OFFSETS_TOPIC and error == ErrorCode.NONE:
            ctx.group_store.complete_txn_offsets(
                tp.partition, marker.producer_id, marker.transaction_result
            )
    return errors


def marker_result(marker: _Marker, errors: dict[TopicPartition, int]) -> _Result:
    return _Result(
        producer_id=marker.producer_id,
        topics=[
            _TopicResult(
                name=t.name,
                partitions=[
                    _PartitionResult(
                        partition_index=p, error_code=errors[TopicPartition(t.name, p)]
                    )
                    for p in t.partition_indexes
                ],
            )
            for t in marker.topics
        ],
    )


async def _answer(ctx: ReplicaAccess, request: ApiRequest[WriteTxnMarkersRequest]) -> Response:
    markers = request.body.markers
    if not ctx.broker.access.authorize(
        request, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        # as Kafka: only a broker (CLUSTER_ACTION) writes markers; every partition refused
        refused = [
            marker_result(
                m,
                {
                    TopicPartition(t.name, p): ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    for t in m.topics
                    for p in t.partition_indexes
                },
            )
            for m in markers
        ]
        return make_response(request.header, WriteTxnMarkersResponse(markers=refused))
    # Markers are appended in request order (each one's appends happen at once; only
    # the replication wait is concurrent).
    waits = [asyncio.ensure_future(write_marker(ctx, m)) for m in markers]
    written = await asyncio.gather(*waits)
    body = WriteTxnMarkersResponse(
        markers=[marker_result(m, errors) for m, errors in zip(markers, written, strict=True)]
    )
    return make_response(request.header, body)


async def handle(
    ctx: ReplicaAccess, request: ApiRequest[WriteTxnMarkersRequest]
) -> asyncio.Future[Response]:
    return asyncio.ensure_future(_answer(ctx, request))
