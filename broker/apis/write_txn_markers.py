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
Markers sit on the path of every transaction (the coordinator writes its completion only
once all are answered), so the handler appends them itself, in request order, and the
answer is made in the callback of the last replication wait: no task or future per
marker, each of which would cost a turn of the event loop.

A marker on a ``__consumer_offsets`` partition also ends the transaction's pending
offsets there (TxnOffsetCommit): committed offsets take effect, aborted ones are
dropped (``GroupMetadataManager.complete_txn_offsets``), once the marker is written.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable

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
_MISSING = ProducePartitionResult(ErrorCode.UNKNOWN_SERVER_ERROR)


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


MarkerErrors = dict[TopicPartition, int]


def append_marker(
    ctx: ReplicaAccess, marker: _Marker, on_done: Callable[[MarkerErrors], None]
) -> None:
    """Append one marker to each of its partitions, now; ``on_done`` gets the error code
    of each once the appends are replicated (or failed, or timed out) -- possibly before
    this returns. A ``__consumer_offsets`` partition's pending transactional offsets are
    ended first (committed or dropped) where its marker was written."""
    partitions = marker_partitions(marker)
    if not partitions:
        on_done({})
        return
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
    answered = False

    def done(results: dict[TopicPartition, ProducePartitionResult]) -> None:
        nonlocal answered
        if answered:
            return
        answered = True
        errors = {tp: results.get(tp, _MISSING).error_code for tp in partitions}
        for tp, error in errors.items():
            if tp.topic == OFFSETS_TOPIC and error == ErrorCode.NONE:
                ctx.group_store.complete_txn_offsets(
                    tp.partition, marker.producer_id, marker.transaction_result
                )
        on_done(errors)

    ctx.replica_manager.append_records(
        entries,
        required_acks=-1,
        timeout_ms=ctx.config.get_int("request.timeout.ms"),
        on_done=done,
        internal_topics_allowed=True,
        from_coordinator=True,
    )


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


async def handle(
    ctx: ReplicaAccess, request: ApiRequest[WriteTxnMarkersRequest]
) -> Response | asyncio.Future[Response]:
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
    response: asyncio.Future[Response] = ctx.event_loop.create_future()

    def answer(body: WriteTxnMarkersResponse) -> None:
        if not response.done():  # the connection may have gone (future cancelled)
            response.set_result(make_response(request.header, body))

    write_markers(ctx, markers, answer)
    return response


def write_markers(
    ctx: ReplicaAccess, markers: list[_Marker], on_done: Callable[[WriteTxnMarkersResponse], None]
) -> None:
    """Append every marker of a request (no authorization: the caller's), ``on_done``
    given the answer once all are replicated, failed or timed out (possibly before this
    returns). The handler's work, and this broker's own coordinator's in-process path
    to the partitions it leads (``local_marker_writer``)."""
    # Every marker is appended here, in request order, before this returns; the answer
    # is made in the callback of the last replication wait to end (no task, no future
    # per marker: each would cost the answer a turn of the loop).
    if not markers:
        on_done(WriteTxnMarkersResponse(markers=[]))
        return
    written: list[MarkerErrors | None] = [None] * len(markers)
    left = len(markers)

    def one_done(i: int, errors: MarkerErrors) -> None:
        nonlocal left
        written[i] = errors
        left -= 1
        if left == 0:
            on_done(
                WriteTxnMarkersResponse(
                    markers=[
                        marker_result(m, e or {}) for m, e in zip(markers, written, strict=True)
                    ]
                )
            )

    for i, marker in enumerate(markers):
        append_marker(ctx, marker, functools.partial(one_done, i))


def local_marker_writer(
    ctx: ReplicaAccess,
) -> Callable[[WriteTxnMarkersRequest], Awaitable[WriteTxnMarkersResponse]]:
    """WriteTxnMarkers to this broker without a connection: what the coordinator's
    marker sender uses for the partitions led here (broker.txn.sender)."""

    async def write(request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        answer: asyncio.Future[WriteTxnMarkersResponse] = ctx.event_loop.create_future()

        def done(body: WriteTxnMarkersResponse) -> None:
            if not answer.done():
                answer.set_result(body)

        write_markers(ctx, request.markers, done)
        return await answer

    return write
