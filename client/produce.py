"""Produce pre-built RecordBatch bytes to a partition, and Kafka's key partitioner.

The client never rewrites a batch: base offsets are the broker's to assign. A Produce
request here carries one batch for one partition (what the tools need); acks=0 sends
without waiting, since the broker does not answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from client.client import KafkaClient
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import ProduceRequest

#: acks values the client treats specially: none (no response comes) and every in-sync
#: replica (the default); 1, the leader alone, needs no name
ACKS_NONE: Final = 0
ACKS_ALL: Final = -1


def parse_acks(text: str | int) -> int:
    """``all``/``-1``/``1``/``0`` (Kafka's spellings) to the wire value."""
    value = str(text).strip().lower()
    if value == "all":
        return ACKS_ALL
    if value in {"-1", "0", "1"}:
        return int(value)
    raise ValueError(f"acks must be all, -1, 0 or 1, not {text!r}")


def produce_body(topic: str, partition: int, records: bytes, acks: int, timeout_ms: int) -> Any:
    data = ProduceRequest.TopicProduceData(
        name=topic,
        partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=records)],
    )
    return ProduceRequest(
        transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[data]
    )


@dataclass(frozen=True)
class ProduceResult:
    topic: str
    partition: int
    #: offset of the batch's first record; -1 with acks=0 (unknown)
    base_offset: int
    log_append_time_ms: int = -1


def read_produce_response(body: Any, topic: str, partition: int) -> ProduceResult:
    """The result for (topic, partition) in a ProduceResponse; KafkaError for its error."""
    for t in body.responses:
        if t.name != topic:
            continue
        for p in t.partition_responses:
            if p.index == partition:
                if p.error_code != ErrorCode.NONE:
                    raise KafkaError(p.error_code, getattr(p, "error_message", None))
                return ProduceResult(topic, partition, p.base_offset, p.log_append_time_ms)
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"no result for {topic}-{partition}")


async def produce(
    client: KafkaClient,
    topic: str,
    partition: int,
    records: bytes,
    *,
    acks: int = ACKS_ALL,
    timeout_ms: int = 30_000,
) -> ProduceResult:
    """Send one batch to the partition's leader, retrying retriable errors (leader
    changes, unknown partitions during creation) after metadata refreshes."""
    body = produce_body(topic, partition, records, acks, timeout_ms)

    async def once() -> ProduceResult:
        leader = client.view.leader(topic, partition)
        if leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
        conn = await client.connection(leader)
        if acks == ACKS_NONE:
            await conn.send(ApiKey.PRODUCE, body)
            return ProduceResult(topic, partition, -1)
        response = await conn.request(
            ApiKey.PRODUCE, body, timeout_s=timeout_ms / 1000 + client.config.request_timeout_s
        )
        return read_produce_response(response, topic, partition)

    return await client.retrying(once, refresh_topics=[topic])


# -- Kafka's default partitioner for keyed records -------------------------------------------
# murmur2 (32-bit, seed 0x9747b28c) of the key bytes, made positive by masking the sign
# bit, modulo the partition count: records with the same key land where Java and
# librdkafka's murmur2 partitioner put them.

_M: Final = 0x5BD1E995
_SEED: Final = 0x9747B28C
_MASK32: Final = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 hash of ``data`` as a signed 32-bit int (as Java returns it)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
