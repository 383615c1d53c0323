"""Transactions in the log: open transactions, the last stable offset, the aborted
transaction index through roll, recovery, truncation, retention and compaction, and
read_committed reads."""

from __future__ import annotations

import os
import struct
import tempfile

import pytest

from protocol.records.batch import iter_batches
from protocol.records.builder import build_batch
from protocol.records.control import ControlType, control_record
from protocol.records.record import SimpleRecord
from protocol.values import READ_COMMITTED, READ_UNCOMMITTED, TopicPartition
from storage.cleaner import clean_log
from storage.config import LogConfig
from storage.errors import InvalidProducerEpochError, TransactionCoordinatorFencedError
from storage.log import Log
from storage.offset_map import OffsetMap
from storage.producer_state import (
    ProducerStateEntry,
    ProducerStateManager,
    decode_snapshot,
    decode_snapshot_state,
    encode_snapshot,
)
from storage.txn_index import AbortedTransaction, AbortedTxn, decode_entries, encode_entry
from tests.unit.storage.storage_helpers import crash, open_log
from timer.clock import MockClock

SEQ: dict[int, int] = {}


def data(pid: int, n: int = 2, *, txn: bool = True, epoch: int = 0, key: bytes = b"k") -> bytearray:
    seq = SEQ.get(pid, 0)
    SEQ[pid] = seq + n
    records = [SimpleRecord(key + b"%d" % i, b"v", timestamp=1_000) for i in range(n)]
    return build_batch(
        records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn
    )


def plain(n: int = 2) -> bytearray:
    return build_batch([SimpleRecord(b"p%d" % i, b"v", timestamp=1_000) for i in range(n)])


def marker(pid: int, kind: ControlType, *, epoch: int = 0, coordinator_epoch: int = 0) -> bytearray:
    return build_batch(
        [control_record(kind, coordinator_epoch, 1_000)],
        producer_id=pid,
        producer_epoch=epoch,
        is_control=True,
    )


def commit(lg: Log, pid: int, **kw: int) -> int:
    return lg.append(marker(pid, ControlType.COMMIT, **kw), 0, from_coordinator=True).first_offset


def abort(lg: Log, pid: int, **kw: int) -> int:
    return lg.append(marker(pid, ControlType.ABORT, **kw), 0, from_coordinator=True).first_offset


def append(lg: Log, batch: bytearray) -> int:
    first = lg.append(batch, 0).first_offset
    lg.update_high_watermark(lg.log_end_offset)
    return first


def entries(lg: Log) -> list[AbortedTxn]:
    return [e for s in lg.segments for e in s.txn_index.entries]


@pytest.fixture
def lg(tmp_path: object) -> Log:
    SEQ.clear()
    return open_log(str(tmp_path), LogConfig(segment_bytes=1 << 20))


# -- the last stable offset ----------------------------------------------------------------


def test_lso_with_interleaved_transactional_and_plain_producers(lg: Log) -> None:
    append(lg, plain())  # 0-1
    assert lg.last_stable_offset == 2
    a = append(lg, data(1))  # 2-3: producer 1 opens at 2
    append(lg, plain())  # 4-5
    b = append(lg, data(2))  # 6-7: producer 2 opens at 6
    append(lg, data(7, txn=False))  # 8-9: idempotent, not transactional
    assert (a, b) == (2, 6)
    assert lg.last_stable_offset == 2
    append(lg, data(1))  # more of producer 1: still open at 2
    assert lg.last_stable_offset == 2
    commit(lg, 1)
    # the marker is not below the high watermark yet: still unstable
    assert lg.last_stable_offset == 2
    lg.update_high_watermark(lg.log_end_offset)
    assert lg.last_stable_offset == 6
    abort(lg, 2)
    lg.update_high_watermark(lg.log_end_offset)
    assert lg.last_stable_offset == lg.high_watermark == lg.log_end_offset
    assert entries(lg) == [AbortedTxn(2, 6, 13, 14)]


