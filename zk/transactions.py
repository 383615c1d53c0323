"""Multi-ops: typed operations, plain transactions and fenced (epoch-checked) ones.

A ZooKeeper multi-op applies all of its operations or none. The operations are values
(``CreateOp``, ``SetDataOp``, ``DeleteOp``, ``CheckVersionOp``) that the znode families
build and ``commit`` hands to kazoo's transaction builder (which adds the chroot).

Results: kazoo's ``commit()`` does not raise when an operation fails; it returns one
result per operation (a path for a create, a ZnodeStat for a set, True for a delete or a
check) or, for every operation of a refused multi-op, an exception: the operation that
failed has its own (NoNodeError, BadVersionError, ...), the others RolledBackError.
``first_failure`` picks the one that matters.

Fencing: every write the controller makes goes through ``fenced``, which puts a check of
/controller_epoch's zkVersion (the one this controller's election produced) first in each
multi-op. A controller that lost its job without noticing (a long pause, a partition)
holds an old zkVersion: each of its writes is refused whole, and ControllerMovedError
says so, so that it resigns at once.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kazoo.client import TransactionRequest
from kazoo.exceptions import RolledBackError, SessionExpiredError

from zk import paths
from zk.errors import ControllerMovedError
from zk.session import ZkSession

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class CreateOp:
    """Create ``path``; with ``sequential``, ZooKeeper appends a 10-digit counter."""

    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    """Replace ``path``'s data if it is at ``version`` (-1: any version)."""

    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    """Delete the leaf ``path`` if it is at ``version`` (-1: any version)."""

    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class CheckVersionOp:
    """Refuse the whole multi-op unless ``path`` is at ``version``."""

    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckVersionOp


def _build(session: ZkSession, ops: Sequence[Op]) -> TransactionRequest:
    tx = session.kazoo.transaction()
    for op in ops:
        match op:
            case CreateOp(path, data, ephemeral, sequential):
                tx.create(path, data, ephemeral=ephemeral, sequence=sequential)
            case SetDataOp(path, data, version):
                tx.set_data(path, data, version)
            case DeleteOp(path, version):
                tx.delete(path, version)
            case CheckVersionOp(path, version):
                tx.check(path, version)
    return tx


def commit(session: ZkSession, ops: Sequence[Op]) -> list[Any]:
    """Run ``ops`` as one multi-op; the per-operation results (see the module doc)."""
    return list(_build(session, ops).commit())


def commit_async(session: ZkSession, ops: Sequence[Op]) -> Any:
    """Send ``ops`` as one multi-op without waiting; ``.get()`` on the answer returns the
    per-operation results of :func:`commit` (for many multi-ops in flight at once)."""
    return _build(session, ops).commit_async()


def first_failure(results: Sequence[Any]) -> Exception | None:
    """The exception that made a multi-op fail (kazoo marks the others RolledBackError)."""
    for r in results:
        if isinstance(r, Exception) and not isinstance(r, RolledBackError):
            return r
    for r in results:
        if isinstance(r, Exception):
            return r
    return None


def fenced(
    session: ZkSession, ops_by_key: Mapping[K, Sequence[Op]], epoch_zk_version: int
) -> dict[K, Any]:
    """Run one epoch-checked multi-op per key, all in flight at once.

    Returns, per key, the result of its operation (a list of results when it has several)
    or the exception that failed it. Raises ControllerMovedError if any multi-op failed
    its /controller_epoch check, or the session expired.
    """
    check = CheckVersionOp(paths.CONTROLLER_EPOCH, epoch_zk_version)
    pending = [
        (key, _build(session, [check, *ops]).commit_async()) for key, ops in ops_by_key.items()
    ]
    out: dict[K, Any] = {}
    moved = False
    for key, result in pending:
        try:
            results = result.get()
        except SessionExpiredError as exc:
            raise ControllerMovedError("ZooKeeper session expired") from exc
        if isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
            moved = True  # the epoch check itself failed: the whole multi-op refused
            out[key] = results[0]
            continue
        failure = first_failure(results[1:])
        if failure is not None:
            out[key] = failure
        else:
            out[key] = results[1] if len(results) == 2 else list(results[1:])
    if moved:
        raise ControllerMovedError(
            f"/controller_epoch is no longer at zkVersion {epoch_zk_version}"
        )
    return out


def controller_write(session: ZkSession, ops: Sequence[Op], epoch_zk_version: int) -> list[Any]:
    """One epoch-checked multi-op of ``ops``; the per-op results (without the check's)."""
    results = fenced(session, {0: ops}, epoch_zk_version)[0]
    return list(results) if isinstance(results, list) else [results]
