"""Whether the broker can reach ZooKeeper now, for the shutdown steps that need it.

Three shutdown steps talk to ZooKeeper: the controlled shutdown (it looks the controller
up in /controller), the controller's resignation and the deregistration. With ZooKeeper
gone -- stopped before the brokers, or unreachable -- kazoo queues each request until it
reconnects, which it never does: every such step would wait out its whole bound (30 s
each), and a broker told to stop would take a minute or more to do so.

So these steps run only while the connection is up, and give up the moment it drops:

- ``ZooKeeperReachability`` follows kazoo's connection state (its listener runs on
  kazoo's thread and only hands the state to the loop);
- ``run_while_reachable(what, awaitable)`` skips the step at once when ZooKeeper is not
  reachable, and abandons it when the connection drops while it runs; either way it logs
  which step and why, and returns False.

Giving up loses nothing that matters: without the session the broker's registration and
/controller go away when the session expires, and the controller that notices moves the
leaderships as for a broker that died; only the gentler hand-over is lost. A broker in
an ensemble that merely switches servers is disconnected for a moment only; it gives up a
step it would have finished, the same trade.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

log = logging.getLogger(__name__)

T = TypeVar("T")


def is_reachable(state: str) -> bool:
    """kazoo's SUSPENDED (connection lost, session perhaps alive) and LOST (session
    expired) both mean: a request now would wait for a connection that may never come."""
    return bool(state == KazooState.CONNECTED)


class ZooKeeperReachability:
    """Follows ``client``'s connection state on the running loop. Event-loop bound, but
    created and closed on it; kazoo calls the listener on its own thread."""

    def __init__(self, client: KazooClient) -> None:
        self._client = client
        self._loop = asyncio.get_running_loop()
        self._reachable = asyncio.Event()
        self._unreachable = asyncio.Event()
        self._apply(is_reachable(client.state))
        client.add_listener(self._on_state)

    @property
    def reachable(self) -> bool:
        return self._reachable.is_set()

    def close(self) -> None:
        self._client.remove_listener(self._on_state)

    def _on_state(self, state: str) -> None:  # kazoo's thread
        reachable = is_reachable(state)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            self._loop.call_soon_threadsafe(self._apply, reachable)

    def _apply(self, reachable: bool) -> None:
        if reachable:
            self._unreachable.clear()
            self._reachable.set()
        else:
            self._reachable.clear()
            self._unreachable.set()

    async def run_while_reachable(
        self, what: str, awaitable: Awaitable[T], timeout_s: float
    ) -> bool:
        """Run ``awaitable`` (bounded by ``timeout_s``) unless ZooKeeper is unreachable or
        becomes so meanwhile. True if it ran to the end; failures propagate."""
        if not self.reachable:
            log.warning("shutdown: %s skipped: ZooKeeper is unreachable", what)
            if asyncio.iscoroutine(awaitable):
                awaitable.close()  # never started: no "never awaited" warning
            return False
        step = asyncio.ensure_future(awaitable)
        lost = asyncio.ensure_future(self._unreachable.wait())
        try:
            done, _ = await asyncio.wait(
                {step, lost}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            lost.cancel()
        if step in done:
            step.result()
            return True
        step.cancel()
        if lost in done:
            log.warning("shutdown: %s given up: the connection to ZooKeeper was lost", what)
            return False
        raise TimeoutError
