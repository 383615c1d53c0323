"""ZkSession: one kazoo connection and the reads every znode family shares (blocking).

A session is what ZooKeeper ties ephemeral znodes to (a broker's registration, the
controller's /controller). kazoo reconnects on its own and, after an expiry, starts a new
session on the same KazooClient: ``past_sessions`` remembers the ids this process used
before, so that a registration left by one of them is recognised as ours to replace.

Everything here blocks on ZooKeeper and may be called from any thread (kazoo is thread
safe); asyncio code reaches it only through zk.facade. The znode families (zk.brokers,
zk.topics, ...) are functions over a ZkSession.

Watches: ``get`` and ``children`` take an optional kazoo watch, called once on kazoo's
own thread at the next change. ``get`` on a missing znode arms an existence watch
instead, so that the znode's creation is noticed too.

The connect string may end in a chroot (``host:port/kafka``); ``connect`` creates it first
when it is missing, as Kafka does, since kazoo would otherwise work in a path that does
not exist.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from zk import codec, paths
from zk.errors import ZooKeeperUnavailableError

Watch = Callable[[WatchedEvent], None]


class ZkSession:
    def __init__(self, kazoo: KazooClient) -> None:
        self.kazoo = kazoo
        #: session ids this process used before: their leftover ephemerals are ours to remove
        self.past_sessions: set[int] = set()

    @classmethod
    def connect(
        cls, hosts: str, session_timeout_s: float = 18.0, connect_timeout_s: float = 15.0
    ) -> ZkSession:
        """Connect (blocking), creating the chroot if needed; ZooKeeperUnavailableError,
        with the address, when no server answers within ``connect_timeout_s`` (which
        bounds both connections: the chroot's and the session's)."""
        deadline = time.monotonic() + connect_timeout_s
        ensure_chroot(hosts, connect_timeout_s)
        client = KazooClient(hosts=hosts, timeout=session_timeout_s)
        try:
            # a moment at least: the chroot's client just reached a server
            client.start(timeout=max(deadline - time.monotonic(), min(connect_timeout_s, 1.0)))
        except KazooTimeoutError as exc:
            client.close()
            raise ZooKeeperUnavailableError(
                f"could not connect to ZooKeeper at {hosts} within {connect_timeout_s:g}s"
            ) from exc
        return cls(client)

    def close(self) -> None:
        self.kazoo.stop()
        self.kazoo.close()

    @property
    def session_id(self) -> int | None:
        cid = self.kazoo.client_id
        return int(cid[0]) if cid else None

    def get(self, path: str, watch: Watch | None = None) -> tuple[bytes, ZnodeStat] | None:
        """The znode's data and stat, None when it does not exist."""
        try:
            data, stat = self.kazoo.get(path, watch=watch)
        except NoNodeError:
            # with a watch, arm an existence watch instead, so creation is noticed
            if watch is not None and self.kazoo.exists(path, watch=watch) is not None:
                return self.get(path, watch)
            return None
        return bytes(data or b""), stat

    def children(self, path: str, watch: Watch | None = None) -> list[str]:
        """The znode's children, sorted; empty when it does not exist."""
        try:
            return sorted(self.kazoo.get_children(path, watch=watch))
        except NoNodeError:
            return []


def ensure_chroot(hosts: str, connect_timeout_s: float) -> None:
    """Create the chroot of ``host:port[,...]/chroot`` if it is missing (blocking)."""
    servers, slash, chroot = hosts.partition("/")
    if not slash or not chroot.strip("/"):
        return
    client = KazooClient(hosts=servers, timeout=max(connect_timeout_s, 1.0))
    try:
        client.start(timeout=connect_timeout_s)
    except KazooTimeoutError as exc:
        client.close()
        raise ZooKeeperUnavailableError(
            f"could not connect to ZooKeeper at {hosts} within {connect_timeout_s:g}s"
        ) from exc
    try:
        client.ensure_path("/" + chroot.strip("/"))
    finally:
        client.stop()
        client.close()


def ensure_persistent_paths(session: ZkSession) -> None:
    """Create Kafka's top-level persistent znodes (idempotent)."""
    for path in paths.PERSISTENT_PATHS:
        session.kazoo.ensure_path(path)


def get_or_create_cluster_id(session: ZkSession, proposed: str | None = None) -> str:
    """/cluster/id: the id the first broker wrote; written now (``proposed`` or a new
    one) if there is none yet."""
    found = session.get(paths.CLUSTER_ID)
    if found is not None:
        return codec.decode_cluster_id(found[0])
    cluster_id = proposed or codec.new_cluster_id()
    try:
        session.kazoo.create(paths.CLUSTER_ID, codec.encode_cluster_id(cluster_id), makepath=True)
        return cluster_id
    except NodeExistsError:
        # another broker won the race: everybody uses the first id written
        data, _ = session.kazoo.get(paths.CLUSTER_ID)
        return codec.decode_cluster_id(data)
