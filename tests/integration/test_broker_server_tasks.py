"""A real BrokerServer, started from a configuration: the periodic tasks it registers are
exactly the rows of its table (``BrokerServer.scheduled_tasks``), with their periods, plus
the leader-imbalance check its controller schedules once active; and every service a
handler family declares (``broker.apis.services``) is one its assembly provided."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.config import BrokerConfig
from broker.server import BrokerServer
from tests.unit.broker.handler_services import unprovided

pytestmark = pytest.mark.integration


async def test_registered_tasks_are_the_brokers_table(zk_connect: str, tmp_path: Path) -> None:
    listeners = "PLAINTEXT://127.0.0.1:0"
    config = BrokerConfig.from_properties(
        {
            "broker.id": "1",
            "listeners": listeners,
            "advertised.listeners": listeners,
            "log.dirs": str(tmp_path / "logs"),
            "zookeeper.connect": zk_connect,
            "metrics.port": "-1",
            "replica.high.watermark.checkpoint.interval.ms": "1234",
            "auto.leader.rebalance.enable": "true",
            "leader.imbalance.check.interval.seconds": "77",
            "controlled.shutdown.enable": "false",
        }
    )
    server = BrokerServer(config)
    try:
        await server.startup()
        controller = server.controller
        assert controller is not None and server.scheduler is not None
        async with asyncio.timeout(30):
            # elected and through failover, where the leader-imbalance check would start
            while not (controller.is_active and controller.events.processed):
                await asyncio.sleep(0.05)
        registered = {t.name: t.period_ms for t in server.scheduler.scheduled()}
        assert registered.pop("auto-leader-rebalance-task-1") == 77_000
        assert registered == {t.name: t.period_ms for t in server.scheduled_tasks()}
        assert registered["highwatermark-checkpoint"] == 1234
        assert controller.config.auto_leader_rebalance_enable
        # every declared service, of its declared type (read from the declarations)
        assert unprovided(server.parts.services) == []
    finally:
        await server.shutdown()
