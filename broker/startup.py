"""What a broker's start-up does against the world outside its own objects: reach
ZooKeeper (creating the chroot, retrying while it is unreachable), and let a worker
thread run a function on the event loop. ``StartupError``: a broker that cannot start,
with a message that says why (no traceback needed)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Awaitable, Callable

from broker.config import BrokerConfig
from timer.backoff import ExponentialBackoff
from zk.facade import ZkFacade

log = logging.getLogger(__name__)

#: the wait between ZooKeeper connection attempts at startup: from half a second, doubling,
#: up to 2 s (jittered), so that a ZooKeeper started beside the broker is found quickly
ZK_RETRY_BACKOFF = ExponentialBackoff(0.5, 2.0)

#: connects to ZooKeeper: (hosts, session timeout s, connection timeout s) -> client
ZkConnect = Callable[[str, float, float], Awaitable[ZkFacade]]


class StartupError(Exception):
    """The broker cannot start; the message says why (no traceback needed)."""


def on_loop(loop: asyncio.AbstractEventLoop) -> Callable[[Callable[[], bool]], bool]:
    """A runner of functions on ``loop``, called from a worker thread, that waits for
    the result: the log cleaner swaps segments this way, on the thread that owns the
    logs (called on the loop itself, it runs the function at once)."""

    def run(fn: Callable[[], bool]) -> bool:
        try:
            if asyncio.get_running_loop() is loop:
                return fn()
        except RuntimeError:  # no loop in this thread: the usual case
            pass
        future: concurrent.futures.Future[bool] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the waiting thread, which raises it
                future.set_exception(exc)

        loop.call_soon_threadsafe(call)
        return future.result()

    return run


async def connect_zookeeper(config: BrokerConfig, zk_connect: ZkConnect) -> ZkFacade:
    """A session with zookeeper.connect, retried after ``ZK_RETRY_BACKOFF`` with a
    clear message while ZooKeeper is unreachable (cancel to give up)."""
    hosts = config.get_str("zookeeper.connect")
    if not hosts:
        raise StartupError("zookeeper.connect is not set")
    session_s = config.get_int("zookeeper.session.timeout.ms") / 1000
    connect_s = config.zookeeper_connection_timeout_ms / 1000
    attempt = 0
    while True:
        attempt += 1
        try:
            zk = await zk_connect(hosts, session_s, connect_s)
        except Exception as exc:  # kazoo raises its own timeout types; all mean "retry"
            wait_s = ZK_RETRY_BACKOFF.delay_s(attempt)
            message = (
                f"cannot connect to ZooKeeper at {hosts} (attempt {attempt}: "
                f"{type(exc).__name__} {exc}); is it running? retrying in {wait_s:.1f}s"
            )
            log.error(message)
            await asyncio.sleep(wait_s)
            continue
        log.info("connected to ZooKeeper at %s (session 0x%x)", hosts, zk.session_id or 0)
        return zk
