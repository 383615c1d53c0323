"""DelayedOperation: a request that waits for a condition or a timeout, whichever is first.

Subclasses (DelayedProduce, DelayedFetch, DelayedCreateTopics, the group coordinator's
joins and heartbeats) supply three things:

- ``try_complete()``: check the condition; if it holds, call ``force_complete()`` and
  return its result. Called when something the operation watches changes.
- ``on_complete()``: the one and only completion action (usually: send the response).
- ``on_expiration()``: extra work when completion came from the timeout (metrics).

Completion happens exactly once, by whoever gets there first: a try_complete that sees
the condition, an explicit force_complete, or the timer (``run``, which force-completes
and then calls on_expiration). The loser of that race sees ``False``.

Thread-safety assumptions (they replace Kafka's per-operation lock):

- Every method runs on the event loop's thread; other threads hand work over with
  ``loop.call_soon_threadsafe``.
- ``try_complete``, ``on_complete`` and ``on_expiration`` are synchronous (they never
  await), so each runs to completion without another coroutine interleaving. Checking
  ``_completed`` and setting it is therefore atomic without a lock.
- Re-entrance is the one remaining hazard: on_complete may call back into a purgatory
  (e.g. a produce completing wakes fetches). ``_completed`` is set *before* on_complete
  runs and the timer entry is cancelled first, so a re-entrant try_complete, expiry or
  force_complete of the same operation finds it completed and does nothing.
"""

from __future__ import annotations

from abc import abstractmethod

from timer.timer_task import TimerTask


class DelayedOperation(TimerTask):
    """An operation completed by its condition, by force, or by its timeout, once."""

    __slots__ = ("_completed",)

    def __init__(self, delay_ms: int) -> None:
        # The base named rather than super(): a zero-argument super() call costs about as
        # much as the rest of this constructor, paid once per request that waits.
        TimerTask.__init__(self, delay_ms)
        self._completed = False

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now unless already completed; True only for the caller that did.

        Cancels the timeout first (so the timer lets go of the operation at once) and
        then runs ``on_complete``.
        """
        if self._completed:
            return False
        self._completed = True
        self.cancel()
        self.on_complete()
        return True

    @abstractmethod
    def try_complete(self) -> bool:
        """Complete if the condition holds (via force_complete); True if this call did."""

    @abstractmethod
    def on_complete(self) -> None:
        """The completion action; runs exactly once."""

    @abstractmethod
    def on_expiration(self) -> None:
        """Runs after on_complete when the timeout, not the condition, completed it."""

    def safe_try_complete(self) -> bool:
        """try_complete unless already completed (Kafka's safeTryComplete).

        Kafka takes the operation's lock here; on one event-loop thread with synchronous
        callbacks the completed flag is enough (see the module doc).
        """
        if self._completed:
            return False
        return self.try_complete()

    def run(self) -> None:
        """The timeout (called by the timer): force-complete, then on_expiration."""
        if self.force_complete():
            self.on_expiration()
