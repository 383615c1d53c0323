"""The last stable offset's lag, read at scrape time, with few series whatever the load.

A partition's LSO lag is its high watermark minus its LSO: the offsets read_committed
consumers cannot read yet because a transaction before them is still open. Zero for every
partition without an open transaction, which is nearly all of them, so the per-partition
family names only the :data:`LSO_LAG_PARTITIONS` partitions with the largest non-zero lag
(the rest are summed into ``last_stable_offset_lag_max`` / the count, not listed): a broker
holding thousands of partitions with as many producers adds at most that many series.

A lag alone is not a fault: under a steady transactional load the LSO trails the high
watermark by about one transaction all the time. A *stuck* LSO is one that stays at the
same offset while records pile up behind it -- a transaction nobody ends (a hanging
transaction; the coordinator aborts what it knows of after ``transaction.max.timeout.ms``).
:class:`LsoWatch` keeps, per lagging partition, the LSO it last saw and since when (at
scrape resolution: the first scrape that saw it); ``last_stable_offset_stuck_seconds`` is
the longest such time over the partitions, the number the stuck-LSO alert watches. A
partition that stops lagging, or whose LSO moves, starts again from zero; one that leaves
this broker is forgotten. The watch is a plain state machine over (partition, LSO, high
watermark) observations and an injected clock, so it is tested without a broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from protocol.values import TopicPartition

#: the lagging partitions named per scrape (the largest lags)
LSO_LAG_PARTITIONS = 20


@dataclass(frozen=True, slots=True)
class LsoReport:
    """One scrape's numbers: the named partitions' lags (largest first), the largest
    lag, how many partitions lag, and the longest time an LSO has stayed put."""

    lags: list[tuple[TopicPartition, int]]
    max_lag: int
    lagging: int
    stuck_s: float


class LsoWatch:
    """See the module docstring. ``now()``: monotonic seconds."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._since: dict[TopicPartition, tuple[int, float]] = {}

    def observe(self, partitions: Iterable[tuple[TopicPartition, int, int]]) -> LsoReport:
        """``partitions``: (partition, LSO, high watermark) of every log held here."""
        now = self._now()
        lags: list[tuple[TopicPartition, int]] = []
        since: dict[TopicPartition, tuple[int, float]] = {}
        for tp, lso, high_watermark in partitions:
            lag = high_watermark - lso
            if lag <= 0:
                continue
            lags.append((tp, lag))
            seen = self._since.get(tp)
            since[tp] = seen if seen is not None and seen[0] == lso else (lso, now)
        self._since = since
        lags.sort(key=lambda e: (-e[1], e[0].topic, e[0].partition))
        stuck = max((now - t for _, t in since.values()), default=0.0)
        return LsoReport(
            lags=lags[:LSO_LAG_PARTITIONS],
            max_lag=lags[0][1] if lags else 0,
            lagging=len(lags),
            stuck_s=stuck,
        )
