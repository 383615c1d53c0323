"""A follower's incremental fetch session on the leader reads only the partitions with
news (broker.fetch_session_news): an idle round reads nothing yet keeps the follower
caught up, an append wakes the session's long poll and is the one partition read, the
caught-up time after an append is the session's last fetch, a forgotten partition stops
counting, a follower outside the ISR is read every round, and a sweep reads them all."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from broker.apis import fetch
from broker.apis.services import ReplicaAccess
from broker.fetch_session_news import SWEEP_MS
from broker.isr import FollowerState
from broker.network import Codec
from broker.partition import Partition
from broker.produce_records import check_produce_records
from protocol import ApiKey, ErrorCode, decode_response
from protocol.messages import FetchRequest
from protocol.values import TopicPartition
from storage import FileRegion
from tests.records import record_batch
from tests.unit.broker.broker_helpers import (
    HandlerRequest,
    LocalReplicas,
    local_replicas,
    partition_state,
)

TOPIC = "clicks"
A, B, C = (TopicPartition(TOPIC, p) for p in range(3))
LAG_MS = 30_000


@dataclass
class Leader:
    replicas: LocalReplicas
    ctx: ReplicaAccess
    reads: list[TopicPartition]
    session_id: int = 0
    epoch: int = 0

    def partition(self, tp: TopicPartition) -> Partition:
        found = self.replicas.rm.partition_for(tp)
        assert found is not None
        return found

    def follower(self, tp: TopicPartition) -> FollowerState:
        return self.partition(tp).followers[1]

    def produce(self, tp: TopicPartition, n: int = 1) -> None:
        self.replicas.rm.append_records(
            {tp: check_produce_records(record_batch(n, key=None, value=b"v"), 9)},
            required_acks=1,
            timeout_ms=0,
            on_done=lambda r: None,
        )

    def request(
        self,
        offsets: dict[TopicPartition, int],
        *,
        forget: tuple[TopicPartition, ...] = (),
        max_wait_ms: int = 0,
    ) -> HandlerRequest:
        body = FetchRequest(
            replica_id=1,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=self.session_id,
            session_epoch=self.epoch,
            topics=[
                FetchRequest.FetchTopic(
                    topic=TOPIC,
                    partitions=[
                        FetchRequest.FetchPartition(
                            partition=tp.partition,
                            fetch_offset=offset,
                            log_start_offset=0,
                            partition_max_bytes=1 << 20,
                        )
                        for tp, offset in offsets.items()
                    ],
                )
            ]
            if offsets
            else [],
            forgotten_topics_data=[
                FetchRequest.ForgottenTopic(topic=TOPIC, partitions=[tp.partition for tp in forget])
            ]
            if forget
            else [],
        )
        return HandlerRequest(ApiKey.FETCH, 12, body, "PLAINTEXT")

    async def fetch(self, request: HandlerRequest) -> dict[TopicPartition, Any]:
        """Send ``request``; the answered partitions (after a wait, for a long poll)."""
        answer = await fetch.handle(self.ctx, request)
        if isinstance(answer, asyncio.Future):
            answer = await answer
        return self.decode(answer)

    def decode(self, answer: Any) -> dict[TopicPartition, Any]:
        pieces: list[bytes] = []
        for piece in Codec.default().encode(answer):
            if isinstance(piece, FileRegion):
                piece = piece.read()
            assert isinstance(piece, bytes)
            pieces.append(piece)
        body = decode_response(b"".join(pieces), ApiKey.FETCH, 12).body
        assert body.error_code == ErrorCode.NONE
        self.session_id = body.session_id
        self.epoch += 1
        return {
            TopicPartition(t.topic, p.partition_index): p
            for t in body.responses
            for p in t.partitions
        }

    def tick(self, ms: int) -> None:
        self.replicas.clock.advance(ms)


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Leader]:
    """Broker 0 leads A, B and C with follower 1 in the ISR, each holding 2 records,
    and follower 1 opened its session at their ends (two rounds: the second, naming
    nothing, settles them)."""
    replicas = local_replicas(tmp_path, replica_lag_time_max_ms=LAG_MS)
    replicas.become(
        {TOPIC: uuid.uuid4()},
        *(partition_state(tp, isr=(0, 1), replicas=(0, 1)) for tp in (A, B, C)),
    )
    reads: list[TopicPartition] = []
    made = Leader(replicas, replicas.services({}).replicas, reads)
    for tp in (A, B, C):
        made.produce(tp, 2)
        partition = made.partition(tp)
        real = partition.read

        def counted(*args: Any, _tp: TopicPartition = tp, _real: Any = real, **kw: Any) -> Any:
            reads.append(_tp)
            return _real(*args, **kw)

        partition.read = counted  # type: ignore[method-assign]
    yield made
    replicas.log_manager.shutdown()


async def open_session(leader: Leader) -> None:
    answered = await leader.fetch(leader.request({A: 2, B: 2, C: 2}))
    assert set(answered) == {A, B, C} and leader.session_id != 0
    leader.tick(100)
    await leader.fetch(leader.request({}))  # the high watermarks moved: told once
    leader.reads.clear()


async def test_an_idle_round_reads_nothing_and_keeps_the_follower_caught_up(
    leader: Leader,
) -> None:
    await open_session(leader)
    states = {tp: leader.follower(tp) for tp in (A, B, C)}
    for _ in range(SWEEP_MS // 500 - 1):  # idle rounds until just before the sweep
        leader.tick(500)
        assert await leader.fetch(leader.request({})) == {}
    assert leader.reads == []
    now = leader.replicas.clock.monotonic_ms()
    for tp in (A, B, C):
        assert leader.follower(tp) is states[tp]  # never recorded again...
        assert leader.follower(tp).effective() == (now, now)  # ...yet fetched now
    # an append now: the follower is caught up as of its last fetch, not 40 s ago
    leader.tick(10)
    leader.produce(A)
    state, end = leader.follower(A), leader.partition(A).log.log_end_offset  # type: ignore[union-attr]
    assert state.is_caught_up(end, now + LAG_MS, LAG_MS)
    assert not state.is_caught_up(end, now + LAG_MS + 1, LAG_MS)


async def test_an_append_wakes_the_long_poll_and_only_its_partition_is_read(
    leader: Leader,
) -> None:
    await open_session(leader)
    leader.tick(1000)
    waiting = await fetch.handle(leader.ctx, leader.request({}, max_wait_ms=500))
    assert isinstance(waiting, asyncio.Future) and not waiting.done()
    assert leader.reads == []
    leader.produce(B, 3)
    assert waiting.done()  # woken at once, not at the timeout
    answered = leader.decode(waiting.result())
    assert set(answered) == {B} and len(answered[B].records) > 0
    assert leader.reads == [B]
    # the follower takes them: B alone is read, and it moves B's high watermark
    leader.reads.clear()
    leader.tick(5)
    answered = await leader.fetch(leader.request({B: 5}))
    assert leader.reads == [B] and answered[B].high_watermark == 5


async def test_the_caught_up_time_after_an_append_is_the_last_session_fetch(
    leader: Leader,
) -> None:
    await open_session(leader)
    leader.tick(1000)
    await leader.fetch(leader.request({}))
    last_fetch = leader.replicas.clock.monotonic_ms()
    leader.tick(500)
    leader.produce(A)
    leader.tick(500)
    answered = await leader.fetch(leader.request({}))  # A's news: its record
    assert set(answered) == {A} and leader.reads == [A]
    # read at the old end after the append: caught up as of the previous fetch (Kafka's rule)
    assert leader.follower(A).last_caught_up_ms == last_fetch
    leader.tick(100)
    await leader.fetch(leader.request({A: 3}))
    now = leader.replicas.clock.monotonic_ms()
    assert leader.follower(A).effective()[1] == now


async def test_a_forgotten_partition_stops_counting_the_sessions_fetches(leader: Leader) -> None:
    await open_session(leader)
    leader.tick(1000)
    await leader.fetch(leader.request({}, forget=(C,)))
    forgotten_at = leader.follower(C).effective()[1]
    for _ in range(5):
        leader.tick(1000)
        await leader.fetch(leader.request({}))
    assert leader.follower(C).clock is None
    assert leader.follower(C).effective()[1] == forgotten_at
    assert leader.follower(A).effective()[1] == leader.replicas.clock.monotonic_ms()


async def test_a_follower_outside_the_isr_is_read_every_round(tmp_path: Path) -> None:
    replicas = local_replicas(tmp_path)
    replicas.become({TOPIC: uuid.uuid4()}, partition_state(A, isr=(0,), replicas=(0, 1)))
    leader = Leader(replicas, replicas.services({}).replicas, [])
    try:
        leader.produce(A, 2)
        await leader.fetch(leader.request({A: 2}))
        for _ in range(3):
            leader.tick(1000)
            before = leader.follower(A)
            await leader.fetch(leader.request({}))
            assert leader.follower(A) is not before  # recorded: it may join the ISR
    finally:
        replicas.log_manager.shutdown()


async def test_a_sweep_reads_every_partition(leader: Leader) -> None:
    await open_session(leader)
    leader.tick(SWEEP_MS - 200)
    await leader.fetch(leader.request({}))
    assert leader.reads == []
    leader.tick(200)
    await leader.fetch(leader.request({}))
    assert sorted(leader.reads) == [A, B, C]


async def test_one_produce_to_several_partitions_is_answered_in_one_round(
    leader: Leader,
) -> None:
    await open_session(leader)
    leader.tick(1000)
    waiting = await fetch.handle(leader.ctx, leader.request({}, max_wait_ms=500))
    assert isinstance(waiting, asyncio.Future) and not waiting.done()
    leader.replicas.rm.append_records(
        {tp: check_produce_records(record_batch(1, key=None, value=b"v"), 9) for tp in (A, C)},
        required_acks=1,
        timeout_ms=0,
        on_done=lambda r: None,
    )
    answered = leader.decode(waiting.result())
    assert set(answered) == {A, C}  # woken once every partition was appended
    assert all(len(answered[tp].records) > 0 for tp in (A, C))