def test_lso_never_passes_the_high_watermark(lg: Log) -> None:
    lg.append(plain(), 0)
    lg.append(data(1), 0)
    lg.update_high_watermark(1)
    assert lg.last_stable_offset == 1
    lg.update_high_watermark(3)
    assert lg.last_stable_offset == 2


def test_an_abort_entry_records_the_lso_of_the_moment(lg: Log) -> None:
    append(lg, data(1))  # 0-1
    append(lg, data(2))  # 2-3
    abort(lg, 2)  # 4: producer 1 still open at 0
    abort(lg, 1)  # 5: nothing open any more
    assert entries(lg) == [AbortedTxn(2, 2, 4, 0), AbortedTxn(1, 0, 5, 6)]


def test_a_marker_without_data_completes_nothing(lg: Log) -> None:
    append(lg, plain())
    abort(lg, 9)
    lg.update_high_watermark(lg.log_end_offset)
    assert entries(lg) == []
    assert lg.last_stable_offset == lg.log_end_offset


def test_markers_from_a_fenced_coordinator_or_an_old_epoch_are_refused(lg: Log) -> None:
    append(lg, data(1, epoch=3))
    commit(lg, 1, epoch=3, coordinator_epoch=5)
    end = lg.log_end_offset
    with pytest.raises(TransactionCoordinatorFencedError):
        abort(lg, 1, epoch=3, coordinator_epoch=4)
    with pytest.raises(InvalidProducerEpochError):
        abort(lg, 1, epoch=2, coordinator_epoch=5)
    assert lg.log_end_offset == end


def test_producers_outside_transactions_leave_the_bookkeeping_empty(lg: Log) -> None:
    for pid in range(100, 200):
        append(lg, data(pid, txn=False))
    # non-transactional batches leave the bookkeeping empty
    assert lg.producer_state.ongoing == {} and lg.producer_state.first_unstable_offset is None


# -- read_committed --------------------------------------------------------------------------


def test_read_committed_stops_at_the_lso_and_lists_the_aborted_range(lg: Log) -> None:
    append(lg, data(1))  # 0-1 aborted
    append(lg, plain())  # 2-3
    abort(lg, 1)  # 4
    append(lg, data(2))  # 5-6 open
    append(lg, plain())  # 7-8
    assert lg.last_stable_offset == 5
    committed = lg.read(0, 1 << 20, lg.high_watermark, isolation_level=READ_COMMITTED)
    uncommitted = lg.read(0, 1 << 20, lg.high_watermark, isolation_level=READ_UNCOMMITTED)
    assert committed is not None and uncommitted is not None
    assert committed.length < uncommitted.length
    assert lg.read(5, 1 << 20, isolation_level=READ_COMMITTED) is None
    assert lg.aborted_transactions(0, lg.last_stable_offset) == [AbortedTransaction(1, 0)]
    assert lg.aborted_transactions(5, 9) == []


def test_the_aborted_list_of_a_read_covers_its_bytes_not_the_whole_log(tmp_path: object) -> None:
    SEQ.clear()
    lg = open_log(str(tmp_path), LogConfig(segment_bytes=1 << 20, index_interval_bytes=1))
    for t in range(20):  # producer 1 aborts, producer 2 commits, in turn
        pid = 1 + t % 2
        append(lg, data(pid))
        (abort if pid == 1 else commit)(lg, pid)
    everything = lg.aborted_transactions(0, lg.log_end_offset)
    assert everything == [AbortedTransaction(1, 6 * t) for t in range(10)]
    region = lg.read(0, 200, lg.high_watermark, isolation_level=READ_COMMITTED)
    assert region is not None
    read_to = max(h.next_offset for _, h in iter_batches(region.read()))
    listed = lg.aborted_transactions(0, region)
    wanted = [a for a in everything if a.first_offset < read_to]
    assert wanted and listed[: len(wanted)] == wanted  # all with data in the bytes read
    assert len(listed) <= len(wanted) + 1  # and at most the next (the index's bound)


