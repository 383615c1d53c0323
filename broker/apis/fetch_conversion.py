"""Fetch v0-3: the leader's read, answered down-converted to the magic the version reads.

Fetch v0-1 read messages of magic 0, v2-3 of magic 1; RecordBatch v2 came with Fetch v4.
The log holds v2 batches only, so every partition with data in such a fetch is converted,
as Kafka 3.x converts whenever the version is 3 or lower. The read is the one every fetch
makes (the same byte limits, the same DelayedFetch and purgatory); only the answer
differs, and only here: the v4+ path keeps its regions for sendfile and never reaches
this module.

Per partition, once the read is done (Kafka's order):

- ``message.downconversion.enable`` false for the topic (broker key
  ``log.message.downconversion.enable``, default true): UNSUPPORTED_VERSION, no records,
  whatever the read found;
- otherwise its region is converted (:mod:`broker.down_conversion`: chunked reads,
  output bounded by the region's length, the first batch whole; control batches left
  out); a zstd batch first in line answers UNSUPPORTED_COMPRESSION_TYPE, a batch that
  cannot be read CORRUPT_MESSAGE, a file that cannot be read NOT_LEADER_OR_FOLLOWER
  (KAFKA_STORAGE_ERROR, which Kafka maps so for clients below Fetch v6).

The conversions run in a worker thread (``run_blocking``), one job per response; the
handler returns a Future at once, so neither a handler task nor the event loop waits for
them. Records converted count per topic (Kafka's FetchMessageConversionsPerSec), and the
time per request (MessageConversionsTimeMs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from broker.apis.request import Answer
from broker.apis.services import ReplicaAccess
from broker.delayed.fetch import FetchInfos, FetchParams, FetchPartitionResult, FetchResults
from broker.down_conversion import Converted, convert_region
from protocol import ErrorCode, make_response
from protocol.messages import FetchResponse, RequestHeader
from protocol.records.batch import InvalidBatch
from protocol.values import TopicPartition
from storage.errors import StorageError

#: The first Fetch version that reads RecordBatch v2 (below it, the log is converted).
FIRST_V2_FETCH_VERSION = 4

#: The conversions under way: held here so that no task is collected before it answers.
_RUNNING: set[asyncio.Task[None]] = set()


def magic_for(api_version: int) -> int:
    """The message format a Fetch version reads: magic 0 for v0-1, magic 1 for v2-3."""
    return 0 if api_version <= 1 else 1


def answer(
    ctx: ReplicaAccess,
    header: RequestHeader,
    params: FetchParams,
    infos: FetchInfos,
    denied: FetchResults,
) -> asyncio.Future[Answer]:
    """Read as every fetch reads; then convert and answer (the Future's result).
    ``denied``: the partitions refused before reading (authorization), answered first."""
    loop = ctx.event_loop
    future: asyncio.Future[Answer] = loop.create_future()
    offsets = {tp: info.fetch_offset for tp, info in infos}

    def on_done(results: FetchResults) -> None:
        results = denied + results
        task = loop.create_task(_convert_and_answer(ctx, header, offsets, results, future))
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)

    ctx.replica_manager.fetch_messages(params, infos, on_done)
    return future


#: one partition's outcome: its read, and the converted records or the error to answer
_Outcome = tuple[TopicPartition, FetchPartitionResult, "Converted | int | None"]


async def _convert_and_answer(
    ctx: ReplicaAccess,
    header: RequestHeader,
    offsets: dict[TopicPartition, int],
    results: FetchResults,
    future: asyncio.Future[Answer],
) -> None:
    try:
        magic = magic_for(header.api_version)
        jobs: list[tuple[int, TopicPartition, FetchPartitionResult]] = []
        outcomes: list[_Outcome] = []
        for tp, result in results:
            if not _conversion_enabled(ctx, tp):
                outcomes.append((tp, result, ErrorCode.UNSUPPORTED_VERSION))
                continue
            if result.records is not None and not result.error_code:
                jobs.append((len(outcomes), tp, result))
            outcomes.append((tp, result, None))

        def convert_all() -> list[Converted | int]:
            return [_convert_one(r, magic, offsets[tp]) for _, tp, r in jobs]

        if jobs:
            converted = await ctx.replica_manager.run_blocking(convert_all)
            seconds = 0.0
            for (index, tp, result), outcome in zip(jobs, converted, strict=True):
                outcomes[index] = (tp, result, outcome)
                if isinstance(outcome, Converted):
                    seconds += outcome.seconds
                    if outcome.records:
                        cell = ctx.metrics.fetch_message_conversions.labels(topic=tp.topic)
                        cell.inc(outcome.records)
            ctx.metrics.message_conversions_time.labels(api="Fetch").observe(seconds)
        response = _response(header, outcomes)
    except Exception as exc:  # the connection's error path answers or closes
        if not future.done():
            future.set_exception(exc)
        return
    if not future.done():  # the connection may have gone (future cancelled)
        future.set_result(response)


def _conversion_enabled(ctx: ReplicaAccess, tp: TopicPartition) -> bool:
    log = ctx.replica_manager.log_manager.get_log(tp)
    return log is None or log.config.message_downconversion_enable


def _convert_one(result: FetchPartitionResult, magic: int, fetch_offset: int) -> Converted | int:
    """One region converted, or the error code its partition answers (worker thread)."""
    assert result.records is not None
    try:
        return convert_region(result.records, magic, fetch_offset)
    except InvalidBatch as exc:
        return exc.error_code
    except StorageError:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER


def _response(header: RequestHeader, outcomes: Sequence[_Outcome]) -> Answer:
    """Partitions grouped by topic in the order topics first appear in the request."""
    by_topic: dict[str, list[FetchResponse.PartitionData]] = {}
    for tp, r, outcome in outcomes:
        error, records = r.error_code, b""
        hw, lso, start = r.high_watermark, r.last_stable_offset, r.log_start_offset
        if isinstance(outcome, Converted):
            records = outcome.records_bytes
        elif isinstance(outcome, int):
            error, hw, lso, start = outcome, -1, -1, -1
        by_topic.setdefault(tp.topic, []).append(
            FetchResponse.PartitionData(
                partition_index=tp.partition,
                error_code=error,
                high_watermark=hw,
                last_stable_offset=lso,
                log_start_offset=start,
                aborted_transactions=None,
                preferred_read_replica=-1,
                records=records,
            )
        )
    topics = [
        FetchResponse.FetchableTopicResponse(topic=name, partitions=parts)
        for name, parts in by_topic.items()
    ]
    body = FetchResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics
    )
    return make_response(header, body)
