"""Fetch (1): record regions from the leader's log, sent with sendfile (v4-12).

Versions 0-3 read the legacy message formats: their answer is down-converted
(:mod:`broker.apis.fetch_conversion`); the read before it is the same as here.

Incremental fetch sessions (KIP-227) are kept by ``broker.fetch_session``: one call per
request (``FetchSessionCache.new_context``) turns the request's session id, epoch,
partitions and forgotten topics into the partitions to read and the session id to
answer, or a session error answered with no partitions (FETCH_SESSION_ID_NOT_FOUND,
INVALID_FETCH_SESSION_EPOCH); the context then picks the partitions the answer carries
(an incremental one only those with news). Clients that send session id 0 and epoch -1
(librdkafka, aiokafka, every version before 7) are served sessionless, as before.

A follower's session reads only the partitions that may have news
(``broker.fetch_session_news``): after each answer the ReplicaManager tells which of the
partitions read must be read again next round (``settle_follower_reads``), and the
session's clock moves to the time of the request once it was read, which counts as a
fetch at the log end for every settled partition left unread.

Each partition's ``records`` is the storage FileRegion itself (or empty bytes when there
is nothing, never null): ``encode_response_parts`` emits it as its own piece and the
network sends it with ``os.sendfile``, so record bytes never enter Python.

Follower fetches (replica_id >= 0) read to the log end instead of the high watermark,
and each one tells the leader where that follower is: the ReplicaManager records it, and
ISR membership and the high watermark follow (see broker.isr). The response carries the
leader's high watermark and log start offset, which the follower adopts. A replica id
that is not an assigned replica of the partition is NOT_LEADER_OR_FOLLOWER.

Who may send them: as Kafka, with the authorizer on (``broker.auth``) a follower fetch
needs CLUSTER_ACTION on the cluster, and any other is answered TOPIC_AUTHORIZATION_FAILED
on every partition. Without an authorizer, when inter.broker.listener.name is configured,
arriving on that listener stands for the permission, so a follower fetch on any other
listener (a client forging a replica id) is answered the same way and never reads above
the high watermark or moves an ISR; without that setting every listener serves them.
A consumer needs READ on each topic: the partitions of the others are answered
TOPIC_AUTHORIZATION_FAILED (without being read), the rest are fetched.

When fewer than ``min_bytes`` are readable and ``max_wait_ms`` > 0 the read waits in a
DelayedFetch; the handler returns a Future and frees its handler task.

A consumer with isolation_level 1 (read_committed) reads below the last stable offset
and gets the aborted transactions of the region returned, as (producer_id, first_offset)
pairs, so it can drop their records; read_uncommitted answers null there. Followers
always read uncommitted.

A follower's answer without errors, the leader's most frequent response while it
replicates, is encoded here by the lean writer (``protocol.fetch_writer``, the same bytes
as the generic encoder) and handed to the network as ``ResponseParts``; building message
objects for it and walking them in the generic encoder cost as much as the read. Every
other answer is a Response, so the per-API error metric still sees each error code.
"""

from __future__ import annotations

import asyncio

from broker.apis import fetch_conversion
from broker.apis.request import Answer, ListenerRequest
from broker.apis.services import ReplicaAccess
from broker.delayed.fetch import (
    FetchInfos,
    FetchParams,
    FetchPartitionResult,
    FetchResults,
    PartitionFetchInfo,
)
from broker.fetch_session import FetchContext
from broker.network.codec import ResponseParts
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.fetch_writer import PartitionAnswer, fetch_response_parts
from protocol.messages import FetchRequest, FetchResponse, RequestHeader
from protocol.values import READ_COMMITTED, TopicPartition

_aborted = FetchResponse.AbortedTransaction
CLUSTER_ACTION = AclOperation.CLUSTER_ACTION