def test_aborted_transactions_whose_marker_is_in_a_later_segment_are_found(lg: Log) -> None:
    append(lg, data(1))  # 0-1
    lg.roll()
    append(lg, plain())  # 2-3
    lg.roll()
    abort(lg, 1)  # 4, in the third segment
    lg.update_high_watermark(lg.log_end_offset)
    assert [s.txn_index.entries for s in lg.segments] == [[], [], [AbortedTxn(1, 0, 4, 5)]]
    assert lg.aborted_transactions(0, 2) == [AbortedTransaction(1, 0)]
    assert lg.aborted_transactions(2, 4) == [AbortedTransaction(1, 0)]


# -- the index file -------------------------------------------------------------------------


def test_an_entry_is_kafkas_34_bytes() -> None:
    raw = encode_entry(AbortedTxn(0x0102030405060708, 10, 20, 21))
    assert raw == bytes.fromhex(
        "00000102030405060708000000000000000a00000000000000140000000000000015"
    )
    assert decode_entries(raw * 2) == [AbortedTxn(0x0102030405060708, 10, 20, 21)] * 2
    with pytest.raises(ValueError):
        decode_entries(raw[:-1])
    with pytest.raises(ValueError):
        decode_entries(struct.pack(">h", 1) + raw[2:])


def test_the_txnindex_file_holds_the_entries(lg: Log) -> None:
    append(lg, data(5))
    abort(lg, 5)
    seg = lg.active_segment
    with open(seg.txn_index.path, "rb") as f:
        assert f.read() == encode_entry(AbortedTxn(5, 0, 2, 3))
    assert seg.txn_index.path.endswith("00000000000000000000.txnindex")


# -- roll, recovery, truncation, retention ---------------------------------------------------


def build_history(lg: Log) -> None:
    """Across several segments: aborted, committed and open transactions."""
    append(lg, data(1))
    append(lg, data(2))
    append(lg, plain())
    abort(lg, 1)
    lg.roll()
    append(lg, data(3))
    commit(lg, 2)
    append(lg, data(1))
    lg.roll()
    abort(lg, 3)
    append(lg, data(4))  # stays open


def test_roll_keeps_each_segments_entries(lg: Log) -> None:
    build_history(lg)
    assert [s.txn_index.entries for s in lg.segments] == [
        [AbortedTxn(1, 0, 6, 2)],
        [],
        [AbortedTxn(3, 7, 12, 10)],
    ]


def reopen(lg: Log, clean: bool) -> Log:
    hw = lg.high_watermark
    if clean:
        lg.flush()
        lg.close()
    else:
        crash(lg)
        for seg in lg.segments:
            seg.txn_index.close()
    return open_log(lg.directory, lg.config, high_watermark=hw, clean_shutdown=clean)


@pytest.mark.parametrize("clean", [True, False])
def test_a_reopened_log_has_the_same_lso_and_aborted_index(lg: Log, clean: bool) -> None:
    build_history(lg)
    want = ([s.txn_index.entries for s in lg.segments], lg.last_stable_offset)
    again = reopen(lg, clean)
    assert ([s.txn_index.entries for s in again.segments], again.last_stable_offset) == want
    assert again.last_stable_offset == 10  # producer 1 reopened at 10, producer 4 at 13


def test_a_crash_mid_transaction_rebuilds_a_lost_index(lg: Log) -> None:
    build_history(lg)
    want = [list(s.txn_index.entries) for s in lg.segments]
    lso = lg.last_stable_offset
    for seg in lg.segments:  # lost: neither flushed nor written
        seg.txn_index.close()
        os.unlink(seg.txn_index.path) if os.path.exists(seg.txn_index.path) else None
    again = reopen(lg, clean=False)
    assert [s.txn_index.entries for s in again.segments] == want
    assert again.last_stable_offset == lso
    # the open transaction goes on and completes after the restart
    abort(again, 4)
    commit(again, 1)
    again.update_high_watermark(again.log_end_offset)
    assert again.last_stable_offset == again.log_end_offset


