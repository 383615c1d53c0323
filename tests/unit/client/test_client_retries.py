"""KafkaClient.retrying: retriable errors retried with refreshes, bounded; others raised."""

from __future__ import annotations

from typing import Any

import pytest

from client.client import ClientConfig, KafkaClient, parse_bootstrap
from client.errors import ConnectionLost, KafkaError
from protocol import ErrorCode
from timer.clock import MockClock

pytestmark = pytest.mark.timeout(10)


def client(retries: int = 3) -> tuple[KafkaClient, list[Any]]:
    c = KafkaClient(
        "127.0.0.1:1", ClientConfig(retries=retries, retry_backoff_s=0.001), clock=MockClock()
    )
    refreshes: list[Any] = []

    async def refresh(topics: Any = None, **kw: Any) -> Any:
        refreshes.append(topics)
        return c.view

    c.refresh_metadata = refresh  # type: ignore[method-assign]
    return c, refreshes


async def test_retriable_errors_are_retried_after_a_refresh() -> None:
    c, refreshes = client()
    calls = 0

    async def op() -> str:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return "done"

    assert await c.retrying(op, refresh_topics=["t"]) == "done"
    assert calls == 3 and refreshes == [["t"], ["t"]]


async def test_retries_are_bounded() -> None:
    c, _ = client(retries=2)
    calls = 0

    async def op() -> None:
        nonlocal calls
        calls += 1
        raise ConnectionLost("gone")

    with pytest.raises(ConnectionLost):
        await c.retrying(op)
    assert calls == 3


async def test_other_errors_are_raised_at_once() -> None:
    c, refreshes = client()
    calls = 0

    async def op() -> None:
        nonlocal calls
        calls += 1
        raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)

    with pytest.raises(KafkaError, match="TOPIC_AUTHORIZATION_FAILED"):
        await c.retrying(op)
    assert calls == 1 and refreshes == []


async def test_no_retry_past_the_deadline() -> None:
    c, _ = client(retries=100)
    clock = c.clock
    assert isinstance(clock, MockClock)
    calls = 0

    async def op() -> None:
        nonlocal calls
        calls += 1
        clock.advance(400)
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE)

    with pytest.raises(KafkaError):
        await c.retrying(op, timeout_s=1.0)
    assert calls == 3  # 400, 800, 1200 ms: the third attempt ends past the deadline


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap(["[::1]:9092"]) == [("::1", 9092)]
    for bad in ("", "host", "host:x", "host:0"):
        with pytest.raises(ValueError):
            parse_bootstrap(bad)
