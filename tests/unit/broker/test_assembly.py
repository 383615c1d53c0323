"""broker.assembly and the handler families: every route takes a family the assembly
provides, no family declares an optional service, and the steps' reverse keeps the
broker's shutdown order (controlled shutdown first, waiters answered before the
listeners drain, the controller after the drain, the cleaner before the scheduler, the
logs flushed last but for the lag probe); a start cancelled half-way stops what had
started. The families of a started broker are checked field by field in
tests/integration/test_broker_server_tasks.py."""

from __future__ import annotations

import asyncio
import inspect
import typing
from pathlib import Path

import pytest

from broker.apis import HANDLERS
from broker.apis.services import Advertised, HandlerServices
from broker.assembly import BrokerAssembly
from broker.background import BackgroundTasks
from broker.config import BrokerConfig
from broker.lifecycle import Step
from broker.metrics import BrokerMetrics
from broker.server import BrokerServer
from storage.log_manager import CLEAN_SHUTDOWN_FILE
from tests.unit.broker.handler_services import family_declarations
from timer.clock import MockClock
from zk.facade import ZkFacade

DEADLINE_S = 10.0


async def _no_zookeeper(hosts: str, session_s: float, connect_s: float) -> ZkFacade:
    raise AssertionError("these tests never start the broker")


def steps() -> list[Step]:
    config = BrokerConfig.from_properties({"zookeeper.connect": "127.0.0.1:1"})
    return BrokerAssembly(config, MockClock(), BrokerMetrics(), _no_zookeeper).steps()


def test_every_route_takes_a_family_the_assembly_provides() -> None:
    provided = {family for family, _ in family_declarations().values()}
    assert set(typing.get_type_hints(HandlerServices).values()) <= provided | {Advertised}
    for key, route in HANDLERS.items():
        assert route.family in provided | {Advertised}, key


def test_no_family_declares_an_optional_service() -> None:
    for name, (_, fields) in family_declarations().items():
        for field, declared in fields.items():
            assert type(None) not in typing.get_args(declared), f"{name}.{field}"


def test_the_shutdown_order() -> None:
    stops = [step.name for step in reversed(steps()) if step.stop is not None]
    assert stops == [
        "controlled shutdown",
        "metrics server",
        "parked answers",
        "request drain",
        "config change listener",
        "controller",
        "socket server",
        "request handlers",
        "ACLs",
        "transaction coordinator",
        "group coordinator",
        "purgatory Heartbeat",
        "purgatory Rebalance",
        "group store",
        "replica manager",
        "ISR writer",
        "purgatory DeleteRecords",
        "purgatory topic",
        "purgatory Fetch",
        "purgatory Produce",
        "log cleaner",
        "scheduler",
        "deregistration",
        "ZooKeeper session",
        "log manager",
        "loop lag monitor",
    ]


def test_only_flushing_the_logs_is_unbounded_and_zookeeper_stops_need_it() -> None:
    all_steps = steps()
    assert [s.name for s in all_steps if s.bound_s is None] == ["log manager"]
    assert [s.name for s in all_steps if s.needs_zookeeper] == [
        "deregistration",
        "controlled shutdown",
    ]
    assert [s.name for s in all_steps][-1] == "controlled shutdown"  # stopped first


async def test_background_tasks_are_cancelled_at_close() -> None:
    tasks = BackgroundTasks("test")
    started = asyncio.Event()
    ended: list[str] = []

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.append("cancelled")

    tasks.spawn(forever(), name="forever")
    await started.wait()
    assert len(tasks) == 1
    await tasks.close()
    assert ended == ["cancelled"] and len(tasks) == 0
    late = forever()
    tasks.spawn(late, name="late")  # after close: never runs
    assert len(tasks) == 0 and inspect.getcoroutinestate(late) == inspect.CORO_CLOSED


async def test_a_start_cancelled_while_zookeeper_is_unreachable_stops_what_started(
    tmp_path: Path,
) -> None:
    """The real steps: the logs loaded, ZooKeeper never answered, start-up cancelled (a
    SIGTERM); shutdown flushes the logs and marks them clean, and touches nothing that
    never started."""
    attempts: list[str] = []

    async def unreachable(hosts: str, session_s: float, connect_s: float) -> ZkFacade:
        attempts.append(hosts)
        raise OSError("connection refused")

    config = BrokerConfig.from_properties(
        {"zookeeper.connect": "127.0.0.1:1", "log.dirs": str(tmp_path), "broker.id": "0"}
    )
    server = BrokerServer(config, zk_connect=unreachable)
    startup = asyncio.create_task(server.startup())
    async with asyncio.timeout(DEADLINE_S):
        while not attempts:
            await asyncio.sleep(0.01)
    startup.cancel()
    with pytest.raises(asyncio.CancelledError):
        await startup
    assert [s.name for s in server.lifecycle.started] == ["loop lag monitor", "log manager"]
    await asyncio.wait_for(server.shutdown(), DEADLINE_S)
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert server.lifecycle.started == [] and not server.started
