"""Reading records for the messages page: a page is one ListOffsets (to place it) and one
Fetch (to fill it), whatever the partition's length; a search reads a bounded range.

Placing a page of ``limit`` records in a partition whose offsets run from ``start`` (log
start) to ``end`` (log end, exclusive)::

    newest        the last ``limit`` records: from max(start, end - limit), shown newest first
    offset N      from N (clamped into [start, end])
    timestamp T   from the first offset whose timestamp is at or after T (ListOffsets by time)

The Fetch asks for at most ``FETCH_BYTES`` from the partition's leader and keeps the first
``limit`` records at or after the placed offset (a fetch may begin inside a batch, and
stops at a byte limit: a page of large records may hold fewer). Control records
(transaction markers) are skipped.

A search scans, in each partition chosen, at most ``scan`` records ending at the log end
(or from ``offset`` when given), with consecutive Fetches, and keeps up to ``limit``
matches: every condition given must hold (key substring, value substring or regular
expression, header name with an optional value).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Final

from client.client import KafkaClient
from client.errors import KafkaError
from client.fetch import ConsumedRecord, decode, fetch_body, read_fetch_response
from client.fetch import list_offsets as client_list_offsets
from protocol import ApiKey, ErrorCode
from protocol.values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

FETCH_BYTES: Final = 1024 * 1024
#: a regular expression is tried on at most this many characters of a value
REGEX_WINDOW: Final = 64 * 1024


async def fetch_at(
    client: KafkaClient, topic: str, partition: int, offset: int, limit: int = 2**31
) -> tuple[list[ConsumedRecord], int | None]:
    """One Fetch of ``partition`` at ``offset`` from its leader (retried across leader
    changes); the records at or after ``offset`` (the whole batches holding the first
    ``limit`` of them) and the offset after the last batch decoded (None when none was)."""

    async def once() -> tuple[list[ConsumedRecord], int | None]:
        leader = client.view.leader(topic, partition)
        if leader < 0:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
        body = fetch_body(
            topic,
            {partition: offset},
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=FETCH_BYTES,
            partition_max_bytes=FETCH_BYTES,
        )
        answer = read_fetch_response(await client.request(leader, ApiKey.FETCH, body), topic)
        data = answer.get(partition)
        if data is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
        if data.error_code != ErrorCode.NONE:
            raise KafkaError(data.error_code, f"{topic}-{partition} at offset {offset}")
        return decode(topic, partition, data.records, offset, limit=limit)

    return await client.retrying(once, refresh_topics=[topic])


async def bounds(client: KafkaClient, topic: str, partition: int) -> tuple[int, int]:
    """(log start, log end) of one partition."""
    start, end = await asyncio.gather(
        client_list_offsets(client, topic, {partition: EARLIEST_TIMESTAMP}),
        client_list_offsets(client, topic, {partition: LATEST_TIMESTAMP}),
    )
    return start[partition], end[partition]


@dataclass(frozen=True)
class RecordPage:
    partition: int
    log_start: int
    log_end: int
    #: the first offset asked for
    offset: int
    records: list[ConsumedRecord]
    newest_first: bool

    @property
    def next_offset(self) -> int | None:
        """Where the page after this one (towards the end) starts; None at the end."""
        last = max((r.offset for r in self.records), default=self.offset - 1) + 1
        return last if last < self.log_end else None


async def read_page(
    client: KafkaClient,
    topic: str,
    partition: int,
    limit: int,
    *,
    offset: int | None = None,
    timestamp: int | None = None,
) -> RecordPage:
    start, end = await bounds(client, topic, partition)
    newest = offset is None and timestamp is None
    if timestamp is not None:
        found = (await client_list_offsets(client, topic, {partition: timestamp}))[partition]
        at = end if found < 0 else found
    elif offset is not None:
        at = offset
    else:
        at = end - limit
    at = max(start, min(end, at))
    records: list[ConsumedRecord] = []
    if at < end:
        records, _ = await fetch_at(client, topic, partition, at, limit)
        records = [r for r in records if r.offset < end][:limit]
    if newest:
        records.reverse()
    return RecordPage(partition, start, end, at, records, newest)


@dataclass(frozen=True)
class Query:
    key: str = ""
    value: str = ""
    regex: re.Pattern[str] | None = None
    header: str = ""
    header_value: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.key or self.value or self.regex or self.header)

    def matches(self, record: ConsumedRecord) -> bool:
        if self.key and (record.key is None or self.key.encode() not in record.key):
            return False
        if self.value and (record.value is None or self.value.encode() not in record.value):
            return False
        if self.regex is not None:
            if record.value is None:
                return False
            text = record.value[:REGEX_WINDOW].decode("utf-8", "replace")
            if self.regex.search(text) is None:
                return False
        if self.header:
            wanted = None if self.header_value is None else self.header_value.encode()
            if not any(
                name == self.header and (wanted is None or value == wanted)
                for name, value in record.headers
            ):
                return False
        return True


async def search_partition(
    client: KafkaClient,
    topic: str,
    partition: int,
    query: Query,
    *,
    scan: int,
    limit: int,
    offset: int | None,
) -> tuple[list[ConsumedRecord], int]:
    """Matches in one partition (at most ``limit``) and how many records were read."""
    start, end = await bounds(client, topic, partition)
    at = max(start, end - scan) if offset is None else max(start, min(end, offset))
    stop = min(end, at + scan)
    found: list[ConsumedRecord] = []
    read = 0
    while at < stop and len(found) < limit:
        records, after = await fetch_at(client, topic, partition, at)
        records = [r for r in records if r.offset < stop]
        read += len(records)
        found.extend(r for r in records if query.matches(r))
        if after is None or after <= at:
            break
        at = after
    return found[:limit], read
