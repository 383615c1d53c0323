"""broker.metrics.lso: the LSO lag report and how long an LSO has stayed put, over
(partition, LSO, high watermark) observations and a clock the test moves."""

from __future__ import annotations

from broker.metrics.lso import LSO_LAG_PARTITIONS, LsoWatch
from protocol.values import TopicPartition

A, B = TopicPartition("a", 0), TopicPartition("b", 3)


class Clock:
    def __init__(self) -> None:
        self.s = 100.0

    def __call__(self) -> float:
        return self.s


def test_partitions_without_lag_are_neither_named_nor_counted() -> None:
    report = LsoWatch(Clock()).observe([(A, 10, 10), (B, 4, 4)])
    assert (report.lags, report.max_lag, report.lagging, report.stuck_s) == ([], 0, 0, 0.0)


def test_an_lso_that_stays_put_while_lagging_counts_up_and_resets_when_it_moves() -> None:
    clock = Clock()
    watch = LsoWatch(clock)
    assert watch.observe([(A, 5, 8)]).stuck_s == 0.0
    clock.s += 30
    report = watch.observe([(A, 5, 20)])  # records pile up behind the same LSO
    assert (report.lags, report.max_lag, report.stuck_s) == ([(A, 15)], 15, 30.0)
    clock.s += 10
    assert watch.observe([(A, 6, 20)]).stuck_s == 0.0  # it moved
    clock.s += 10
    assert watch.observe([(A, 6, 20)]).stuck_s == 10.0
    assert watch.observe([(A, 20, 20)]).stuck_s == 0.0  # caught up
    clock.s += 10
    assert watch.observe([(A, 20, 25)]).stuck_s == 0.0  # a new transaction: from zero


def test_a_partition_that_leaves_is_forgotten() -> None:
    clock = Clock()
    watch = LsoWatch(clock)
    watch.observe([(A, 5, 8), (B, 1, 2)])
    clock.s += 50
    assert watch.observe([(B, 1, 2)]).stuck_s == 50.0
    assert watch.observe([(A, 5, 8), (B, 2, 2)]).stuck_s == 0.0


def test_only_the_largest_lags_are_named() -> None:
    many = [(TopicPartition("t", p), 0, p + 1) for p in range(LSO_LAG_PARTITIONS + 5)]
    report = LsoWatch(Clock()).observe(many)
    assert len(report.lags) == LSO_LAG_PARTITIONS
    assert report.lags[0] == (TopicPartition("t", LSO_LAG_PARTITIONS + 4), LSO_LAG_PARTITIONS + 5)
    assert min(lag for _, lag in report.lags) == 6
    assert (report.lagging, report.max_lag) == (LSO_LAG_PARTITIONS + 5, LSO_LAG_PARTITIONS + 5)
