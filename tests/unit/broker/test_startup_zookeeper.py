"""broker.startup.connect_zookeeper: the first connection to ZooKeeper is bounded by
zookeeper.connection.timeout.ms (zookeeper.session.timeout.ms when unset), each attempt
is given the time left (ZK_ATTEMPT_MAX_S at most), and running out fails start-up with
a message that names ZooKeeper, its address and the timeout. Time is a fake clock that
the fake connections and waits advance."""

from __future__ import annotations

from typing import cast

import pytest

from broker.config import BrokerConfig
from broker.startup import ZK_ATTEMPT_MAX_S, StartupError, connect_zookeeper
from zk.errors import ZooKeeperUnavailableError
from zk.facade import ZkFacade

HOSTS = "127.0.0.1:1"


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


class ConnectedSession:
    session_id = 0x1234


def config(**keys: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"zookeeper.connect": HOSTS, **keys})


async def test_an_unreachable_zookeeper_fails_start_up_after_the_connection_timeout() -> None:
    time = FakeTime()
    given: list[float] = []

    async def times_out(hosts: str, session_s: float, connect_s: float) -> ZkFacade:
        given.append(connect_s)
        time.now += connect_s  # kazoo waited all it was given
        raise ZooKeeperUnavailableError(f"could not connect to ZooKeeper at {hosts}")

    cfg = config(**{"zookeeper.connection.timeout.ms": "2000"})
    with pytest.raises(StartupError) as raised:
        await connect_zookeeper(cfg, times_out, time.clock, time.sleep)
    message = str(raised.value)
    assert "Timed out waiting for connection to ZooKeeper" in message
    assert "while in state: CONNECTING" in message
    assert HOSTS in message and "zookeeper.connection.timeout.ms=2000" in message
    assert given == [2.0] and time.waits == []
    assert time.now == pytest.approx(102.0)


async def test_the_session_timeout_bounds_it_when_the_connection_timeout_is_unset() -> None:
    time = FakeTime()
    given: list[float] = []

    async def times_out(hosts: str, session_s: float, connect_s: float) -> ZkFacade:
        given.append(connect_s)
        time.now += connect_s
        raise ZooKeeperUnavailableError("no answer")

    cfg = config(**{"zookeeper.session.timeout.ms": "6000"})
    with pytest.raises(StartupError, match=r"zookeeper\.connection\.timeout\.ms=6000"):
        await connect_zookeeper(cfg, times_out, time.clock, time.sleep)
    # attempts of ZK_ATTEMPT_MAX_S at most, with the waits between them, fill the 6 s
    assert given[0] == ZK_ATTEMPT_MAX_S and len(given) >= 2
    assert 106.0 <= time.now <= 106.0 + ZK_ATTEMPT_MAX_S
    assert time.now == pytest.approx(100.0 + sum(given) + sum(time.waits))


async def test_quick_failures_are_retried_within_the_deadline_and_no_longer() -> None:
    time = FakeTime()
    given: list[float] = []

    async def refused(hosts: str, session_s: float, connect_s: float) -> ZkFacade:
        given.append(connect_s)
        time.now += 0.25
        raise OSError("connection refused")

    cfg = config(**{"zookeeper.connection.timeout.ms": "5000"})
    with pytest.raises(StartupError, match="connection refused"):
        await connect_zookeeper(cfg, refused, time.clock, time.sleep)
    assert len(given) >= 3
    # each attempt is given what is left of the 5 s, ZK_ATTEMPT_MAX_S at most
    assert given[0] == ZK_ATTEMPT_MAX_S
    elapsed = 0.0
    for attempt_s, wait_s in zip(given, [*time.waits, 0.0], strict=True):
        assert attempt_s == pytest.approx(max(min(5.0 - elapsed, ZK_ATTEMPT_MAX_S), 0.1))
        elapsed += 0.25 + wait_s
    assert all(wait > 0 for wait in time.waits)
    # it gives up on the first failure at or past the deadline: at most one attempt late
    assert 105.0 <= time.now <= 105.0 + 0.25 + 1e-9


async def test_a_zookeeper_that_answers_before_the_deadline_is_used() -> None:
    time = FakeTime()
    # all start-up reads of a session is its id
    session = cast(ZkFacade, ConnectedSession())
    calls: list[float] = []

    async def second_time_lucky(hosts: str, session_s: float, connect_s: float) -> ZkFacade:
        calls.append(connect_s)
        time.now += 0.25
        if len(calls) == 1:
            raise OSError("connection refused")
        return session

    cfg = config(**{"zookeeper.connection.timeout.ms": "5000"})
    got = await connect_zookeeper(cfg, second_time_lucky, time.clock, time.sleep)
    assert got is session and len(calls) == 2
    assert calls == [ZK_ATTEMPT_MAX_S, ZK_ATTEMPT_MAX_S]
