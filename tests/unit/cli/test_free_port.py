"""free_port hands out listener ports below the kernel's ephemeral range (where outgoing
connections take theirs), each once per process, each free when handed out."""

from __future__ import annotations

import random
import socket

import pytest

from tools.zookeeper_server import _ephemeral_start, _handed_out, free_port


def test_ports_are_below_the_ephemeral_range_distinct_and_bindable() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(1024 <= p < _ephemeral_start() for p in ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", ports[-1]))


def test_a_port_some_server_holds_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", free_port()))
        held.listen()
        busy = held.getsockname()[1]
        spare = free_port()
        _handed_out.discard(spare)
        draws = iter([int(busy), spare])

        class Draw:
            def randrange(self, start: int, stop: int) -> int:
                return next(draws)

        monkeypatch.setattr(random, "SystemRandom", Draw)
        _handed_out.discard(busy)  # as if another process had bound it
        assert free_port() == spare
