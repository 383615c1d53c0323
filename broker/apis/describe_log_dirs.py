"""DescribeLogDirs (35), v0-4: this broker's log directories and the partitions in each.

``topics`` null asks for every partition; otherwise only the named partitions that this
broker holds are listed (a partition it does not hold is left out, as Kafka does). Each
partition reports its size on disk (the sum of its segment files) and its offset lag:
how far its log end is below the high watermark, which is 0 for a leader (Kafka reports
the lag of a future replica against the current one; minikafka has no future replicas
yet, so ``is_future_key`` is always false). A directory that failed to load answers
KAFKA_STORAGE_ERROR with no partitions. v4 adds the volume's total and usable bytes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping

from broker.apis.request import ApiRequest
from broker.apis.services import ClusterAdmin
from protocol import ErrorCode, Response, make_response
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from protocol.values import TopicPartition
from storage import Log

Result = DescribeLogDirsResponse.DescribeLogDirsResult
Topic = DescribeLogDirsResponse.DescribeLogDirsTopic
Partition = DescribeLogDirsResponse.DescribeLogDirsPartition

#: total_bytes / usable_bytes when the volume could not be asked (Kafka's UNKNOWN_VOLUME_BYTES)
UNKNOWN_VOLUME_BYTES = -1


def wanted_partitions(
    topics: list[DescribeLogDirsRequest.DescribableLogDirTopic] | None,
) -> set[TopicPartition] | None:
    """The partitions asked for; None means all of them."""
    if topics is None:
        return None
    return {TopicPartition(t.topic, p) for t in topics for p in t.partitions}


def describe_dir(
    logs: Iterable[tuple[TopicPartition, Log]], wanted: set[TopicPartition] | None
) -> list[Topic]:
    """The asked-for partitions of one directory's logs, grouped by topic, in name order."""
    by_topic: dict[str, list[Partition]] = {}
    for tp, lg in sorted(logs):
        if wanted is not None and tp not in wanted:
            continue
        by_topic.setdefault(tp.topic, []).append(
            Partition(
                partition_index=tp.partition,
                partition_size=lg.size_in_bytes,
                offset_lag=max(lg.high_watermark - lg.log_end_offset, 0),
                is_future_key=False,
            )
        )
    return [Topic(name=name, partitions=parts) for name, parts in by_topic.items()]


def volume_bytes(directory: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``directory`` (blocking)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return UNKNOWN_VOLUME_BYTES, UNKNOWN_VOLUME_BYTES
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def describe_dirs(
    log_dirs: Iterable[str],
    offline: Mapping[str, str],
    logs: Iterable[tuple[TopicPartition, Log]],
    wanted: set[TopicPartition] | None,
) -> list[Result]:
    """One result per log directory (blocking: it asks each volume for its size)."""
    in_dir: dict[str, list[tuple[TopicPartition, Log]]] = {}
    for tp, lg in logs:
        in_dir.setdefault(os.path.dirname(lg.directory), []).append((tp, lg))
    results = []
    for d in log_dirs:
        if d in offline:
            results.append(Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=d, topics=[]))
            continue
        total, usable = volume_bytes(d)
        results.append(
            Result(
                error_code=ErrorCode.NONE,
                log_dir=d,
                topics=describe_dir(in_dir.get(d, []), wanted),
                total_bytes=total,
                usable_bytes=usable,
            )
        )
    return results


async def handle(ctx: ClusterAdmin, request: ApiRequest[DescribeLogDirsRequest]) -> Response:
    # as Kafka: DESCRIBE on the cluster, else nothing listed (and, v3+, the error)
    if not ctx.broker.access.authorize(
        request, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME
    ):
        refused = DescribeLogDirsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[]
        )
        return make_response(request.header, refused)
    manager = ctx.log_manager
    results = await asyncio.to_thread(
        describe_dirs,
        manager.log_dirs,
        dict(manager.offline_dirs),
        manager.logs_items(),
        wanted_partitions(request.body.topics),
    )
    return make_response(
        request.header, DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=results)
    )
