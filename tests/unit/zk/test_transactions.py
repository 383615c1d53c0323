"""zk.transactions without a server: typed operations reach kazoo's transaction builder in
order, the failure that matters is picked from a refused multi-op, and a fenced commit
puts the epoch check first and reports a failed check as ControllerMovedError.

(tests/integration/test_zk_transactions.py runs the same against a real ZooKeeper.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kazoo.exceptions import BadVersionError, NoNodeError, RolledBackError

from zk import paths
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


class Answer:
    """What commit_async returns: its ``get`` gives the per-operation results."""

    def __init__(self, results: list[Any]) -> None:
        self.results = results

    def get(self) -> list[Any]:
        return self.results


class RecordingTransaction:
    def __init__(self, kazoo: RecordingKazoo) -> None:
        self.kazoo = kazoo
        self.calls: list[tuple[Any, ...]] = []

    def create(self, path: str, value: bytes, ephemeral: bool, sequence: bool) -> None:
        self.calls.append(("create", path, value, ephemeral, sequence))

    def set_data(self, path: str, value: bytes, version: int) -> None:
        self.calls.append(("set", path, value, version))

    def delete(self, path: str, version: int) -> None:
        self.calls.append(("delete", path, version))

    def check(self, path: str, version: int) -> None:
        self.calls.append(("check", path, version))

    def commit_async(self) -> Answer:
        self.kazoo.committed.append(self.calls)
        return Answer(self.kazoo.answer(self.calls))

    def commit(self) -> list[Any]:
        return self.commit_async().get()


class RecordingKazoo:
    """Stands for a KazooClient: each transaction's operations are kept; ``answer``
    decides its results (by default every operation succeeds with True)."""

    def __init__(self) -> None:
        self.committed: list[list[tuple[Any, ...]]] = []
        self.answer: Callable[[list[tuple[Any, ...]]], list[Any]] = lambda calls: (
            [True] * len(calls)
        )

    def transaction(self) -> RecordingTransaction:
        return RecordingTransaction(self)


def recording_session() -> tuple[ZkSession, RecordingKazoo]:
    kazoo = RecordingKazoo()
    stand_in: Any = kazoo
    return ZkSession(stand_in), kazoo


def test_typed_operations_reach_kazoo_in_order() -> None:
    zk, kazoo = recording_session()
    assert (
        commit(
            zk,
            [
                CheckVersionOp("/c", 4),
                CreateOp("/a", b"x"),
                CreateOp("/q/n_", b"", ephemeral=True, sequential=True),
                SetDataOp("/b", b"y", 7),
                DeleteOp("/d"),
            ],
        )
        == [True] * 5
    )
    assert kazoo.committed == [
        [
            ("check", "/c", 4),
            ("create", "/a", b"x", False, False),
            ("create", "/q/n_", b"", True, True),
            ("set", "/b", b"y", 7),
            ("delete", "/d", -1),
        ]
    ]


def test_the_failure_that_refused_a_multi_op_is_picked() -> None:
    bad = BadVersionError()
    assert first_failure([RolledBackError(), bad, RolledBackError()]) is bad
    rolled = RolledBackError()
    assert first_failure([rolled]) is rolled
    assert first_failure(["/a", True]) is None


def test_fenced_multi_ops_start_with_the_epoch_check_one_per_key() -> None:
    zk, kazoo = recording_session()
    results = fenced(zk, {"a": [DeleteOp("/a")], "b": [DeleteOp("/b"), CreateOp("/c")]}, 3)
    check = ("check", paths.CONTROLLER_EPOCH, 3)
    assert kazoo.committed == [
        [check, ("delete", "/a", -1)],
        [check, ("delete", "/b", -1), ("create", "/c", b"", False, False)],
    ]
    assert results == {"a": True, "b": [True, True]}


def test_an_operations_failure_is_its_keys_result_not_an_error() -> None:
    zk, kazoo = recording_session()
    gone = NoNodeError()
    kazoo.answer = lambda calls: (
        [RolledBackError(), gone] if calls[1][1] == "/gone" else [True] * len(calls)
    )
    results = fenced(zk, {"gone": [DeleteOp("/gone")], "here": [DeleteOp("/here")]}, 3)
    assert results == {"gone": gone, "here": True}
    assert controller_write(zk, [DeleteOp("/gone")], 3) == [gone]


def test_a_stale_epoch_check_is_controller_moved() -> None:
    zk, kazoo = recording_session()
    kazoo.answer = lambda calls: [BadVersionError()] + [RolledBackError()] * (len(calls) - 1)
    with pytest.raises(ControllerMovedError, match="no longer at zkVersion 3"):
        fenced(zk, {0: [SetDataOp("/x", b"v")]}, 3)
