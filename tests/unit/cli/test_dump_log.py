"""``minikafka dump-log``: batches, records, index entries, verification, snapshots,
compaction's offset gaps and the cleaner checkpoint."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from protocol.records import SimpleRecord, build_batch
from protocol.values import TopicPartition
from storage.clock import MockClock
from storage.config import LogConfig, LogManagerConfig
from storage.log import Log
from storage.log_manager import LogManager
from tools.dump_log import dump_file
from tools.main import main


@pytest.fixture
def log_dir(tmp_path: os.PathLike[str]) -> str:
    """Two segments of 30 idempotent batches of two records each."""
    path = str(tmp_path)
    config = LogConfig(segment_bytes=2000, index_interval_bytes=200)
    lg = Log.open(path, TopicPartition("t", 0), config, MockClock())
    for i in range(30):
        records = [
            SimpleRecord(None, b"hello-%d" % i, timestamp=1_000 + 10 * i),
            SimpleRecord(None, b"world", timestamp=1_001 + 10 * i),
        ]
        batch = build_batch(records, producer_id=4, producer_epoch=1, base_sequence=2 * i)
        lg.append(batch, leader_epoch=2)
    lg.close()
    assert len([n for n in os.listdir(path) if n.endswith(".log")]) == 2
    return path


def f(path: str, base: int, suffix: str) -> str:
    return os.path.join(path, f"{base:020d}{suffix}")


def test_batches_of_a_segment(log_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump-log", f(log_dir, 0, ".log")]) == 0
    lines = capsys.readouterr().out.splitlines()
    batches = [ln for ln in lines if ln.startswith("baseOffset:")]
    assert batches[0].startswith("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0")
    assert "producerId: 4 producerEpoch: 1 partitionLeaderEpoch: 2" in batches[0]
    assert "position: 0 " in batches[0] and "isvalid: true" in batches[0]
    assert "compresscodec: none" in batches[0] and "CreateTime: 1001" in batches[0]
    assert "baseOffset: 2 lastOffset: 3" in batches[1]
    assert not any(ln.startswith("|") for ln in lines)


def test_print_data_log_shows_records(log_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump-log", "--print-data-log", f(log_dir, 0, ".log")]) == 0
    out = capsys.readouterr().out
    assert "| offset: 0 timestamp: 1000 keySize: -1 valueSize: 7 sequence: 0" in out
    assert "| offset: 3 timestamp: 1011 keySize: -1 valueSize: 5 sequence: 3" in out
    assert "payload: hello-0" in out and "| offset: 1 timestamp: 1001" in out


def test_index_entries_and_verification(log_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    index = f(log_dir, 0, ".index")
    assert main(["dump-log", index, f(log_dir, 0, ".timeindex")]) == 0
    out = capsys.readouterr().out
    assert "offset: " in out and "position: " in out and "timestamp: " in out
    assert main(["dump-log", "--verify-index-only", index, f(log_dir, 0, ".timeindex")]) == 0
    assert "Mismatches" not in capsys.readouterr().out
    with open(index, "r+b") as fh:
        fh.seek(4)
        fh.write((7).to_bytes(4, "big"))  # the first entry now points at position 7
    assert main(["dump-log", "--verify-index-only", index]) == 1
    out = capsys.readouterr().out
    assert "Mismatches in" in out and "no batch starts at position 7" in out


def test_the_reserved_tail_of_an_active_segments_index_is_not_an_entry(
    tmp_path: os.PathLike[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A broker still writing a segment has reserved its indexes' next bytes (zeros):
    dump-log shows and verifies the entries written, not the zeros after them."""
    path = str(tmp_path)
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=100)
    lg = Log.open(path, TopicPartition("t", 0), config, MockClock())
    for i in range(12):
        lg.append(build_batch([SimpleRecord(None, b"v" * 120, timestamp=1_000 + i)]), 0)
    offsets, times = lg.active_segment.offset_index, lg.active_segment.time_index
    written = offsets.entries
    index, timeindex = f(path, 0, ".index"), f(path, 0, ".timeindex")
    assert written >= 5 and os.path.getsize(index) > 8 * written  # space reserved past them
    assert main(["dump-log", index, timeindex]) == 0
    out = capsys.readouterr().out
    assert out.count("position: ") == written and "offset: 0 position: 0" not in out
    assert out.count("timestamp: ") == times.entries and "timestamp: 0 " not in out
    assert main(["dump-log", "--verify-index-only", index, timeindex]) == 0
    out = capsys.readouterr().out
    assert "Mismatches" not in out and f"{written} entries agree" in out
    lg.close()