def test_a_corrupt_index_below_the_recovery_point_is_rebuilt(lg: Log) -> None:
    build_history(lg)
    want = [list(s.txn_index.entries) for s in lg.segments]
    lg.flush()
    lg.close()
    with open(lg.segments[0].txn_index.path, "ab") as f:
        f.write(b"\x00\x01")  # no longer whole entries
    again = open_log(lg.directory, lg.config, high_watermark=lg.high_watermark,
                     clean_shutdown=True)  # fmt: skip
    assert [s.txn_index.entries for s in again.segments] == want


def test_truncation_removes_the_entries_above_it(lg: Log) -> None:
    build_history(lg)
    lg.truncate_to(12)  # the abort of producer 3 goes
    assert entries(lg) == [AbortedTxn(1, 0, 6, 2)]
    assert not os.path.exists(lg.active_segment.txn_index.path)
    lg.update_high_watermark(lg.log_end_offset)
    assert lg.last_stable_offset == 7  # producer 3's transaction is open again
    lg.truncate_to(5)
    assert entries(lg) == []
    assert lg.last_stable_offset == 0


def test_retention_and_delete_records_delete_the_index_with_its_segment(tmp_path: object) -> None:
    SEQ.clear()
    lg = open_log(str(tmp_path), LogConfig(segment_bytes=1 << 20, retention_bytes=1,
                                            file_delete_delay_ms=0))  # fmt: skip
    build_history(lg)
    first = lg.segments[0].txn_index.path
    assert os.path.exists(first)
    lg.increment_log_start_offset(7)
    assert lg.delete_old_segments() >= 1
    lg.delete_due_segments()
    assert not os.path.exists(first)
    assert [s.base_offset for s in lg.segments] == [15]
    assert (
        entries(lg) == [] and os.listdir(lg.directory).count("00000000000000000000.txnindex") == 0
    )
    assert lg.last_stable_offset == 15  # the open transactions began below the log start


def test_snapshot_round_trip_carries_the_open_transaction(tmp_path: object) -> None:
    producers = {
        1: ProducerStateEntry(1, 2, 1_000, [], coordinator_epoch=7, current_txn_first_offset=40),
        2: ProducerStateEntry(2, 0, 900),
    }
    assert decode_snapshot(encode_snapshot(producers)) == producers
    assert decode_snapshot_state(encode_snapshot(producers, {30: 45})) == (producers, {30: 45})
    m = ProducerStateManager(str(tmp_path))
    m.producers = producers
    m.unreplicated = {30: 45}  # completed at 45, not yet below the high watermark
    m.map_end_offset = 50
    m.take_snapshot()
    loaded = ProducerStateManager(str(tmp_path))
    assert loaded.load(0, 50) == 50
    assert loaded.ongoing == {40: 1} and loaded.unreplicated == {30: 45}
    assert loaded.first_unstable_offset == 30
    loaded.on_high_watermark(46)
    assert loaded.first_unstable_offset == 40


def test_a_version_1_snapshot_still_loads() -> None:
    from protocol.records.crc import crc32c

    body = struct.pack(">i", 1) + struct.pack(">qhqb", 5, 1, 700, 0)
    data = struct.pack(">hI", 1, crc32c(body)) + body
    assert decode_snapshot(data) == {5: ProducerStateEntry(5, 1, 700)}


# -- compaction ------------------------------------------------------------------------------


def compacted(tmp: str, clock: MockClock) -> Log:
    config = LogConfig(segment_bytes=1 << 20, cleanup_policy="compact",
                       delete_retention_ms=1_000, file_delete_delay_ms=0)  # fmt: skip
    return Log.open(tmp, _TP, config, clock)


_TP = TopicPartition("c", 0)


def values(lg: Log) -> list[tuple[int, bool, int]]:
    """(base offset, control, records) of every batch."""
    return [(h.base_offset, h.is_control, h.records_count) for _, _, h in lg.iter_batch_headers(0)]


def clean(lg: Log, now: int) -> None:
    clean_log(lg, first_dirty=0, first_uncleanable=lg.last_stable_offset,
              offset_map=OffsetMap(1 << 12), now_ms=now)  # fmt: skip


