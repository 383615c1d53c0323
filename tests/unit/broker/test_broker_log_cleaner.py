"""The broker's side of the log cleaner: swaps run on the event loop, and the cleaner's
numbers reach the metrics endpoint."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from broker.metrics import BrokerMetrics
from broker.startup import on_loop
from protocol.records.builder import build_batch
from protocol.records.record import SimpleRecord
from protocol.values import TopicPartition
from storage.clock import MockClock
from storage.config import LogConfig, LogManagerConfig
from storage.log_manager import LogManager


async def test_on_loop_runs_the_function_on_the_loop_thread_and_returns_its_result() -> None:
    run = on_loop(asyncio.get_running_loop())
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def swap() -> bool:
        ran_on.append(threading.get_ident())
        return True

    assert await asyncio.to_thread(run, swap)
    assert ran_on == [loop_thread]
    assert run(swap)  # already on the loop: at once


async def test_cleaner_metrics_are_exposed(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=300, cleanup_policy="compact")
    lm = LogManager(LogManagerConfig(log_dirs=(str(tmp_path),), default=config), MockClock())
    lm.load_logs()
    lg = lm.get_or_create_log(TopicPartition("c", 0))
    for i in range(20):
        record = SimpleRecord(b"k%d" % (i % 2), b"v%d" % i, (), 1_000)
        lg.append(bytes(build_batch([record])), leader_epoch=0)
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    metrics = BrokerMetrics()
    metrics.watch_cleaner(lm.cleaner)
    before = metrics.exposition().decode()
    assert 'minikafka_log_cleaner_dirty_ratio{partition="0",topic="c"} 1.0' in before
    lm.cleaner.on_owner = on_loop(asyncio.get_running_loop())
    await asyncio.to_thread(lm.cleaner.run_until_idle)
    text = metrics.exposition().decode()
    assert "minikafka_log_cleaner_passes_total 1.0" in text
    assert 'minikafka_log_cleaner_dirty_ratio{partition="0",topic="c"} 0.0' in text
    assert "minikafka_log_cleaner_uncleanable_partitions 0.0" in text
    read = [ln for ln in text.splitlines() if ln.startswith("minikafka_log_cleaner_read_bytes")]
    assert read and float(read[0].split()[1]) > 0
    lm.shutdown()
