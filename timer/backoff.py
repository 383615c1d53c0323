"""ExponentialBackoff: how long to wait before retry number N, as Kafka's clients and
brokers compute it.

The wait grows geometrically from ``initial_s`` by ``multiplier`` per failed attempt and is
capped at ``max_s``; then it is spread by up to ``jitter`` either way (0.2: anywhere in
80%..120% of the capped value), so that many clients that failed together (a broker
restart, a lost ZooKeeper) do not retry in lockstep. A jittered wait may therefore exceed
``max_s`` by the jitter; Kafka's ExponentialBackoff behaves the same.

With ``multiplier`` 1 it is a constant backoff; with ``jitter`` 0 it is deterministic.
The random source is injected so that a test can pin it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ExponentialBackoff:
    initial_s: float
    max_s: float
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.initial_s < 0 or self.max_s < self.initial_s:
            raise ValueError(f"backoff needs 0 <= initial ({self.initial_s}) <= max ({self.max_s})")
        if self.multiplier < 1 or not 0 <= self.jitter < 1:
            raise ValueError("backoff needs multiplier >= 1 and 0 <= jitter < 1")

    def delay_s(self, failures: int, rand: Callable[[], float] = random.random) -> float:
        """The wait after ``failures`` consecutive failures (1 for the first retry)."""
        exponent = max(failures - 1, 0)
        if self.multiplier == 1 or self.initial_s == 0:
            term = self.initial_s
        else:
            # past the cap the power would only overflow: compare in logarithms
            room = math.log(self.max_s / self.initial_s, self.multiplier)
            term = self.max_s if exponent >= room else self.initial_s * self.multiplier**exponent
        if self.jitter == 0:
            return term
        return term * (1 - self.jitter + 2 * self.jitter * rand())