def fetch_params(ctx: ReplicaAccess, body: FetchRequest) -> FetchParams:
    """The request-wide limits, capped by the broker's (fetch.max.bytes for consumers,
    replica.fetch.response.max.bytes for followers)."""
    key = "replica.fetch.response.max.bytes" if body.replica_id >= 0 else "fetch.max.bytes"
    return FetchParams(
        replica_id=body.replica_id,
        max_wait_ms=body.max_wait_ms,
        min_bytes=body.min_bytes,
        max_bytes=min(body.max_bytes, ctx.config.get_int(key)),
        isolation_level=body.isolation_level,
    )


def partition_infos(body: FetchRequest) -> list[tuple[TopicPartition, PartitionFetchInfo]]:
    return [
        (
            TopicPartition(topic.topic, p.partition),
            PartitionFetchInfo(
                p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch, p.log_start_offset
            ),
        )
        for topic in body.topics
        for p in topic.partitions
    ]


def forgotten_partitions(body: FetchRequest) -> list[TopicPartition]:
    return [
        TopicPartition(topic.topic, p)
        for topic in body.forgotten_topics_data
        for p in topic.partitions
    ]


def session_context(ctx: ReplicaAccess, body: FetchRequest) -> FetchContext:
    """The request's fetch session bookkeeping (``broker.fetch_session``)."""
    return ctx.fetch_sessions.new_context(
        session_id=body.session_id,
        epoch=body.session_epoch,
        requested=partition_infos(body),
        forgotten=forgotten_partitions(body),
        privileged=body.replica_id >= 0,
        now_ms=ctx.replica_manager.clock.monotonic_ms(),
    )


def _no_info(_tp: TopicPartition) -> PartitionFetchInfo | None:
    return None


def follower_fetch_allowed(ctx: ReplicaAccess, listener: str) -> bool:
    """Whether a follower fetch may arrive on ``listener`` (see the module doc)."""
    configured = ctx.config.get_str("inter.broker.listener.name")
    return not configured or listener == configured or listener.upper() == configured.upper()


def refused_response(body: FetchRequest, error_code: int) -> FetchResponse:
    """Every partition of the request answered ``error_code``, with no records."""
    topics = [
        FetchResponse.FetchableTopicResponse(
            topic=topic.topic,
            partitions=[
                FetchResponse.PartitionData(
                    partition_index=p.partition,
                    error_code=error_code,
                    high_watermark=-1,
                    last_stable_offset=-1,
                    log_start_offset=-1,
                    aborted_transactions=None,
                    preferred_read_replica=-1,
                    records=b"",
                )
                for p in topic.partitions
            ],
        )
        for topic in body.topics
    ]
    return FetchResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics
    )


def build_response(
    request_header: RequestHeader, params: FetchParams, results: FetchResults, session_id: int
) -> Response:
    """Partitions grouped by topic in the order topics first appear in the request."""
    committed = params.isolation_level == READ_COMMITTED
    by_topic: dict[str, list[FetchResponse.PartitionData]] = {}
    for tp, r in results:
        aborted = (
            [
                _aborted(producer_id=t.producer_id, first_offset=t.first_offset)
                for t in r.aborted_transactions or ()
            ]
            if committed
            else None
        )
        by_topic.setdefault(tp.topic, []).append(
            FetchResponse.PartitionData(
                partition_index=tp.partition,
                error_code=r.error_code,
                high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable_offset,
                log_start_offset=r.log_start_offset,
                aborted_transactions=aborted,
                preferred_read_replica=-1,
                records=r.records if r.records is not None else b"",
            )
        )
    topics = [
        FetchResponse.FetchableTopicResponse(topic=name, partitions=parts)
        for name, parts in by_topic.items()
    ]
    body = FetchResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=session_id, responses=topics
    )
    return make_response(request_header, body)


