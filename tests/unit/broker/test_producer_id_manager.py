"""ProducerIdManager: ids come from claimed blocks in order, a new block is claimed only
when one is spent, concurrent callers share one claim, and claim failures propagate."""

from __future__ import annotations

import asyncio

import pytest

from broker.producer_id_manager import ProducerIdManager
from tests.fakes.zk import FakeZk


def fake_zk(block_size: int = 3) -> FakeZk:
    """Hands out consecutive blocks of ``block_size`` like /latest_producer_id_block does."""
    zk = FakeZk()
    zk.block_size = block_size
    return zk


async def test_ids_in_order_across_blocks() -> None:
    zk = fake_zk(block_size=3)
    manager = ProducerIdManager(2, zk)
    ids = [await manager.generate_producer_id() for _ in range(7)]
    assert ids == [0, 1, 2, 3, 4, 5, 6]
    assert [(b.broker_id, b.first, b.last) for b in zk.claims] == [
        (2, 0, 2),
        (2, 3, 5),
        (2, 6, 8),
    ]


async def test_concurrent_callers_share_one_claim() -> None:
    zk = fake_zk(block_size=10)
    manager = ProducerIdManager(0, zk)
    ids = await asyncio.gather(*(manager.generate_producer_id() for _ in range(5)))
    assert sorted(ids) == [0, 1, 2, 3, 4]
    assert len(zk.claims) == 1


async def test_claim_failure_propagates_and_later_calls_recover() -> None:
    zk = fake_zk()
    manager = ProducerIdManager(0, zk)
    zk.fail_claims = True
    with pytest.raises(ConnectionError):
        await manager.generate_producer_id()
    zk.fail_claims = False
    assert await manager.generate_producer_id() == 0
