"""What a broker's start-up does against the world outside its own objects: reach
ZooKeeper (creating the chroot, retrying while it is unreachable), and let a worker
thread run a function on the event loop. ``StartupError``: a broker that cannot start,
with a message that says why (no traceback needed).

The first ZooKeeper connection is bounded, as Kafka's is: attempts (each one a client
that keeps trying the servers of the connect string for a couple of seconds) go on until
``zookeeper.connection.timeout.ms`` (zookeeper.session.timeout.ms when unset) has passed
since the first, then start-up fails with Kafka's words for it ("Timed out waiting for
connection while in state: CONNECTING"), naming ZooKeeper, its address and the timeout,
and the broker exits non-zero. A broker left retrying for ever looks started to whoever
launched it and serves nothing; a supervisor restarting a failed broker is the usual
answer to a ZooKeeper that comes later. Only the first connection is bounded: once
connected, kazoo reconnects by itself, and a lost or expired session is the business of
the reachability watch and of the session-expiry handling, not of this module."""

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
#: the most time one connection attempt is given: the wait is cut into attempts of this
#: size, each reported, so that a user watching a broker wait for an absent ZooKeeper sees
#: why (rather than silence for zookeeper.connection.timeout.ms), and a stop signal during
#: the wait is not held up by a client thread that still has long to go
ZK_ATTEMPT_MAX_S = 2.0
#: the least time an attempt is given, even when the deadline is nearer: a client needs a
#: moment to connect at all, and the deadline is checked again after it anyway
MIN_ATTEMPT_S = 0.1

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


async def connect_zookeeper(
    config: BrokerConfig,
    zk_connect: ZkConnect,
    clock: Callable[[], float] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> ZkFacade:
    """A session with zookeeper.connect, tried again after ``ZK_RETRY_BACKOFF`` with a
    clear message while ZooKeeper is unreachable, and StartupError once
    zookeeper.connection.timeout.ms has passed without one (cancel to give up sooner).
    Each attempt is given the time left, ``ZK_ATTEMPT_MAX_S`` at most. ``clock``:
    monotonic seconds (the running loop's unless given); ``sleep``: the wait between
    attempts."""
    hosts = config.get_str("zookeeper.connect")
    if not hosts:
        raise StartupError("zookeeper.connect is not set")
    session_s = config.get_int("zookeeper.session.timeout.ms") / 1000
    timeout_ms = config.zookeeper_connection_timeout_ms
    now = clock if clock is not None else asyncio.get_running_loop().time
    deadline = now() + timeout_ms / 1000
    attempt = 0
    while True:
        attempt += 1
        try:
            attempt_s = min(max(deadline - now(), MIN_ATTEMPT_S), ZK_ATTEMPT_MAX_S)
            zk = await zk_connect(hosts, session_s, attempt_s)
        except Exception as exc:  # kazoo raises its own timeout types; all mean "retry"
            left_s = deadline - now()
            if left_s <= 0:
                raise StartupError(
                    f"Timed out waiting for connection to ZooKeeper at {hosts} while in state: "
                    f"CONNECTING (zookeeper.connection.timeout.ms={timeout_ms}; last attempt: "
                    f"{type(exc).__name__} {exc}); is it running?"
                ) from exc
            wait_s = min(ZK_RETRY_BACKOFF.delay_s(attempt), left_s)
            message = (
                f"cannot connect to ZooKeeper at {hosts} (attempt {attempt}: "
                f"{type(exc).__name__} {exc}); is it running? retrying in {wait_s:.1f}s "
                f"(giving up in {left_s:.1f}s: zookeeper.connection.timeout.ms={timeout_ms})"
            )
            log.error(message)
            await sleep(wait_s)
            continue
        log.info("connected to ZooKeeper at %s (session 0x%x)", hosts, zk.session_id or 0)
        return zk
