"""Recovery after an unclean shutdown, in Kafka's style: damage the files of a log whose
process "crashed" (descriptors dropped, nothing trimmed or checkpointed), reopen, and
check that exactly the batches before the damage remain and that every offset and
timestamp lookup agrees with indexes rebuilt from scratch."""

from __future__ import annotations

import logging
import os
import random
import shutil

import pytest
from storage_helpers import (
    SMALL,
    all_batches,
    assert_lookups_agree,
    crash,
    make_batch,
    open_log,
    rebuilt_copy,
)

from storage.log import Log
from storage.segment import LogSegment


def build(path: str, batches: int = 40, last_records: int = 1) -> list[tuple[int, int, bytes]]:
    """A log over several segments whose last batch is small; crashed afterwards."""
    lg = open_log(path)
    for i in range(batches - 1):
        lg.append(make_batch(4, timestamp=1_000 + 7 * i, ts_step=2), leader_epoch=3)
    lg.append(make_batch(last_records, timestamp=2_000), leader_epoch=3)
    assert len(lg.segments) >= 3
    batches_written: list[tuple[int, int, bytes]] = all_batches(lg)
    crash(lg)
    return batches_written


def seg_path(path: str, base: int, suffix: str = ".log") -> str:
    return os.path.join(path, f"{base:020d}{suffix}")


def reopen_and_check(path: str, tmp: str, expected: list[tuple[int, int, bytes]]) -> Log:
    lg: Log = open_log(path, clean_shutdown=False)
    assert all_batches(lg) == expected
    assert lg.log_end_offset == (expected[-1][1] + 1 if expected else 0)
    reference = rebuilt_copy(path, tmp)
    assert_lookups_agree(lg, reference)
    reference.close()
    return lg


