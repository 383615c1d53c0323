"""LeaderAndIsr and StopReplica keep the disk off the event loop: creating logs, writing
leader-epoch checkpoints and deleting logs run in a worker thread (the real
``asyncio.to_thread``), the loop stays free meanwhile, and the answer still means "on
disk"."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.blocking import in_thread
from protocol.errors import ErrorCode
from protocol.values import TopicPartition
from storage.checkpoint import LEADER_EPOCH_CHECKPOINT, read_epoch_checkpoint
from storage.errors import StorageError
from tests.polling import until
from tests.unit.broker.broker_helpers import LocalReplicas, local_replicas, partition_state

TOPIC_ID = uuid.UUID("0b3ad1c2-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
PARTITIONS = [TopicPartition("orders", p) for p in range(8)]


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[LocalReplicas]:
    r = local_replicas(tmp_path, run_blocking=in_thread)
    yield r
    r.log_manager.shutdown()


class DiskCalls:
    """Which threads called os.fsync and wrote checkpoint files while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.threads: list[int] = []
        real_fsync = os.fsync

        def fsync(fd: int) -> None:
            self.threads.append(threading.get_ident())
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)
        self._spy(monkeypatch, "storage.checkpoint.write_atomically")

    def _spy(self, monkeypatch: pytest.MonkeyPatch, target: str) -> None:
        module, name = target.rsplit(".", 1)
        real: Callable[..., Any] = getattr(__import__(module, fromlist=[name]), name)

        def spy(*args: Any, **kwargs: Any) -> Any:
            self.threads.append(threading.get_ident())
            return real(*args, **kwargs)

        monkeypatch.setattr(target, spy)


def lead_all(r: LocalReplicas, epoch: int = 0) -> Any:
    states = [partition_state(tp, epoch=epoch) for tp in PARTITIONS]
    return r.rm.become_leader_or_follower(1, 1, states, {"orders": TOPIC_ID})


def epoch_file(r: LocalReplicas, tp: TopicPartition) -> list[tuple[int, int]]:
    lg = r.log_manager.get_log(tp)
    assert lg is not None
    return read_epoch_checkpoint(os.path.join(lg.directory, LEADER_EPOCH_CHECKPOINT))


