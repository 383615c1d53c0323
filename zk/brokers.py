"""Brokers: registration under /brokers/ids, the registered brokers, generated ids (blocking).

/brokers/ids/<id> is an ephemeral znode holding the broker's endpoints (zk.codec); its
czxid is the broker epoch, which grows each time the broker registers again, so requests
meant for an earlier incarnation are told apart. It lives as long as the session that
created it: a crashed broker's registration stays until ZooKeeper expires that session.

Generated ids: /brokers/seqid's dataVersion, bumped by an unconditional write, plus
reserved.broker.max.id; two brokers starting at once get different ids.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.protocol.states import WatchedEvent

from zk import codec, paths
from zk.errors import BrokerIdInUseError
from zk.model import BrokerInfo
from zk.session import Watch, ZkSession

log = logging.getLogger(__name__)

#: Kafka's default reserved.broker.max.id: generated ids start above it.
RESERVED_BROKER_MAX_ID = 1000


def generate_broker_id(session: ZkSession, reserved_max_id: int = RESERVED_BROKER_MAX_ID) -> int:
    """A cluster-unique broker id: /brokers/seqid's new dataVersion + ``reserved_max_id``."""
    session.kazoo.ensure_path(paths.BROKER_SEQID)
    stat = session.kazoo.set(paths.BROKER_SEQID, b"", version=-1)
    return int(stat.version) + reserved_max_id


def register_broker(
    session: ZkSession,
    info: BrokerInfo,
    timestamp_ms: int,
    attempts: int = 5,
    stale_wait_s: float = 0.0,
) -> int:
    """Create the ephemeral /brokers/ids/<id>; return the broker epoch (its czxid).

    NodeExists is expected after a lost session: if the znode belongs to our current
    session (a retried create that had succeeded) it is ours; if it belongs to one of our
    own expired sessions it is removed and the create retried. If another session owns
    it, that may be this broker's previous process, killed so recently that ZooKeeper has
    not expired its session yet: we wait, up to ``stale_wait_s`` in all, for the znode to
    go (a watch wakes us), then create it. Only when it is still there after that is the
    id taken by a live broker: BrokerIdInUseError.
    """
    kazoo = session.kazoo
    path = paths.broker(info.id)
    data = codec.encode_broker(info, timestamp_ms)
    kazoo.ensure_path(paths.BROKER_IDS)
    deadline = time.monotonic() + stale_wait_s
    while attempts > 0:
        current = session.session_id
        try:
            kazoo.create(path, data, ephemeral=True)
        except NodeExistsError:
            stat = kazoo.exists(path)
            if stat is None:
                attempts -= 1
                continue  # it just went away: try again
            if stat.ephemeralOwner == current:
                return int(stat.czxid)
            if stat.ephemeralOwner in session.past_sessions:
                log.info("removing broker %s's registration from an expired session", info.id)
                with contextlib.suppress(NoNodeError, BadVersionError):
                    kazoo.delete(path, version=stat.version)
                attempts -= 1
                continue
            if _wait_until_gone(session, path, stat.ephemeralOwner, deadline):
                continue  # not an attempt used: the znode expired as expected
            raise BrokerIdInUseError(
                f"broker id {info.id} is registered by another session "
                f"(0x{stat.ephemeralOwner:x}): is another broker using it?"
            ) from None
        stat = kazoo.exists(path)
        if stat is None or stat.ephemeralOwner != session.session_id:
            attempts -= 1
            continue  # the session changed between create and exists: do it again
        if current is not None:
            session.past_sessions.add(current)
        return int(stat.czxid)
    raise BrokerIdInUseError(f"could not register broker {info.id}: too many attempts")


def _wait_until_gone(session: ZkSession, path: str, owner: int, deadline: float) -> bool:
    """Block until the znode at ``path`` is deleted (True) or ``deadline`` passes."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    log.warning(
        "%s is registered by session 0x%x, not ours: if it is this broker's previous run "
        "(a crash or kill), ZooKeeper removes it when that session expires; waiting up "
        "to %.1fs for that before registering",
        path,
        owner,
        remaining,
    )
    gone = threading.Event()

    def on_event(event: WatchedEvent) -> None:
        gone.set()  # any change (normally the deletion): look again

    if session.kazoo.exists(path, watch=on_event) is None:
        return True
    gone.wait(remaining)
    if session.kazoo.exists(path) is None:
        log.info("%s expired: registering", path)
        return True
    return time.monotonic() < deadline  # changed but still there: look again


def deregister_broker(session: ZkSession, broker_id: int) -> None:
    """Delete /brokers/ids/<id> if this session owns it."""
    try:
        stat = session.kazoo.exists(paths.broker(broker_id))
        if stat is not None and stat.ephemeralOwner == session.session_id:
            session.kazoo.delete(paths.broker(broker_id), version=stat.version)
    except (NoNodeError, BadVersionError):
        pass


def get_broker_ids(session: ZkSession, watch: Watch | None = None) -> list[int]:
    return sorted(int(c) for c in session.children(paths.BROKER_IDS, watch) if c.isdigit())


def get_broker(session: ZkSession, broker_id: int) -> BrokerInfo | None:
    found = session.get(paths.broker(broker_id))
    if found is None:
        return None
    data, stat = found
    return codec.decode_broker(broker_id, data, int(stat.czxid))


def get_brokers(session: ZkSession, ids: Iterable[int]) -> dict[int, BrokerInfo]:
    """The registered brokers among ``ids``; an unreadable registration is left out."""
    out = {}
    for bid in ids:
        try:
            info = get_broker(session, bid)
        except codec.ZkDataError as exc:
            log.error("ignoring broker %s: %s", bid, exc)  # as if it were not registered
            continue
        if info is not None:
            out[bid] = info
    return out
