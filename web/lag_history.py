"""The lag of consumer groups over the last minutes, as the console saw it (pure).

Each time the console reads a group's lag (the groups list, a group's page, either as
JSON) it records the lag per topic with the time; a group's chart shows the points of the
last ``window_ms``. Points closer than ``min_gap_ms`` to the previous one replace it, so a
burst of requests does not crowd the chart. The console samples only what it is asked
for: a group page left open with ``?refresh=10`` draws a point every ten seconds.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LagPoint:
    time_ms: int
    lag: Mapping[str, int]

    @property
    def total(self) -> int:
        return sum(self.lag.values())


@dataclass
class LagHistory:
    window_ms: int
    min_gap_ms: int
    _points: dict[str, collections.deque[LagPoint]] = field(default_factory=dict)

    def record(self, group: str, time_ms: int, lag: Mapping[str, int]) -> None:
        points = self._points.setdefault(group, collections.deque())
        if points and time_ms - points[-1].time_ms < self.min_gap_ms:
            points.pop()
        points.append(LagPoint(time_ms, dict(lag)))
        while points and points[0].time_ms < time_ms - self.window_ms:
            points.popleft()

    def points(self, group: str, now_ms: int) -> list[LagPoint]:
        return [p for p in self._points.get(group, ()) if p.time_ms >= now_ms - self.window_ms]

    def forget(self, group: str) -> None:
        self._points.pop(group, None)