def follower_response_parts(
    request_header: RequestHeader, params: FetchParams, results: FetchResults, session_id: int
) -> ResponseParts | None:
    """A follower's answer encoded by the lean writer, grouped as build_response groups
    it; None when a partition carries an error (build_response answers those)."""
    by_topic: dict[str, list[PartitionAnswer]] = {}
    for tp, r in results:
        if r.error_code:
            return None
        answer = (
            tp.partition,
            0,
            r.high_watermark,
            r.last_stable_offset,
            r.log_start_offset,
            r.records,
        )
        answers = by_topic.get(tp.topic)
        if answers is None:
            by_topic[tp.topic] = [answer]
        else:
            answers.append(answer)
    parts = fetch_response_parts(
        request_header.correlation_id,
        request_header.api_version,
        list(by_topic.items()),
        params.isolation_level == READ_COMMITTED,
        session_id,
    )
    return ResponseParts(parts)


async def handle(
    ctx: ReplicaAccess, request: ListenerRequest[FetchRequest]
) -> Answer | asyncio.Future[Answer]:
    header, body = request.header, request.body
    from_follower = body.replica_id >= 0
    (ctx.metrics.follower_fetches if from_follower else ctx.metrics.consumer_fetches).inc()
    access = ctx.broker.access
    if from_follower and not (
        access.authorize(request, CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
        if access.enabled
        else follower_fetch_allowed(ctx, request.listener)
    ):
        refused = refused_response(body, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        return make_response(header, refused)
    session = session_context(ctx, body)
    if session.error_code:
        refused = FetchResponse(
            throttle_time_ms=0, error_code=session.error_code, session_id=0, responses=[]
        )
        return make_response(header, refused)
    session_id = session.session_id
    params = fetch_params(ctx, body)
    # a session's partitions: those of this request and, when incremental, the earlier ones
    infos = session.infos
    denied: FetchResults = []
    if access.enabled and not from_follower:
        topics = {tp.topic for tp, _ in infos}
        readable = access.allowed(request, AclOperation.READ, ResourceType.TOPIC, topics)
        denied = [
            (tp, FetchPartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            for tp, _ in infos
            if tp.topic not in readable
        ]
        infos = [(tp, info) for tp, info in infos if tp.topic in readable]
    if header.api_version < fetch_conversion.FIRST_V2_FETCH_VERSION:
        return fetch_conversion.answer(ctx, header, params, infos, denied)
    # Most fetches are answered during fetch_messages (data was there, or an error): the
    # answer is returned as it is. A future is made only for a fetch that waits.
    answered: list[Answer] = []
    future: asyncio.Future[Answer] | None = None

    news = session.news if from_follower else None
    rm = ctx.replica_manager
    if news is not None and session.forgotten:
        rm.unlink_followers(body.replica_id, session.forgotten)

    def on_done(read: FetchResults) -> None:
        if news is not None:
            again = rm.settle_follower_reads(body.replica_id, read, news.clock)
            news.settled((tp for tp, _ in read), again)
        results = session.answer(read)
        if denied:  # refusals are news: always answered
            results = denied + results
        parts = (
            follower_response_parts(header, params, results, session_id) if from_follower else None
        )
        answer = build_response(header, params, results, session_id) if parts is None else parts
        if future is None:
            answered.append(answer)
        elif not future.done():  # the connection may have gone (future cancelled)
            future.set_result(answer)

    if news is None:
        rm.fetch_messages(params, infos, on_done)
    else:
        session_infos = session.infos
        info_for = session.session.info_for if session.session is not None else _no_info
        now_ms = rm.clock.monotonic_ms()

        def with_marked(take: bool) -> FetchInfos:
            return news.with_marked(session_infos, info_for, take=take)

        def fresh() -> FetchInfos:
            return news.take_fresh(info_for)

        rm.fetch_messages(params, infos, on_done, (news.key, with_marked, fresh))
        # every settled partition left unread counts as fetched now (see the module doc)
        if now_ms > news.clock.last_fetch_ms:
            news.clock.last_fetch_ms = now_ms
    if answered:
        return answered[0]
    future = ctx.event_loop.create_future()
    return future
