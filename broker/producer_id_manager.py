"""ProducerIdManager: hands out producer ids from blocks claimed in ZooKeeper.

Producer ids must be unique across the cluster and never reused, so each broker claims
a block of them (1000, Kafka's size) by a conditional write of /latest_producer_id_block
(``{"version":1,"broker":<id>,"block_start":"<first>","block_end":"<last>"}``; the
controller's ZooKeeper client does the read-modify-write and retries lost races), then
hands ids out of it one by one. A new block is claimed when the current one is spent;
ids of a block that a restart abandons are simply never used.

A lock makes concurrent callers wait for one claim (a ZooKeeper round trip through
zk.facade) instead of claiming several blocks.
"""

from __future__ import annotations

import asyncio
import logging

from zk.codec import ProducerIdBlock
from zk.facade import ZkFacade

log = logging.getLogger(__name__)


class ProducerIdManager:
    """Event-loop only."""

    def __init__(self, broker_id: int, zk: ZkFacade) -> None:
        self.broker_id = broker_id
        self._zk = zk
        self._next = 0
        self._block: ProducerIdBlock | None = None
        self._lock = asyncio.Lock()

    @property
    def current_block(self) -> ProducerIdBlock | None:
        return self._block

    async def generate_producer_id(self) -> int:
        """The next unused producer id; claims a block first when none is left.
        Raises whatever the ZooKeeper claim raised (the caller answers a retriable error)."""
        async with self._lock:
            if self._block is None or self._next > self._block.last:
                block = await self._zk.allocate_producer_id_block(self.broker_id)
                log.info("claimed producer ids %d-%d", block.first, block.last)
                self._block, self._next = block, block.first
            producer_id = self._next
            self._next += 1
            return producer_id