def test_truncation_at_every_byte_of_the_last_batch(tmp_path: os.PathLike[str]) -> None:
    base = os.path.join(tmp_path, "orig")
    batches = build(base)
    last_base = batches[-1][0]
    lg = open_log(base, clean_shutdown=False)
    active = lg.active_segment
    active_file = active.log_path
    end = active.size
    start = end - len(batches[-1][2])
    lg.close()
    for cut in range(start, end):
        work = os.path.join(tmp_path, f"cut{cut}")
        shutil.copytree(base, work)
        os.truncate(os.path.join(work, os.path.basename(active_file)), cut)
        lg = reopen_and_check(work, os.path.join(tmp_path, f"ref{cut}"), batches[:-1])
        assert lg.log_end_offset == last_base
        lg.close()
        shutil.rmtree(work)
        shutil.rmtree(os.path.join(tmp_path, f"ref{cut}"))


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param(bytes(random.Random(7).randrange(256) for _ in range(300)), id="garbage"),
        pytest.param(b"\x00" * 4096, id="zero-filled"),
        pytest.param(b"\xff" * 12, id="short-garbage"),
    ],
)
def test_appended_tail_is_cut(
    tmp_path: os.PathLike[str], tail: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    active = sorted(n for n in os.listdir(path) if n.endswith(".log"))[-1]
    with open(os.path.join(path, active), "ab") as f:
        f.write(tail)
    with caplog.at_level(logging.WARNING, logger="storage"):
        lg = reopen_and_check(path, os.path.join(tmp_path, "ref"), batches)
    assert f"removed {len(tail)} bytes" in caplog.text
    lg.close()


def test_flipped_byte_inside_crc_range_cuts_from_that_batch(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    lg = open_log(path, clean_shutdown=True)
    # Damage the third batch of the second segment (below the active one).
    seg = lg.segments[1]
    positions = [pos for pos, _ in seg.iter_headers(0)]
    victim_pos = positions[2]
    victim_base = next(h.base_offset for p, h in seg.iter_headers(0) if p == victim_pos)
    lg.close()
    with open(seg_path(path, seg.base_offset), "r+b") as f:
        f.seek(victim_pos + 40)  # inside the CRC range (bytes 21..end)
        byte = f.read(1)
        f.seek(victim_pos + 40)
        f.write(bytes([byte[0] ^ 0x10]))
    expected = [b for b in batches if b[0] < victim_base]
    # Recovery point 0: every segment is checked; segments after the damage are dropped.
    lg = reopen_and_check(path, os.path.join(tmp_path, "ref"), expected)
    assert [s.base_offset for s in lg.segments][-1] == seg.base_offset
    later = [b for b in os.listdir(path) if b.endswith(".log") and int(b[:20]) > seg.base_offset]
    assert later == []
    lg.close()


def test_damage_below_the_recovery_point_is_not_scanned(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    lg = open_log(path, clean_shutdown=True)
    active_base = lg.active_segment.base_offset
    lg.close()
    calls: list[int] = []
    original = LogSegment.recover

    def spy(self: LogSegment, min_offset: int | None = None):  # type: ignore[no-untyped-def]
        calls.append(self.base_offset)
        return original(self, min_offset)

    LogSegment.recover = spy  # type: ignore[method-assign]
    try:
        lg = open_log(path, clean_shutdown=False, recovery_point=active_base + 1)
    finally:
        LogSegment.recover = original  # type: ignore[method-assign]
    assert calls == [active_base]
    assert all_batches(lg) == batches
    lg.close()


def test_clean_shutdown_scans_nothing(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "log")
    lg = open_log(path)
    for i in range(60):
        lg.append(make_batch(3, timestamp=1_000 + i), leader_epoch=0)
    lg.close()

    def boom(self: LogSegment, min_offset: int | None = None) -> None:
        raise AssertionError("recover() called after a clean shutdown")

    original = LogSegment.recover
    LogSegment.recover = boom  # type: ignore[method-assign,assignment]
    try:
        lg = open_log(path, clean_shutdown=True)
    finally:
        LogSegment.recover = original  # type: ignore[method-assign]
    assert lg.log_end_offset == 180
    assert lg.producer_state.map_end_offset == 180
    lg.close()


@pytest.mark.parametrize("which", [".index", ".timeindex", "both"])
@pytest.mark.parametrize("clean", [True, False])
def test_deleted_indexes_are_rebuilt(tmp_path: os.PathLike[str], which: str, clean: bool) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    open_log(path, clean_shutdown=False).close()
    suffixes = [".index", ".timeindex"] if which == "both" else [which]
    for name in os.listdir(path):
        if name.endswith(tuple(suffixes)):
            os.unlink(os.path.join(path, name))
    lg = open_log(path, clean_shutdown=clean)
    assert all_batches(lg) == batches
    reference = rebuilt_copy(path, os.path.join(tmp_path, "ref"))
    assert_lookups_agree(lg, reference)
    assert any(s.offset_index.entries for s in lg.segments)
    lg.close()
    reference.close()


@pytest.mark.parametrize("clean", [True, False])
def test_a_small_segment_has_no_index_files_and_needs_no_rebuild(
    tmp_path: os.PathLike[str], clean: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A new log's segment makes no index file until its first entry; a segment too
    short to have had one reopens without a rebuild, with the same lookups."""
    path = os.path.join(tmp_path, "log")
    lg = open_log(path)
    assert not [n for n in os.listdir(path) if n.endswith((".index", ".timeindex"))]
    lg.append(make_batch(2, timestamp=5_000), leader_epoch=1)
    batches = all_batches(lg)
    found = lg.fetch_offset_by_timestamp(5_000)
    assert found is not None and found.offset == 0
    assert lg.active_segment.size <= SMALL.index_interval_bytes
    if clean:
        lg.close()
    else:
        crash(lg)
    assert not [n for n in os.listdir(path) if n.endswith((".index", ".timeindex"))]
    with caplog.at_level(logging.WARNING, logger="storage"):
        again = open_log(path, clean_shutdown=clean)
    assert "rebuilding" not in caplog.text
    assert all_batches(again) == batches
    assert again.fetch_offset_by_timestamp(5_000) == found
    assert again.active_segment.largest_timestamp == 5_001
    again.close()


def test_a_long_segment_missing_its_index_files_is_rebuilt(
    tmp_path: os.PathLike[str], caplog: pytest.LogCaptureFixture
) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    open_log(path, clean_shutdown=False).close()
    first = seg_path(path, 0, ".index")
    assert os.path.getsize(first) > 0
    os.unlink(first)
    with caplog.at_level(logging.WARNING, logger="storage"):
        lg = open_log(path, clean_shutdown=True)
    assert "rebuilding indexes of segment 0: index files are missing" in caplog.text
    assert all_batches(lg) == batches
    reference = rebuilt_copy(path, os.path.join(tmp_path, "ref"))
    assert_lookups_agree(lg, reference)
    lg.close()
    reference.close()


@pytest.mark.parametrize("damage", ["random", "short", "decreasing", "past-end"])
def test_garbled_indexes_are_rebuilt(
    tmp_path: os.PathLike[str], damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    open_log(path, clean_shutdown=False).close()
    rng = random.Random(damage)
    for name in sorted(os.listdir(path)):
        if not name.endswith((".index", ".timeindex")):
            continue
        p = os.path.join(path, name)
        size = os.path.getsize(p)
        if size == 0:
            continue
        with open(p, "r+b") as f:
            if damage == "random":
                f.write(bytes(rng.randrange(256) for _ in range(size)))
            elif damage == "short":
                f.truncate(size - 3)
            elif damage == "decreasing":
                data = f.read()
                es = 8 if name.endswith(".index") else 12
                entries = [data[i : i + es] for i in range(0, len(data), es)]
                f.seek(0)
                f.write(b"".join(reversed(entries)) if len(entries) > 1 else b"\xff" * es)
            else:
                # The last entry points past the log (offset index: position; time
                # index: relative offset).
                f.seek(size - 4)
                f.write(b"\x7f\xff\xff\xff")
    with caplog.at_level(logging.WARNING, logger="storage"):
        lg = open_log(path, clean_shutdown=True)
    assert caplog.text.count("rebuilding indexes") == len(lg.segments)
    assert all_batches(lg) == batches
    reference = rebuilt_copy(path, os.path.join(tmp_path, "ref"))
    assert_lookups_agree(lg, reference)
    lg.close()
    reference.close()


def test_orphan_index_files_are_removed(
    tmp_path: os.PathLike[str], caplog: pytest.LogCaptureFixture
) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    for suffix in (".index", ".timeindex"):
        with open(seg_path(path, 999_999, suffix), "wb") as f:
            f.write(b"\x00" * 24)
    with caplog.at_level(logging.WARNING, logger="storage"):
        lg = reopen_and_check(path, os.path.join(tmp_path, "ref"), batches)
    assert not os.path.exists(seg_path(path, 999_999, ".index"))
    assert not os.path.exists(seg_path(path, 999_999, ".timeindex"))
    assert "orphan" in caplog.text
    lg.close()


def test_leftover_temp_and_deleted_files_are_removed(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "log")
    batches = build(path)
    for name in ("00000000000000000000.log.deleted", "leader-epoch-checkpoint.tmp"):
        with open(os.path.join(path, name), "wb") as f:
            f.write(b"x")
    lg = reopen_and_check(path, os.path.join(tmp_path, "ref"), batches)
    assert not [n for n in os.listdir(path) if n.endswith((".deleted", ".tmp"))]
    lg.close()


def test_recovery_rebuilds_producer_state_and_epochs(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "log")
    lg = open_log(path)
    for i in range(30):
        lg.append(
            make_batch(2, producer_id=7, producer_epoch=0, base_sequence=2 * i),
            leader_epoch=i // 10,
        )
    crash(lg)
    lg = open_log(path, clean_shutdown=False)
    assert lg.producer_state.producers[7].last_seq == 59
    assert lg.epoch_cache.entries == [(0, 0), (1, 20), (2, 40)]
    # A retry of the last batch is still recognised as a duplicate after the crash.
    info = lg.append(
        make_batch(2, producer_id=7, producer_epoch=0, base_sequence=58), leader_epoch=2
    )
    assert info.duplicate and info.first_offset == 58
    lg.close()


def test_small_config_is_what_the_tests_assume() -> None:
    assert SMALL.index_interval_bytes < SMALL.segment_bytes
