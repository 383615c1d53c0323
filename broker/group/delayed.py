"""The group coordinator's delayed operations: the join phase and the session timers.

- ``DelayedJoin`` waits in the join purgatory, watched under the group's key, for every
  known member to rejoin, at most the rebalance timeout (the largest of the members'
  rebalance timeouts); either way the coordinator then ends the join phase.
- ``InitialDelayedJoin`` is the first rebalance of an Empty group: it waits
  ``group.initial.rebalance.delay.ms`` and, while new members keep arriving, again (at
  most the rebalance timeout in all), so that a group of consumers starting together
  gets one generation instead of one per member. Only its timeout completes it.
- ``DelayedSync`` waits, watched under the group's sync key, after a join phase ended:
  every member of the new generation must send its SyncGroup within the rebalance
  timeout. It completes quietly once all did (or the group moved on); at the timeout the
  coordinator removes the members that never synced and rebalances, so that one member
  that joined and then went silent (while still heartbeating) cannot hold the group in
  CompletingRebalance for ever. Kafka 3.x does the same with its pending-sync set.
- ``DelayedHeartbeat`` is one member's session timer in the heartbeat purgatory. Each
  heartbeat (or join, or sync) cancels the member's timer and starts a new one; a timer
  that runs out expires the member. Only the timeout counts: a timer completed by force
  (the broker shutting down) expires nobody.

The operations hold callbacks into the coordinator, not the coordinator itself, so they
stay free of its import. Event-loop bound, like every DelayedOperation.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from timer import DelayedOperation


def join_key(group_id: str) -> Hashable:
    """The join purgatory's watch key of a group."""
    return ("join", group_id)


def sync_key(group_id: str) -> Hashable:
    """The join purgatory's watch key of a group's pending syncs."""
    return ("sync", group_id)


def heartbeat_key(group_id: str, member_id: str) -> Hashable:
    """The heartbeat purgatory's watch key of one member."""
    return ("heartbeat", group_id, member_id)


class DelayedJoin(DelayedOperation):
    """Completes when ``all_joined()`` holds or at the rebalance timeout."""

    __slots__ = ("_all_joined", "_on_done")

    def __init__(
        self,
        rebalance_timeout_ms: int,
        all_joined: Callable[[], bool],
        on_done: Callable[[], None],
    ) -> None:
        super().__init__(rebalance_timeout_ms)
        self._all_joined = all_joined
        self._on_done = on_done

    def try_complete(self) -> bool:
        if self._all_joined():
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self._on_done()

    def on_expiration(self) -> None:
        pass


class InitialDelayedJoin(DelayedOperation):
    """The first join phase of an Empty group: ``delay_ms`` now, ``remaining_ms`` at most
    after it. ``on_done(remaining_ms)`` decides whether to wait again (see the module
    doc); its condition is only time."""

    __slots__ = ("_on_done", "remaining_ms")

    def __init__(self, delay_ms: int, remaining_ms: int, on_done: Callable[[int], None]) -> None:
        super().__init__(delay_ms)
        self.remaining_ms = remaining_ms
        self._on_done = on_done

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        self._on_done(self.remaining_ms)

    def on_expiration(self) -> None:
        pass


class DelayedSync(DelayedOperation):
    """Completes when ``settled()`` holds (everyone synced, or the generation is over);
    ``on_expired()`` runs when the rebalance timeout came first."""

    __slots__ = ("_on_expired", "_settled")

    def __init__(
        self,
        rebalance_timeout_ms: int,
        settled: Callable[[], bool],
        on_expired: Callable[[], None],
    ) -> None:
        super().__init__(rebalance_timeout_ms)
        self._settled = settled
        self._on_expired = on_expired

    def try_complete(self) -> bool:
        if self._settled():
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self._on_expired()


class DelayedHeartbeat(DelayedOperation):
    """One member's session timer: ``on_expired()`` runs when it runs out."""

    __slots__ = ("_on_expired",)

    def __init__(self, session_timeout_ms: int, on_expired: Callable[[], None]) -> None:
        super().__init__(session_timeout_ms)
        self._on_expired = on_expired

    def try_complete(self) -> bool:
        return False

    def on_complete(self) -> None:
        pass

    def on_expiration(self) -> None:
        self._on_expired()
