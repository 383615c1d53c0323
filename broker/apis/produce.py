"""Produce (0): append each partition's record batch as leader; answer per acks.

Versions 0-2 carry message sets of magic 0/1 (librdkafka also probes compression
support against v0, so v0 stays advertised): each partition's set is converted to one
v2 batch before anything else (Kafka's up-conversion; the records converted and the time
it took are counted, as Kafka's ProduceMessageConversionsPerSec and
MessageConversionsTimeMs). From v3 each partition holds exactly one batch of magic 2.
The handler checks each partition's records once, at the request's version
(:mod:`broker.produce_records` has the rules, the zstd-from-v7 rule among them), and
hands the ReplicaManager the checked batches with their parsed headers; a partition's
refusal is answered after its leader and ISR checks, so the client sees the errors in
Kafka's order.

Transactional batches are accepted only once transactions are switched on
(``minikafka.transactions.enable``, broker.txn): the log then follows each producer's open
transaction (:mod:`storage.transactions`). Until then a request with a transactional batch
(the bit read from the headers just checked, whatever else is wrong with the batch) is
refused whole with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers a transactional
id it may not use.

What the client gets back:

- acks=0: nothing at all, whatever happened (the handler returns None);
- acks=1: the response once the leader appended;
- acks=all (-1): the response once every appended partition's high watermark passed
  its records, or at ``timeout_ms`` (REQUEST_TIMED_OUT for those still waiting). The
  handler then returns a Future, so no handler task waits with it.

With the authorizer on (``broker.auth``), as Kafka's KafkaApis: a request with a
transactional batch needs WRITE on its transactional id (else the whole request answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and each topic WRITE (its partitions answer
TOPIC_AUTHORIZATION_FAILED without being appended; the others are appended).

A response decided while the handler runs (acks=1, a refusal, an acks=all produce with
nothing to wait for) is returned as it is: a Future is made only for a produce that waits.
"""

from __future__ import annotations

import asyncio
import time

from broker.apis.request import ApiRequest
from broker.apis.services import ReplicaAccess
from broker.delayed.produce import ProducePartitionResult
from broker.partition_core import PartitionError
from broker.produce_records import (
    V2_ONLY_PRODUCE_VERSION,
    ProducedRecords,
    RefusedRecords,
    check_old_produce_records,
    check_produce_records,
)
from broker.txn import transactions_enabled
from broker.txn.verification import VERIFICATION_KEY, Producer
from protocol import ErrorCode, Response, make_response
from protocol.acls import AclOperation, ResourceType
from protocol.codec import received_records
from protocol.messages import ProduceRequest, ProduceResponse, RequestHeader
from protocol.records.batch import TRANSACTIONAL_MASK
from protocol.values import TopicPartition
from storage import StorageError

_RecordError = ProduceResponse.BatchIndexAndErrorMessage
WRITE = AclOperation.WRITE


def build_response(
    request_header: RequestHeader,
    body: ProduceRequest,
    results: dict[TopicPartition, ProducePartitionResult],
) -> Response:
    """Topics and partitions in request order, each with its result."""
    topics = []
    for topic in body.topic_data:
        partitions = []
        for part in topic.partition_data:
            r = results[TopicPartition(topic.name, part.index)]
            partitions.append(
                ProduceResponse.PartitionProduceResponse(
                    index=part.index,
                    error_code=r.error_code,
                    base_offset=r.base_offset,
                    log_append_time_ms=r.log_append_time_ms,
                    log_start_offset=r.log_start_offset,
                    error_message=r.error_message if r.error_code else None,
                    record_errors=[
                        _RecordError(batch_index=i, batch_index_error_message=why)
                        for i, why in r.record_errors
                    ],
                )
            )
        topics.append(
            ProduceResponse.TopicProduceResponse(name=topic.name, partition_responses=partitions)
        )
    return make_response(request_header, ProduceResponse(responses=topics, throttle_time_ms=0))


def _all_failed(
    body: ProduceRequest, error_code: int
) -> dict[TopicPartition, ProducePartitionResult]:
    return {
        TopicPartition(topic.name, part.index): ProducePartitionResult(error_code)
        for topic in body.topic_data
        for part in topic.partition_data
    }


