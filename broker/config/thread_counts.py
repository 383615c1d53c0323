"""How far a running broker's worker pools may be resized in one dynamic config change.

A pool size (``num.io.threads``, ``num.network.threads``, ``num.replica.fetchers``,
``num.recovery.threads.per.data.dir``, ``background.threads``, ``log.cleaner.threads``)
changed by AlterConfigs must stay at 1 or more and within half to double its current
value, both ends included (half rounds down: 3 may go to 1). Kafka applies the same rule,
so that one mistyped value cannot multiply a broker's threads, or starve it, at once; a
larger change is made in steps. The rule compares the broker's effective value before
and after the change, so it applies alike to a broker's own set and to the cluster
default, and a key that does not change is never judged (a restart may have set any
size from the static file).

Pure: the two configurations in, the refusals out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.config.keys import THREAD_COUNT_KEYS

if TYPE_CHECKING:
    from broker.config.broker_config import BrokerConfig

#: every pool size under the halve-or-double rule
RESIZABLE_POOL_KEYS: Final = (*THREAD_COUNT_KEYS, "log.cleaner.threads")


def resize_problem(key: str, current: int, new: int) -> str | None:
    """Why ``key`` may not go from ``current`` to ``new`` threads in one change (the
    message names the key and both values), None when it may."""
    if new == current:
        return None
    failed = f"Dynamic thread count update validation failed for {key}={new}"
    if new < 1:
        return f"{failed}, value should be at least 1"
    if new < current // 2:
        return f"{failed}, value should be at least half the current value {current}"
    if new > current * 2:
        return f"{failed}, value should not be greater than double the current value {current}"
    return None


def resize_problems(current: BrokerConfig, new: BrokerConfig) -> list[str]:
    """The refusals of every pool size that ``new`` changes from ``current``, in key order."""
    problems = (
        resize_problem(key, current.get_int(key), new.get_int(key)) for key in RESIZABLE_POOL_KEYS
    )
    return [problem for problem in problems if problem is not None]