async def test_leader_and_isr_creates_logs_and_writes_epochs_off_the_loop(
    replicas: LocalReplicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = DiskCalls(monkeypatch)
    loop_thread = threading.get_ident()
    answer = await lead_all(replicas)
    assert answer == dict.fromkeys(PARTITIONS, ErrorCode.NONE)
    assert calls.threads and loop_thread not in calls.threads
    # Answered NONE: the new epoch is in each partition's checkpoint file already.
    assert all(epoch_file(replicas, tp) == [(0, 0)] for tp in PARTITIONS)
    calls.threads.clear()
    assert await lead_all(replicas, epoch=1) == dict.fromkeys(PARTITIONS, ErrorCode.NONE)
    assert calls.threads and loop_thread not in calls.threads
    assert all(epoch_file(replicas, tp) == [(1, 0)] for tp in PARTITIONS)


async def test_stop_replica_deletes_logs_off_the_loop(
    replicas: LocalReplicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    await lead_all(replicas)
    directories = [lg.directory for lg in replicas.log_manager.all_logs()]
    calls = DiskCalls(monkeypatch)
    answer = await replicas.rm.stop_replicas(
        1, [(tp.topic, tp.partition, True) for tp in PARTITIONS]
    )
    assert answer == dict.fromkeys(PARTITIONS, ErrorCode.NONE)
    assert calls.threads and threading.get_ident() not in calls.threads
    assert not any(os.path.exists(d) for d in directories)
    assert replicas.log_manager.all_logs() == []


async def test_the_loop_runs_while_the_epoch_checkpoints_are_written(
    replicas: LocalReplicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The epoch write waits for a gate only the loop opens: were it on the loop, the
    loop could never open it and the write would give up (the test fails, bounded)."""
    await lead_all(replicas)
    entered, gate = threading.Event(), threading.Event()
    real = __import__("storage.leader_epoch", fromlist=["x"]).write_epoch_checkpoint

    def gated(path: str, entries: Any, sync: bool = True) -> None:
        entered.set()
        # Ten seconds for the first write; later ones of a blocked run fail at once.
        if not gate.wait(timeout=10):
            gate.set()
            raise StorageError("the gate never opened: the event loop was blocked")
        real(path, entries, sync)

    monkeypatch.setattr("storage.leader_epoch.write_epoch_checkpoint", gated)
    task = asyncio.ensure_future(lead_all(replicas, epoch=1))
    await until(entered.is_set, 10, "the epoch write to start", interval=0.001)
    assert not task.done()  # the request is waiting for its disk work, the loop is not
    gate.set()
    assert await asyncio.wait_for(task, 10) == dict.fromkeys(PARTITIONS, ErrorCode.NONE)


async def test_a_failed_epoch_write_answers_storage_error_and_takes_the_log_offline(
    replicas: LocalReplicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(path: str, entries: Any, sync: bool = True) -> None:
        raise StorageError(f"writing {path}: input/output error")

    monkeypatch.setattr("storage.leader_epoch.write_epoch_checkpoint", broken)
    answer = await lead_all(replicas)
    assert answer == dict.fromkeys(PARTITIONS, ErrorCode.KAFKA_STORAGE_ERROR)
    partition = replicas.rm.partition_for(PARTITIONS[0])
    assert partition is not None and partition.is_offline


async def test_epoch_checkpoints_are_synced_together_and_a_failed_sync_is_a_storage_error(
    replicas: LocalReplicas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The leader-epoch checkpoints of one LeaderAndIsr are fsynced in one group at the
    end, with the files of the logs it created; a partition whose file could not be
    synced answers KAFKA_STORAGE_ERROR and its log goes offline, the others are led."""
    groups: list[list[str]] = []

    def sync(files: list[str], dirs: list[str]) -> dict[str, OSError]:
        groups.append(list(files))
        return {f: OSError(5, "input/output error") for f in files if "orders-3" in f}

    monkeypatch.setattr("broker.replica_roles.sync_all", sync)
    answer = await lead_all(replicas)
    bad = TopicPartition("orders", 3)
    assert answer == {
        tp: ErrorCode.KAFKA_STORAGE_ERROR if tp == bad else ErrorCode.NONE for tp in PARTITIONS
    }
    assert len(groups) == 1
    expected = set()
    for tp in PARTITIONS:
        lg = replicas.log_manager.get_log(tp)
        assert lg is not None
        expected |= {lg.epoch_cache.path, os.path.join(lg.directory, "partition.metadata")}
    assert sorted(groups[0]) == sorted(expected)
    partition = replicas.rm.partition_for(bad)
    assert partition is not None and partition.is_offline
    assert epoch_file(replicas, PARTITIONS[0]) == [(0, 0)]


async def test_concurrent_controller_requests_do_not_interleave(
    replicas: LocalReplicas,
) -> None:
    """LeaderAndIsr then StopReplica(delete) sent at once: the stop waits for the
    LeaderAndIsr's disk work, so it finds (and deletes) the partitions it created."""
    lead = asyncio.ensure_future(lead_all(replicas))
    stop = asyncio.ensure_future(
        replicas.rm.stop_replicas(1, [(tp.topic, tp.partition, True) for tp in PARTITIONS])
    )
    assert await asyncio.wait_for(lead, 10) == dict.fromkeys(PARTITIONS, ErrorCode.NONE)
    assert await asyncio.wait_for(stop, 10) == dict.fromkeys(PARTITIONS, ErrorCode.NONE)
    assert replicas.rm.all_partitions() == [] and replicas.log_manager.all_logs() == []
