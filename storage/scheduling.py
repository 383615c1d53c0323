"""What storage needs of ``timer.Scheduler``, as narrow protocols.

Storage registers its housekeeping (checkpoints, retention, flushes, cleaner threads) as
named scheduler tasks; ``timer.Scheduler`` satisfies both protocols, and tests pass a
recorder. ``TaskScheduler`` adds the lookup of a running task by name, which resizing the
cleaner threads needs to cancel the ones it retires.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Scheduler(Protocol):
    """Schedules a named task: once after ``delay_ms``, then every ``period_ms`` if given;
    ``blocking`` tasks run in a worker thread."""

    def schedule(
        self,
        name: str,
        fn: Callable[[], object],
        delay_ms: int,
        period_ms: int | None = None,
        blocking: bool = False,
    ) -> object: ...


class Cancellable(Protocol):
    def cancel(self) -> object: ...


class TaskScheduler(Scheduler, Protocol):
    """A scheduler whose tasks can be found by name."""

    def task(self, name: str) -> Cancellable | None: ...
