"""zk.latency: every request a kazoo client queues is timed from queueing to completion."""

from __future__ import annotations

from collections.abc import Callable

from zk.latency import observe_request_latency


class _Result:
    """The part of kazoo's AsyncResult the wrapper uses: callbacks run on completion."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[_Result], None]] = []

    def rawlink(self, callback: Callable[[_Result], None]) -> None:
        self._callbacks.append(callback)

    def set(self) -> None:
        for callback in self._callbacks:
            callback(self)


class _Client:
    """A kazoo client's request queue: ``_call`` queues, the connection completes later."""

    def __init__(self) -> None:
        self.queued: list[tuple[object, _Result]] = []

    def _call(self, request: object, async_object: _Result) -> bool:
        self.queued.append((request, async_object))
        return True


def test_each_request_is_observed_once_when_it_completes() -> None:
    now = [10.0]
    observed: list[float] = []
    client = _Client()
    observe_request_latency(client, observed.append, clock=lambda: now[0])

    first, second = _Result(), _Result()
    assert client._call("get /brokers/ids", first) is True
    now[0] += 0.5
    client._call("exists /controller", second)
    assert [r for r, _ in client.queued] == ["get /brokers/ids", "exists /controller"]
    assert observed == []  # nothing completed yet

    now[0] += 0.25
    second.set()
    now[0] += 1.0
    first.set()
    assert observed == [0.25, 1.75]
