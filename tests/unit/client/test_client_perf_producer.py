"""PerfProducer's send loop over fake connections: counts, in-flight bound, errors."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

import protocol
from client.client import KafkaClient
from client.connection import Connection, PrebuiltRequest
from client.loadgen import ProducePlan
from protocol import ApiKey
from protocol.messages import ProduceResponse
from tools.perf import PerfProducer, _Slot

pytestmark = pytest.mark.timeout(10)


class FakeConnection:
    """Answers every pre-built Produce after a turn of the loop; records concurrency."""

    def __init__(self, error_code: int = 0) -> None:
        self.error_code = error_code
        self.in_flight = 0
        self.max_in_flight = 0
        self.partitions: list[int] = []

    async def send_prebuilt(
        self, request: PrebuiltRequest, *, expect_response: bool, timeout_s: float | None = None
    ) -> bytes | None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        body = protocol.decode_request(bytes(request.head_with(0))[4:] + request.tail).body
        partition = body.topic_data[0].partition_data[0].index
        self.partitions.append(partition)
        await asyncio.sleep(0)  # let other sends start: they are pipelined
        self.in_flight -= 1
        if not expect_response:
            return None
        part = ProduceResponse.PartitionProduceResponse(index=partition, error_code=self.error_code)
        response = ProduceResponse(
            responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[part])]
        )
        header = protocol.ResponseHeader(correlation_id=0)
        return protocol.encode_response(
            protocol.Response(header, response, ApiKey.PRODUCE, request.api_version)
        )


def producer(conn: FakeConnection, records: int, in_flight: int, acks: int = 1) -> PerfProducer:
    plan = ProducePlan("t", [0, 1], record_size=10, per_batch=4, distinct=2, acks=acks,
                       timeout_ms=1000, api_version=9, timestamp_ms=1)  # fmt: skip
    p = PerfProducer(
        client=cast(KafkaClient, None), plan=plan, num_records=records, duration_s=None,
        throughput=-1, acks=acks, request_timeout_s=1.0, reporting_interval_ms=60_000,
    )  # fmt: skip
    slot = _Slot(cast(Connection, conn), asyncio.Semaphore(in_flight))
    p._slots = {0: [slot], 1: [slot]}
    return p


async def test_sends_exactly_the_records_asked_with_a_short_last_batch() -> None:
    conn = FakeConnection()
    p = producer(conn, records=10, in_flight=5)
    await p.run()
    assert p.stats.total.records == 10 and p.stats.total.bytes == 100
    assert conn.partitions == [0, 1, 0]  # 4 + 4 + 2, round robin
    assert sorted(n for _, n in p.stats.samples) == [2, 4, 4]


async def test_requests_in_flight_stay_within_the_bound() -> None:
    conn = FakeConnection()
    p = producer(conn, records=200, in_flight=3)
    await p.run()
    assert conn.max_in_flight == 3
    assert p.stats.total.records == 200


async def test_errors_are_counted_not_recorded_as_sent() -> None:
    conn = FakeConnection(error_code=6)  # NOT_LEADER_OR_FOLLOWER
    p = producer(conn, records=8, in_flight=2)
    await p.run()
    assert p.stats.errors == 8 and p.stats.total.records == 0


async def test_acks_0_expects_no_answer() -> None:
    conn = FakeConnection()
    p = producer(conn, records=8, in_flight=2, acks=0)
    await p.run()
    assert p.stats.total.records == 8 and p.stats.errors == 0
