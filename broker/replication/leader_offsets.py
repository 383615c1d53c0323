"""A replica fetcher's ListOffsets to its leader: the leader's log end or log start.

A fetch answered OFFSET_OUT_OF_RANGE sends the fetcher to ask where the leader's log
ends and starts (Kafka's fetchOffsetAndTruncate), as replica ``broker_id`` (a follower
may see the leader's log end, beyond its high watermark) at the epoch it follows.
"""

from __future__ import annotations

from client.connection import Connection
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import ListOffsetsRequest
from protocol.values import TopicPartition


async def leader_offset(
    conn: Connection,
    tp: TopicPartition,
    *,
    broker_id: int,
    leader_epoch: int,
    timestamp: int,
    timeout_ms: int,
) -> int:
    """The leader's offset for ``timestamp`` (LATEST_TIMESTAMP: its log end,
    EARLIEST_TIMESTAMP: its log start); raises KafkaError with the partition's error."""
    partition = ListOffsetsRequest.ListOffsetsPartition(
        partition_index=tp.partition,
        current_leader_epoch=leader_epoch,
        timestamp=timestamp,
        max_num_offsets=1,
    )
    body = ListOffsetsRequest(
        replica_id=broker_id,
        isolation_level=0,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=tp.topic, partitions=[partition])],
        timeout_ms=timeout_ms,
    )
    response = await conn.request(ApiKey.LIST_OFFSETS, body)
    for topic in response.topics:
        for p in topic.partitions:
            if topic.name == tp.topic and p.partition_index == tp.partition:
                if p.error_code != ErrorCode.NONE:
                    raise KafkaError(p.error_code, f"ListOffsets {tp}")
                return int(p.offset)
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"ListOffsets did not answer {tp}")