def test_torn_tail_and_corrupt_batch_are_reported(
    log_dir: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = f(log_dir, 0, ".log")
    with open(path, "r+b") as fh:
        fh.seek(30)
        byte = fh.read(1)[0]
        fh.seek(30)
        fh.write(bytes([byte ^ 1]))
    with open(path, "ab") as fh:
        fh.write(b"\x00" * 20)
    assert main(["dump-log", path]) == 1
    out = capsys.readouterr().out
    assert "isvalid: false (CRC mismatch" in out
    assert "Found 20 invalid bytes at position" in out


def test_snapshot_and_unknown_files(log_dir: str, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = sorted(n for n in os.listdir(log_dir) if n.endswith(".snapshot"))[-1]
    assert main(["dump-log", os.path.join(log_dir, snapshot)]) == 0
    out = capsys.readouterr().out
    assert "producerId: 4 producerEpoch: 1" in out and "| firstSequence: 58 lastSequence: 59" in out
    assert main(["dump-log", os.path.join(log_dir, "leader-epoch-checkpoint")]) == 1
    assert main(["dump-log", os.path.join(log_dir, "missing.log")]) == 1


def test_compacted_segments_show_their_gaps_and_the_cleaner_checkpoint(
    tmp_path: os.PathLike[str], capsys: pytest.CaptureFixture[str]
) -> None:
    config = LogConfig(segment_bytes=10_000, cleanup_policy="compact")
    lm = LogManager(LogManagerConfig(log_dirs=(str(tmp_path),), default=config), MockClock())
    lm.load_logs()
    lg = lm.get_or_create_log(TopicPartition("c", 0))
    for i in range(6):  # k0 at 0, 2, 4; k1 at 1, 3; a tombstone of k1 at 5
        value = None if i == 5 else b"v%d" % i
        lg.append(bytes(build_batch([SimpleRecord(b"k%d" % (i % 2), value, (), 1)])), 0)
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    lm.cleaner.run_until_idle()
    lm.shutdown()
    assert main(["dump-log", f(lg.directory, 0, ".log")]) == 0
    out = capsys.readouterr().out
    assert "Cleaner checkpoint: cleaned below offset 6" in out
    assert "Offset gap: 0 to 3 (removed by compaction)" in out
    assert "baseOffset: 4 lastOffset: 4" in out and "deleteHorizonMs: " in out
    checkpoint = os.path.join(str(tmp_path), "cleaner-offset-checkpoint")
    assert main(["dump-log", checkpoint]) == 0
    assert "topic: c partition: 0 cleanedBelowOffset: 6" in capsys.readouterr().out


def test_legacy_messages_and_v2_batches_in_one_log(tmp_path: Path) -> None:
    """dump-log reads magic 0 and 1 messages (a wrapper's inner messages with absolute
    offsets) and the v2 batches after them; a damaged message is reported invalid."""
    from protocol.records import SimpleRecord, build_batch
    from protocol.records.legacy import LegacyRecord, write_message_set

    data = bytearray()
    write_message_set(data, [LegacyRecord(0, 5, b"a", b"x")], magic=0)
    inner = [LegacyRecord(1, 6, None, b"y"), LegacyRecord(2, 7, b"b", b"z")]
    write_message_set(data, inner, magic=1, compression=1)
    data += build_batch([SimpleRecord(b"k", b"v", timestamp=9)], base_offset=3)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    out = io.StringIO()
    assert dump_file(str(path), out, print_data=True) == 0
    lines = out.getvalue().splitlines()
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 position: 0 CreateTime: -1")
    assert "magic: 0 compresscodec: none" in lines[2] and lines[2].endswith("isvalid: true")
    assert lines[3].startswith("| offset: 0 timestamp: -1 keySize: 1 valueSize: 1 magic: 0")
    assert lines[4].startswith("baseOffset: 1 lastOffset: 2 count: 2 position: 28 CreateTime: 7")
    assert "magic: 1 compresscodec: gzip" in lines[4]
    assert [line.split(" payload: ")[1] for line in lines[5:7]] == ["y", "z"]
    assert lines[5].startswith("| offset: 1 timestamp: 6 keySize: -1")
    assert lines[7].startswith("baseOffset: 3 lastOffset: 3 count: 1") and "magic: 2" in lines[7]
    assert lines[8].endswith("key: k payload: v")
    data[27] ^= 0xFF  # the first message's value: its CRC-32 fails
    data += b"\0" * 5
    path.write_bytes(bytes(data))
    out = io.StringIO()
    assert dump_file(str(path), out) == 1
    text = out.getvalue()
    assert "offset: 0 position: 0 size: 28 magic: 0" in text and "isvalid: false" in text
    assert "Found 5 invalid bytes at position 188" in text
