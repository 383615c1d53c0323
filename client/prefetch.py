"""Pipelined fetching of one partition: several fetches in flight, records taken in order.

A fetch's offset is only known for sure once the previous response is in (it is where the
last whole batch of that response ends), so a second fetch in flight has to be issued at
a *predicted* offset. The prediction is the previous response's stride: a fetch limited
by ``partition_max_bytes`` over batches of one size covers the same number of offsets
every time, so in a steady catch-up read the prediction is exact and the broker always
has the next request queued when it finishes a response.

Correctness does not rest on the prediction. Responses are taken strictly in the order
they were issued, and only a response fetched at exactly ``position`` (the offset after
the last batch taken) is taken at all. When a response leaves the partition anywhere
other than where the next fetch in flight starts (a short response at a segment's end,
batches of another size), the fetches in flight were predicted from a wrong end: they are
dropped unread and the pipeline restarts from ``position``. A response taken is therefore
the broker's own answer for ``position``, so :func:`take_from` can trust it as a
consumer trusts any fetch: batches that end at or before ``position`` (the broker returns
whole batches, so the first may start earlier) are skipped, and a batch starting after
``position`` (offsets removed by compaction) is the next one there is. No record is
counted twice and none is skipped; a wrong prediction costs the bytes of the fetches
dropped, never correctness.

Predictions stop at the high watermark the broker last reported (a fetch past the log end
would be answered OFFSET_OUT_OF_RANGE; one at the end waits ``max_wait_ms``), so a
consumer that has caught up keeps a single fetch in flight, at its true position. The
stride is learnt only from responses cut by the byte limit (they end in a partial batch
or fill ``partition_max_bytes``), not from short ones at a segment's or the log's end.
Records are counted from batch headers only.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from client.errors import KafkaError
from client.fetch import fetch_body, read_fetch_response
from protocol import ApiKey, ErrorCode
from protocol.records import iter_batches
from protocol.values import READ_UNCOMMITTED


class FetchConnection(Protocol):
    """What the prefetcher needs of a connection (:class:`~client.connection.
    Connection` is one): requests answered in the order sent."""

    async def request(
        self, api_key: int, body: Any, *, version: int | None = None, timeout_s: float | None = None
    ) -> Any: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Taken:
    """What one response added to a partition."""

    records: int
    bytes: int
    #: the offset after the last batch taken (unchanged when nothing was taken)
    position: int


def take_from(records: bytes | memoryview, position: int) -> Taken:
    """Count the whole batches of ``records`` (a fetch at ``position``) from ``position``.

    Batches ending at or before ``position`` are skipped. A batch that straddles it
    (a fetch inside a batch: the broker never splits one) counts only its offsets from
    ``position`` on, assuming them dense, as they are in any batch not compacted."""
    n = size = 0
    for _, header in iter_batches(records):
        end = header.next_offset
        if end <= position:
            continue
        n += min(header.records_count, end - max(position, header.base_offset))
        size += header.size
        position = end
    return Taken(n, size, position)


class PartitionPrefetcher:
    """Up to ``depth`` fetches of one partition in flight on ``conn``, taken in order.

    ``conn`` should be dedicated to this partition: a fetch waiting at the log end holds
    back every response queued behind it on its connection. Not safe across tasks; call
    ``close`` to drop the fetches still in flight."""

    def __init__(
        self,
        conn: FetchConnection,
        topic: str,
        partition: int,
        position: int,
        *,
        depth: int = 2,
        max_wait_ms: int = 500,
        partition_max_bytes: int = 1024 * 1024,
        isolation_level: int = READ_UNCOMMITTED,
        request_timeout_s: float = 30.0,
    ) -> None:
        if depth < 1:
            raise ValueError("depth must be at least 1")
        self.conn = conn
        self.topic = topic
        self.partition = partition
        self.position = position
        self.depth = depth
        self.max_wait_ms = max_wait_ms
        self.partition_max_bytes = partition_max_bytes
        self.isolation_level = isolation_level
        self.timeout_s = max_wait_ms / 1000 + request_timeout_s
        #: (fetch offset, its request) in the order issued, which is the answer order
        self._inflight: deque[tuple[int, asyncio.Task[Any]]] = deque()
        #: offsets the last full response at the true position covered; 0 before one
        self._stride = 0
        #: the high watermark last reported; predictions stay below it
        self._high_watermark = -1
        #: the predicted offset after the last fetch issued
        self._issued_to = position
        #: fetches dropped in flight because their predicted offset was wrong
        self.mispredicted = 0

    async def next(self) -> Taken:
        """Fill the pipeline, wait for the oldest response (always a fetch at
        ``position``) and take it. KafkaError for a partition error."""
        self._fill()
        offset, task = self._inflight.popleft()
        assert offset == self.position, "the head of the pipeline is always at the position"
        try:
            body = await task
            data = read_fetch_response(body, self.topic).get(self.partition)
            if data is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, self._name())
            if data.error_code != ErrorCode.NONE:
                raise KafkaError(data.error_code, self._name())
        except BaseException:
            # an error or a cancelled wait: the fetches behind this one were predicted
            # from its answer; drop them so that the next call starts at the position
            self._drop_inflight()
            raise
        self._high_watermark = data.high_watermark
        taken = take_from(data.records, self.position)
        cut = len(data.records) >= self.partition_max_bytes or taken.bytes < len(data.records)
        if cut and taken.records:
            self._stride = taken.position - offset
        self.position = taken.position
        if self._inflight and self._inflight[0][0] != self.position:
            self.mispredicted += len(self._inflight)
            self._drop_inflight()
        if not self._inflight:
            self._issued_to = self.position
        return taken

    def close(self) -> None:
        self._drop_inflight()

    def _drop_inflight(self) -> None:
        # Cancelling a request only stops waiting for it: its response still arrives,
        # in order, and the connection discards it.
        for _, task in self._inflight:
            if not task.done():
                task.cancel()
            elif not task.cancelled():
                task.exception()  # retrieved: no "exception was never retrieved" warning
        self._inflight.clear()

    def _fill(self) -> None:
        if not self._inflight:
            self._issue(self.position)
        while (
            len(self._inflight) < self.depth
            and self._stride > 0
            and self._issued_to < self._high_watermark
        ):
            self._issue(self._issued_to)

    def _issue(self, offset: int) -> None:
        body = fetch_body(
            self.topic,
            {self.partition: offset},
            max_wait_ms=self.max_wait_ms,
            min_bytes=1,
            max_bytes=self.partition_max_bytes,
            partition_max_bytes=self.partition_max_bytes,
            isolation_level=self.isolation_level,
        )
        request = self.conn.request(ApiKey.FETCH, body, timeout_s=self.timeout_s)
        self._inflight.append((offset, asyncio.ensure_future(request)))
        self._issued_to = offset + self._stride

    def _name(self) -> str:
        return f"{self.topic}-{self.partition}"
