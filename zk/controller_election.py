"""Controller election: /controller and /controller_epoch (blocking).

/controller is an ephemeral znode naming the active controller; /controller_epoch counts
the elections. A broker becomes controller by creating the first and bumping the second
in one multi-op, so there is never a controller whose epoch was not bumped, nor a bumped
epoch without a controller. The zkVersion that bump leaves on /controller_epoch is what
the new controller's writes are fenced on (zk.transactions.fenced).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from zk import codec, paths
from zk.model import INITIAL_CONTROLLER_EPOCH
from zk.session import Watch, ZkSession
from zk.transactions import CreateOp, Op, SetDataOp, commit, first_failure

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerElection:
    """The outcome of one attempt to become controller."""

    won: bool
    controller_id: int | None
    epoch: int = 0
    epoch_zk_version: int = 0


def get_controller_id(session: ZkSession, watch: Watch | None = None) -> int | None:
    """The active controller's broker id; with ``watch``, armed on /controller either way."""
    found = session.get(paths.CONTROLLER, watch)
    return None if found is None else codec.decode_controller(found[0])


def get_controller_epoch(session: ZkSession) -> tuple[int, int] | None:
    """(epoch, zkVersion of /controller_epoch), or None before the first election."""
    found = session.get(paths.CONTROLLER_EPOCH)
    if found is None:
        return None
    return codec.decode_controller_epoch(found[0]), int(found[1].version)


def try_become_controller(
    session: ZkSession, broker_id: int, timestamp_ms: int
) -> ControllerElection:
    """Create /controller and bump /controller_epoch in one multi-op. Losing returns the
    winner's id."""
    for _ in range(10):
        current = get_controller_epoch(session)
        if current is None:
            with contextlib.suppress(NodeExistsError):
                session.kazoo.create(
                    paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(INITIAL_CONTROLLER_EPOCH)
                )
            continue
        epoch, version = current
        ops: list[Op] = [
            CreateOp(
                paths.CONTROLLER, codec.encode_controller(broker_id, timestamp_ms), ephemeral=True
            ),
            SetDataOp(paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(epoch + 1), version),
        ]
        results = commit(session, ops)
        failure = first_failure(results)
        if failure is None:
            return ControllerElection(True, broker_id, epoch + 1, int(results[1].version))
        if isinstance(failure, NodeExistsError):
            found = session.get(paths.CONTROLLER)
            if found is None:
                continue  # it went away meanwhile: try again
            data, stat = found
            winner = codec.decode_controller(data)
            if stat.ephemeralOwner == session.session_id and winner == broker_id:
                # our own earlier attempt succeeded (e.g. retried after a connection loss)
                mine = get_controller_epoch(session)
                if mine is not None:
                    return ControllerElection(True, broker_id, mine[0], mine[1])
            return ControllerElection(False, winner)
        if isinstance(failure, BadVersionError):
            continue  # somebody bumped the epoch between our read and our write
        raise failure
    return ControllerElection(False, get_controller_id(session))


def resign_controller(session: ZkSession, broker_id: int, timeout_s: float = 5.0) -> bool:
    """Delete /controller if it is ours (a clean shutdown or a fenced controller).

    Bounded: a shutdown must not hang on a ZooKeeper that cannot be reached (the
    session's expiry removes the znode then anyway). True if it was deleted.
    """
    kazoo = session.kazoo
    try:
        data, stat = kazoo.get_async(paths.CONTROLLER).get(timeout=timeout_s)
        if (
            codec.decode_controller(bytes(data)) != broker_id
            or stat.ephemeralOwner != session.session_id
        ):
            return False
        kazoo.delete_async(paths.CONTROLLER, version=stat.version).get(timeout=timeout_s)
        return True
    except (NoNodeError, BadVersionError, codec.ZkDataError):
        return False
    except (KazooException, KazooTimeoutError) as exc:
        log.warning("could not remove /controller: %s", exc or type(exc).__name__)
        return False