def test_compaction_removes_aborted_data_then_the_marker_after_its_horizon() -> None:
    SEQ.clear()
    clock = MockClock()
    with tempfile.TemporaryDirectory() as tmp:
        lg = compacted(tmp, clock)
        append(lg, data(1, key=b"a"))  # 0-1 aborted
        append(lg, data(2, key=b"b"))  # 2-3 committed
        abort(lg, 1)  # 4
        commit(lg, 2)  # 5
        append(lg, plain())  # 6-7
        lg.roll()
        lg.update_high_watermark(lg.log_end_offset)
        clean(lg, now=10_000)
        # the aborted data is gone (the first batch only emptied: producer 1's last data
        # batch); its marker stays while data of the transaction is left
        assert values(lg) == [(0, False, 0), (2, False, 2), (4, True, 1), (5, True, 1),
                              (6, False, 2)]  # fmt: skip
        assert lg.segments[0].txn_index.entries == [AbortedTxn(1, 0, 4, 2)]
        assert lg.aborted_transactions(0, 8) == [AbortedTransaction(1, 0)]
        # the committed data stays, and so does its marker
        committed = lg.read(0, 1 << 20, isolation_level=READ_COMMITTED)
        assert committed is not None


def test_compaction_drops_markers_of_transactions_with_nothing_left() -> None:
    SEQ.clear()
    clock = MockClock()
    with tempfile.TemporaryDirectory() as tmp:
        lg = compacted(tmp, clock)
        append(lg, data(1, key=b"a"))  # 0-1 aborted
        abort(lg, 1)  # 2
        append(lg, data(1, key=b"z", txn=False))  # 3-4: producer 1's last data batch
        append(lg, data(2, key=b"b"))  # 5-6 committed
        commit(lg, 2)  # 7
        append(lg, data(2, key=b"b"))  # 8-9 committed, same keys: 5-6 go
        commit(lg, 2)  # 10
        lg.roll()
        lg.update_high_watermark(lg.log_end_offset)
        clean(lg, now=10_000)  # aborted data removed; markers with data seen stay
        assert (0, False, 2) not in values(lg)
        clean(lg, now=10_000)  # nothing left of the abort: its marker gets a horizon
        clean(lg, now=12_000)  # past the horizon: the markers with nothing left go
        kept = values(lg)
        assert (2, True, 1) not in kept and (7, True, 1) not in kept
        assert (10, True, 1) in kept  # its transaction's data is still there
        assert entries(lg) == []
        # a reopened log agrees (nothing left open)
        lg.flush()
        lg.close()
        again = Log.open(tmp, _TP, lg.config, clock, high_watermark=11)
        assert again.last_stable_offset == 11


def test_the_cleaner_never_cleans_an_open_transaction() -> None:
    SEQ.clear()
    clock = MockClock()
    with tempfile.TemporaryDirectory() as tmp:
        lg = compacted(tmp, clock)
        append(lg, data(1, key=b"a"))  # 0-1 open
        lg.roll()
        append(lg, plain())
        lg.update_high_watermark(lg.log_end_offset)
        assert lg.last_stable_offset == 0
        before = values(lg)
        clean(lg, now=10_000)
        assert values(lg) == before


def test_aborted_data_goes_when_its_marker_is_still_in_the_active_segment() -> None:
    SEQ.clear()
    with tempfile.TemporaryDirectory() as tmp:
        lg = compacted(tmp, MockClock())
        append(lg, data(1, key=b"a"))  # 0-1 aborted
        append(lg, data(2, key=b"b", txn=False))  # 2-3, producer 2's
        lg.roll()
        abort(lg, 1)  # 4, in the active segment
        lg.update_high_watermark(lg.log_end_offset)
        clean(lg, now=10_000)
        # emptied, not dropped: producer 1's last data batch keeps its sequence state
        assert values(lg)[:2] == [(0, False, 0), (2, False, 2)]
        assert lg.aborted_transactions(0, 5) == [AbortedTransaction(1, 0)]