async def handle(
    ctx: ReplicaAccess, request: ApiRequest[ProduceRequest]
) -> Response | asyncio.Future[Response] | None:
    header, body = request.header, request.body
    acks = body.acks
    # Each partition's records are checked once, here, at the request's version (the
    # zstd rule is a wire rule); the headers read serve the transactional gate too.
    version = header.api_version
    entries: dict[TopicPartition, ProducedRecords] = {}
    transactional = False
    converted = (
        _converted_entries(ctx, body, version) if version < V2_ONLY_PRODUCE_VERSION else None
    )
    for topic in body.topic_data:
        name = topic.name
        for part in topic.partition_data:
            tp = TopicPartition(name, part.index)
            if converted is None:
                checked = check_produce_records(received_records(part.records), version)
            else:
                checked = converted[tp]
            entries[tp] = checked
            if isinstance(checked, RefusedRecords):
                transactional = transactional or checked.transactional
            elif checked.batches[0][1].attributes & TRANSACTIONAL_MASK:
                transactional = True
    if transactional and not transactions_enabled(ctx.config):
        refused = _all_failed(body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return None if acks == 0 else build_response(header, body, refused)
    denied: dict[TopicPartition, ProducePartitionResult] = {}
    access = ctx.broker.access
    if access.enabled:
        tx_id = body.transactional_id if version >= 3 else None
        if transactional and not (
            tx_id is not None
            and access.authorize(request, WRITE, ResourceType.TRANSACTIONAL_ID, tx_id)
        ):
            refused = _all_failed(body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            return None if acks == 0 else build_response(header, body, refused)
        writable = access.allowed(
            request, WRITE, ResourceType.TOPIC, [t.name for t in body.topic_data]
        )
        for tp in [tp for tp in entries if tp.topic not in writable]:
            del entries[tp]
            denied[tp] = ProducePartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if not entries:
            return None if acks == 0 else build_response(header, body, denied)
    unverified: dict[TopicPartition, ProducePartitionResult] = {}
    if transactional and body.transactional_id and ctx.config.get_bool(VERIFICATION_KEY):
        unverified = await _verify(ctx, body.transactional_id, entries)
        for tp in unverified:
            del entries[tp]
    answered: list[dict[TopicPartition, ProducePartitionResult]] = []
    future: asyncio.Future[Response] | None = None

    def on_done(results: dict[TopicPartition, ProducePartitionResult]) -> None:
        if denied:
            results = {**results, **denied}
        if unverified:
            results = {**results, **unverified}
        if future is None:
            answered.append(results)
        elif not future.done():  # the connection may have gone (future cancelled)
            future.set_result(build_response(header, body, results))

    ctx.replica_manager.append_records(
        entries,
        required_acks=acks,
        timeout_ms=body.timeout_ms,
        on_done=on_done,
    )
    if acks == 0:
        return None  # appended (or refused) already: acks 0 never waits; no response
    if answered:
        return build_response(header, body, answered[0])
    future = ctx.event_loop.create_future()
    return future


async def _verify(
    ctx: ReplicaAccess, transactional_id: str, entries: dict[TopicPartition, ProducedRecords]
) -> dict[TopicPartition, ProducePartitionResult]:
    """KIP-890 (broker.txn.verification): the partitions whose transactional batch would
    open a transaction the coordinator does not list them in, with their errors. A
    partition not led here is left to the append, which answers why."""
    asks: dict[TopicPartition, Producer] = {}
    for tp, checked in entries.items():
        if isinstance(checked, RefusedRecords):
            continue
        first = checked.batches[0][1]
        if not first.attributes & TRANSACTIONAL_MASK:
            continue
        partition = ctx.replica_manager.partition_for(tp)
        if partition is None:
            continue
        try:
            if partition.in_transaction(first.producer_id, first.producer_epoch):
                continue
        except (PartitionError, StorageError):
            continue
        asks[tp] = Producer(transactional_id, first.producer_id, first.producer_epoch)
    if not asks:
        return {}
    errors = await ctx.verifier.verify(asks)
    return {
        tp: ProducePartitionResult(error, error_message="verifying the transaction's partitions")
        for tp, error in errors.items()
        if error != ErrorCode.NONE
    }


def _converted_entries(
    ctx: ReplicaAccess, body: ProduceRequest, version: int
) -> dict[TopicPartition, ProducedRecords]:
    """Every partition of a Produce v0-2, its message set up-converted (counted per
    topic, the time per request)."""
    start = time.perf_counter()
    entries: dict[TopicPartition, ProducedRecords] = {}
    converted_any = False
    for topic in body.topic_data:
        for part in topic.partition_data:
            result = check_old_produce_records(received_records(part.records), version)
            entries[TopicPartition(topic.name, part.index)] = result.records
            if result.converted:
                converted_any = True
                ctx.metrics.produce_message_conversions.labels(topic=topic.name).inc(
                    result.converted
                )
    if converted_any:
        elapsed = time.perf_counter() - start
        ctx.metrics.message_conversions_time.labels(api="Produce").observe(elapsed)
    return entries
