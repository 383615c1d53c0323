"""The wire way in: a running cluster (option ``kafka.bootstrap.servers``), read with the
project's client, so a Spark cluster on other machines reads a live minikafka cluster.

The driver learns partitions from Metadata and their bounds from ListOffsets (earliest,
and latest, which for a consumer is the high watermark); timestamps are looked up with
ListOffsets too. Executors fetch their range from each partition's leader. A fetch
answer may start inside a batch before the offset asked for and end in a partial batch;
:func:`spark_jobs.arrow_records.decode` keeps only the range's offsets, and the next
fetch starts after the last whole batch. Control batches are skipped, as from log dirs.
With ``kafka.isolation.level=read_committed`` the latest offset is the LSO and the
aborted transactions each fetch lists are left out (:mod:`spark_jobs.committed`).

The client is asyncio; Spark calls are synchronous, so each call runs its own event
loop (a reader keeps one loop and one client for its whole range).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from client.client import ClientConfig, KafkaClient
from client.errors import KafkaError
from client.fetch import Fetcher, PartitionData, list_offsets
from client.properties import client_security
from protocol import ErrorCode
from protocol.records import iter_batches
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, READ_COMMITTED, TopicPartition
from spark_jobs.arrow_records import Batch, decode
from spark_jobs.committed import committed_batches
from spark_jobs.planning import Bounds, OffsetRange

T = TypeVar("T")
#: ListOffsets answers this offset when no record has a timestamp at or after the one asked
NO_OFFSET = -1


def client_config(client_properties: tuple[tuple[str, str], ...]) -> ClientConfig:
    """The client's settings from the ``kafka.`` options: its security. Built where it is
    used (the driver, each executor): a TLS context does not travel between processes."""
    return ClientConfig(security=client_security(dict(client_properties)))


def _run(make: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(make)


class WireBackend:
    """Partitions, bounds and timestamp lookups from a running cluster."""

    def __init__(
        self,
        bootstrap_servers: str,
        client_properties: tuple[tuple[str, str], ...],
        isolation_level: int,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.config = client_config(client_properties)
        self.isolation_level = isolation_level
        self._partitions = _run(self._metadata())

    async def _metadata(self) -> list[TopicPartition]:
        async with KafkaClient(self.bootstrap_servers, self.config) as client:
            view = await client.refresh_metadata(None)
            topics = view.topics.values()
            return sorted(TopicPartition(t.name, p) for t in topics for p in t.partitions)

    def partitions(self) -> list[TopicPartition]:
        return list(self._partitions)

    def bounds(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, Bounds]:
        earliest = self._list_offsets({tp: EARLIEST_TIMESTAMP for tp in tps})
        latest = self._list_offsets({tp: LATEST_TIMESTAMP for tp in tps})
        return {tp: Bounds(earliest[tp], latest[tp]) for tp in tps}

    def offset_for_timestamp(self, tp: TopicPartition, timestamp: int) -> int | None:
        found = self._list_offsets({tp: timestamp})[tp]
        return None if found == NO_OFFSET else found

    def split_points(self, tp: TopicPartition) -> list[int]:
        """None: over the wire the bytes per offset are not known ahead."""
        return []

    def source_of(self, tp: TopicPartition) -> str:
        return self.bootstrap_servers

    def _list_offsets(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        async def ask() -> dict[TopicPartition, int]:
            out: dict[TopicPartition, int] = {}
            async with KafkaClient(self.bootstrap_servers, self.config) as client:
                topics = sorted({tp.topic for tp in timestamps})
                await client.refresh_metadata(topics)
                for topic in topics:
                    wanted = {tp.partition: t for tp, t in timestamps.items() if tp.topic == topic}
                    found = await list_offsets(
                        client, topic, wanted, isolation_level=self.isolation_level
                    )
                    out.update({TopicPartition(topic, p): o for p, o in found.items()})
            return out

        return _run(ask()) if timestamps else {}


def read_wire_range(
    bootstrap_servers: str,
    r: OffsetRange,
    client_properties: tuple[tuple[str, str], ...],
    isolation_level: int,
) -> Iterator[pa.RecordBatch]:
    """The records of ``r`` fetched from the partition's leader, as Arrow batches of
    :data:`spark_jobs.arrow_records.RECORD_SCHEMA` (read_committed: without the
    aborted transactions the fetches list)."""
    loop = asyncio.new_event_loop()
    client = KafkaClient(bootstrap_servers, client_config(client_properties))

    def run(step: Awaitable[T]) -> T:
        async def wrapped() -> T:
            return await step

        return loop.run_until_complete(wrapped())

    try:
        run(client.start())
        run(client.refresh_metadata([r.tp.topic]))
        fetcher = Fetcher(
            client,
            r.tp.topic,
            {r.tp.partition: r.start},
            max_wait_ms=0,
            isolation_level=isolation_level,
        )
        position = r.start
        while position < r.end:
            data = run(client.retrying(lambda: _fetch_once(fetcher, r.tp)))
            records = data.records
            batches = [
                Batch.at(records, pos, header)
                for pos, header in iter_batches(records)
                if header.next_offset > position
            ]
            if not batches:
                raise KafkaError(
                    ErrorCode.OFFSET_OUT_OF_RANGE, f"{r.tp}: nothing to fetch at {position}"
                )
            position = batches[-1].header.next_offset
            fetcher.positions[r.tp.partition] = position
            if isolation_level == READ_COMMITTED:
                kept = list(committed_batches(batches, data.aborted_transactions))
            else:
                kept = [b for b in batches if not b.header.is_control]
            if kept:
                yield decode(kept, r.start, r.end)
    finally:
        run(client.close())
        loop.close()


async def _fetch_once(fetcher: Fetcher, tp: TopicPartition) -> PartitionData:
    """One fetch of ``tp`` from its leader: its records and aborted transactions (errors
    raised, so the client's retry refreshes metadata and tries the new leader)."""
    leader = fetcher.client.view.leader(tp.topic, tp.partition)
    if leader < 0:
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, str(tp))
    data = (await fetcher.fetch_from(leader, [tp.partition]))[tp.partition]
    if data.error_code != ErrorCode.NONE:
        raise KafkaError(data.error_code, str(tp))
    return data