# -- dump-log ----------------------------------------------------------------------------------


def test_dump_log_prints_markers_and_txnindex_entries(lg: Log) -> None:
    import io

    from tools.dump_log import dump_file

    append(lg, data(1))
    abort(lg, 1, coordinator_epoch=3)
    seg = lg.active_segment
    out = io.StringIO()
    assert dump_file(seg.txn_index.path, out) == 0
    assert "version: 0 producerId: 1 firstOffset: 0 lastOffset: 2 lastStableOffset: 3" in (
        out.getvalue()
    )
    out = io.StringIO()
    assert dump_file(seg.log_path, out, print_data=True) == 0
    assert "endTxnMarker: ABORT coordinatorEpoch: 3" in out.getvalue()


def test_a_producer_with_a_transaction_open_may_not_write_outside_it(lg: Log) -> None:
    from storage.errors import InvalidTxnStateError

    append(lg, data(1))
    end = lg.log_end_offset
    with pytest.raises(InvalidTxnStateError):
        lg.append(data(1, txn=False), 0)
    assert lg.log_end_offset == end
    SEQ[1] -= 2  # the refused batch's sequences are sent again
    commit(lg, 1)
    append(lg, data(1, txn=False))  # after the marker it may


def test_a_follower_builds_the_same_index_and_lso(lg: Log, tmp_path: object) -> None:
    build_history(lg)
    follower = open_log(os.path.join(str(tmp_path), "follower"), lg.config)
    for seg, pos, h in lg.iter_batch_headers(0):
        if h.base_offset == seg.base_offset and h.base_offset > 0:
            follower.roll()  # the leader's segment bases
        follower.append_as_follower(os.pread(seg.fd, h.size, pos))
        follower.update_high_watermark(min(h.next_offset, lg.high_watermark))
    assert [s.base_offset for s in follower.segments] == [s.base_offset for s in lg.segments]
    assert [s.txn_index.entries for s in follower.segments] == [
        s.txn_index.entries for s in lg.segments
    ]
    assert follower.last_stable_offset == lg.last_stable_offset == 10


def test_a_cleaned_segment_keeps_its_index_across_a_restart() -> None:
    SEQ.clear()
    clock = MockClock()
    with tempfile.TemporaryDirectory() as tmp:
        lg = compacted(tmp, clock)
        append(lg, data(1, key=b"a"))  # 0-1 aborted
        abort(lg, 1)  # 2
        append(lg, data(3, key=b"c", txn=False))
        lg.roll()
        lg.update_high_watermark(lg.log_end_offset)
        clean(lg, now=10_000)
        assert lg.segments[0].txn_index.entries == [AbortedTxn(1, 0, 2, 3)]
        assert not [n for n in os.listdir(tmp) if n.endswith((".cleaned", ".swap"))]
        lg.delete_due_segments(now_ms=1 << 62)
        hw = lg.high_watermark
        lg.flush()
        lg.close()
        again = Log.open(tmp, _TP, lg.config, clock, high_watermark=hw, clean_shutdown=True)
        assert again.segments[0].txn_index.entries == [AbortedTxn(1, 0, 2, 3)]
        assert again.aborted_transactions(0, hw) == [AbortedTransaction(1, 0)]


def test_a_follower_refuses_an_unreadable_marker_before_writing_it(lg: Log) -> None:
    from protocol.records.builder import build_batch as build
    from storage.errors import CorruptRecordError

    append(lg, data(1))
    bad = build([SimpleRecord(b"\x00", b"", timestamp=1)], producer_id=1, producer_epoch=0,
                is_control=True, base_offset=lg.log_end_offset)  # fmt: skip
    end, size = lg.log_end_offset, lg.size_in_bytes
    with pytest.raises(CorruptRecordError):
        lg.append_as_follower(bad)
    assert (lg.log_end_offset, lg.size_in_bytes) == (end, size)
    assert lg.producer_state.ongoing == {0: 1}
