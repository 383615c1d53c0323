"""zk.transactions against a real ZooKeeper: typed multi-ops are atomic, and a fenced
write carrying a stale /controller_epoch zkVersion is refused whole."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.exceptions import NodeExistsError, NoNodeError

from zk import codec, paths
from zk.controller_election import try_become_controller
from zk.errors import ControllerMovedError
from zk.session import ZkSession
from zk.transactions import (
    CheckVersionOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    commit,
    controller_write,
    fenced,
    first_failure,
)


@pytest.fixture
def zk(zk_connect: str) -> Iterator[ZkSession]:
    session = ZkSession.connect(zk_connect, session_timeout_s=4.0)
    yield session
    session.close()


def test_a_multi_op_applies_all_or_nothing(zk: ZkSession) -> None:
    zk.kazoo.create("/kept", b"old")
    results = commit(
        zk,
        [SetDataOp("/kept", b"new"), CreateOp("/fresh", b"x"), CreateOp("/no/parent", b"")],
    )
    assert isinstance(first_failure(results), NoNodeError)
    assert zk.kazoo.get("/kept")[0] == b"old" and zk.kazoo.exists("/fresh") is None

    results = commit(
        zk,
        [
            SetDataOp("/kept", b"new", 0),
            CreateOp("/fresh", b"x"),
            CreateOp("/seq-", b"", sequential=True),
            CheckVersionOp("/kept", 1),  # the set above, in the same multi-op, made it 1
        ],
    )
    assert first_failure(results) is None
    assert results[1] == "/fresh" and results[2].startswith("/seq-")
    assert zk.kazoo.get("/kept")[0] == b"new"
    assert isinstance(first_failure(commit(zk, [CreateOp("/fresh")])), NodeExistsError)
    assert first_failure(commit(zk, [DeleteOp("/fresh", 0), DeleteOp("/kept")])) is None
    assert zk.kazoo.exists("/fresh") is None and zk.kazoo.exists("/kept") is None


def test_a_write_with_a_stale_controller_epoch_version_is_refused_whole(
    zk: ZkSession, zk_connect: str
) -> None:
    first = try_become_controller(zk, 1, 0)
    assert first.won
    zk.kazoo.create("/target", b"v0")
    assert controller_write(zk, [SetDataOp("/target", b"v1")], first.epoch_zk_version) != []
    assert zk.kazoo.get("/target")[0] == b"v1"

    # a successor is elected once the first controller's /controller is gone
    successor = ZkSession.connect(zk_connect, session_timeout_s=4.0)
    try:
        zk.kazoo.delete(paths.CONTROLLER)
        second = try_become_controller(successor, 2, 0)
        assert second.won and second.epoch_zk_version != first.epoch_zk_version
        stale = first.epoch_zk_version
        with pytest.raises(ControllerMovedError):
            controller_write(zk, [SetDataOp("/target", b"zombie"), CreateOp("/also")], stale)
        with pytest.raises(ControllerMovedError):  # one stale key fails the whole call
            fenced(zk, {"a": [CreateOp("/a")], "b": [CreateOp("/b")]}, stale)
        # nothing the zombie sent reached ZooKeeper
        assert zk.kazoo.get("/target")[0] == b"v1"
        assert [zk.kazoo.exists(p) for p in ("/also", "/a", "/b")] == [None, None, None]

        # the current controller's writes go through; a key's own failure stays its own
        results = fenced(
            successor,
            {"set": [SetDataOp("/target", b"v2")], "gone": [DeleteOp("/never")]},
            second.epoch_zk_version,
        )
        assert isinstance(results["gone"], NoNodeError)
        assert results["set"].version == 2
        assert zk.kazoo.get("/target")[0] == b"v2"
        data, _ = zk.kazoo.get(paths.CONTROLLER_EPOCH)
        assert codec.decode_controller_epoch(data) == second.epoch
    finally:
        successor.close()
