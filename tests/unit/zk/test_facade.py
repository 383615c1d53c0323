"""ZkFacade: each coroutine is one family call on a worker thread, with the blocking
client's names and arguments; the shared FakeZk keeps the same signatures."""

from __future__ import annotations

import asyncio
import inspect
import threading
from types import ModuleType
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.fakes.zk import FakeZk
from zk import (
    acls,
    admin,
    brokers,
    client_quotas,
    configs,
    consumer_offsets,
    controller_election,
    isr_notifications,
    partition_states,
    producer_ids,
    scram,
    session,
    topics,
    transactions,
)
from zk.facade import ZkFacade
from zk.session import ZkSession

FAMILIES: tuple[ModuleType, ...] = (
    acls,
    session,
    brokers,
    topics,
    partition_states,
    configs,
    consumer_offsets,
    controller_election,
    producer_ids,
    isr_notifications,
    admin,
    scram,
    client_quotas,
    transactions,
)
#: not family calls: the session's own life
LIFECYCLE = {"connect", "close"}


def coroutines(cls: type) -> dict[str, Any]:
    return {
        name: fn
        for name, fn in vars(cls).items()
        if not name.startswith("_") and inspect.iscoroutinefunction(fn)
    }


def parameters(fn: Any, skip: int) -> list[tuple[str, object, Any]]:
    """Each parameter's name, kind and default, after the first ``skip``."""
    params = list(inspect.signature(fn).parameters.values())[skip:]
    return [(p.name, p.kind, p.default) for p in params]


def facade() -> ZkFacade:
    return ZkFacade(ZkSession(KazooClient(hosts="127.0.0.1:1")))  # never started


@pytest.mark.parametrize("name", sorted(set(coroutines(ZkFacade)) - LIFECYCLE))
def test_each_coroutine_is_a_family_function_with_the_same_arguments(name: str) -> None:
    owners = [
        m
        for m in FAMILIES
        if inspect.isfunction(fn := getattr(m, name, None)) and fn.__module__ == m.__name__
    ]
    assert len(owners) == 1, f"{name}: defined by {[m.__name__ for m in owners]}"
    family_fn = getattr(owners[0], name)
    assert next(iter(inspect.signature(family_fn).parameters)) == "session"
    # the facade's self stands where the family function takes the session
    assert parameters(getattr(ZkFacade, name), 1) == parameters(family_fn, 1)


async def test_a_call_runs_on_a_worker_thread_with_the_facades_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[threading.Thread, ZkSession, object]] = []

    def get_topics(zk_session: ZkSession, watch: object = None) -> list[str]:
        seen.append((threading.current_thread(), zk_session, watch))
        return ["t"]

    def watch(event: object) -> None:
        pass

    monkeypatch.setattr(topics, "get_topics", get_topics)
    zk = facade()
    assert await zk.get_topics(watch) == ["t"]
    ((thread, used, handed),) = seen
    assert thread is not threading.main_thread()
    assert used is zk.session
    # watches reach kazoo as given: kazoo calls them on its own thread, not on the loop
    assert handed is watch


async def test_the_loop_keeps_running_while_a_call_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def get_topics(zk_session: ZkSession, watch: object = None) -> list[str]:
        assert release.wait(10)
        return []

    monkeypatch.setattr(topics, "get_topics", get_topics)
    call = asyncio.create_task(facade().get_topics())
    await asyncio.sleep(0.01)  # the loop turns while the call waits on its thread
    assert not call.done()
    release.set()
    assert await asyncio.wait_for(call, 10) == []


def test_the_fake_keeps_the_facades_signatures() -> None:
    faked = coroutines(FakeZk)
    assert faked, "FakeZk fakes nothing"
    real = coroutines(ZkFacade)
    for name, fn in faked.items():
        assert name in real, f"FakeZk.{name} is not a ZkFacade coroutine"
        assert parameters(fn, 1) == parameters(real[name], 1), name


async def test_the_fake_names_a_call_it_does_not_fake() -> None:
    with pytest.raises(NotImplementedError, match=r"zk\.brokers\.get_broker"):
        await FakeZk().get_broker(1)
