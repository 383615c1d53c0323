"""Connection caps changed on a running broker (ConnectionQuotas.reconfigure): the next
connection is judged by the new caps, the open ones stay, and paused Acceptors are told
so that a raised broker-wide cap lets them accept again at once."""

from __future__ import annotations

from broker.network.quotas import ConnectionQuotas


def test_new_caps_judge_the_next_connection_and_keep_the_open_ones() -> None:
    quotas = ConnectionQuotas(max_connections=10, max_per_ip=3)
    assert all(quotas.admit("a") for _ in range(3))
    quotas.reconfigure(10, 1, {"b": 2})
    assert quotas.count("a") == 3  # none closed
    assert not quotas.admit("a")
    assert quotas.admit("b") and quotas.admit("b") and not quotas.admit("b")
    assert quotas.admit("c") and not quotas.admit("c")


def test_a_raised_broker_cap_tells_the_paused_acceptors() -> None:
    quotas = ConnectionQuotas(max_connections=1, max_per_ip=10)
    told: list[bool] = []
    quotas.on_release(lambda: told.append(quotas.at_capacity()))
    assert quotas.admit("a") and quotas.at_capacity()
    quotas.reconfigure(2, 10, {})
    assert told == [False]  # room now: an acceptor resumes
    assert quotas.admit("a") and quotas.at_capacity()
    quotas.reconfigure(1, 10, {})  # lowered below the open ones: they stay, none admitted
    assert quotas.total == 2 and quotas.at_capacity()
    assert told == [False, True]
