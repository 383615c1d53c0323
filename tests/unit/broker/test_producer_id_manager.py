"""ProducerIdManager: ids come from claimed blocks in order, a new block is claimed only
when one is spent, concurrent callers share one claim, and claim failures propagate."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from broker.producer_id_manager import ProducerIdManager
from zk.codec import ProducerIdBlock, next_producer_id_block


class FakeZk:
    """Hands out consecutive blocks like /latest_producer_id_block does."""

    def __init__(self, size: int = 3) -> None:
        self.size = size
        self.claims: list[ProducerIdBlock] = []
        self.fail = False

    def allocate_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        if self.fail:
            raise ConnectionError("ZooKeeper is away")
        previous = self.claims[-1] if self.claims else None
        block = next_producer_id_block(previous, broker_id, self.size)
        self.claims.append(block)
        return block


async def inline(fn: Callable[[], ProducerIdBlock]) -> ProducerIdBlock:
    await asyncio.sleep(0)  # yield, so concurrent callers really overlap
    return fn()


async def test_ids_in_order_across_blocks() -> None:
    zk = FakeZk(size=3)
    manager = ProducerIdManager(2, zk, run_blocking=inline)
    ids = [await manager.generate_producer_id() for _ in range(7)]
    assert ids == [0, 1, 2, 3, 4, 5, 6]
    assert [(b.broker_id, b.first, b.last) for b in zk.claims] == [
        (2, 0, 2),
        (2, 3, 5),
        (2, 6, 8),
    ]


async def test_concurrent_callers_share_one_claim() -> None:
    zk = FakeZk(size=10)
    manager = ProducerIdManager(0, zk, run_blocking=inline)
    ids = await asyncio.gather(*(manager.generate_producer_id() for _ in range(5)))
    assert sorted(ids) == [0, 1, 2, 3, 4]
    assert len(zk.claims) == 1


async def test_claim_failure_propagates_and_later_calls_recover() -> None:
    zk = FakeZk()
    manager = ProducerIdManager(0, zk, run_blocking=inline)
    zk.fail = True
    with pytest.raises(ConnectionError):
        await manager.generate_producer_id()
    zk.fail = False
    assert await manager.generate_producer_id() == 0


async def test_default_runs_the_claim_in_a_thread() -> None:
    zk = FakeZk()
    manager = ProducerIdManager(0, zk)
    assert await asyncio.wait_for(manager.generate_producer_id(), timeout=10) == 0
