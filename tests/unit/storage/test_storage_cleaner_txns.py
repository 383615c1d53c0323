"""Compaction of a log with transactions, against what a read_committed consumer must see.

Random interleavings (hypothesis) of plain keyed writes, transactional writes of two
producers, COMMIT and ABORT markers, rolls, cleaning passes and clock moves. After each
step a read_committed consumer (reading up to the LSO, skipping the batches of the
aborted transactions the log lists, as Kafka's consumer does) must see, per key, the
value of the latest committed or plain write below the LSO; and after a pass no record
of a transaction aborted below the cleaned section is left in it."""

from __future__ import annotations

import tempfile
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from protocol.records.batch import iter_batches
from protocol.records.builder import build_batch, read_batch
from protocol.records.control import ControlType, control_record, parse_control_record
from protocol.records.record import SimpleRecord
from protocol.values import READ_COMMITTED, TopicPartition
from storage.cleaner import clean_log
from storage.config import LogConfig
from storage.log import Log
from storage.offset_map import OffsetMap
from tests.unit.storage.storage_helpers import crash
from timer.clock import MockClock

KEYS = [b"a", b"b", b"c"]
PIDS = [1, 2]
CONFIG = LogConfig(
    segment_bytes=600,
    index_interval_bytes=100,
    cleanup_policy="compact",
    delete_retention_ms=1_000,
    file_delete_delay_ms=0,
)

op = st.one_of(
    st.tuples(st.just("plain"), st.sampled_from(KEYS)),
    st.tuples(st.just("write"), st.sampled_from(PIDS), st.sampled_from(KEYS)),
    st.tuples(st.just("end"), st.sampled_from(PIDS), st.booleans()),
    st.tuples(st.just("roll")),
    st.tuples(st.just("pass")),
    st.tuples(st.just("tick"), st.integers(1, 2_000)),
    # 0: after a clean close, 1: after a crash, 2: after a crash that lost the snapshots
    st.tuples(st.just("reopen"), st.integers(0, 2)),
)


class Writer:
    """Writes the operations and keeps what each offset holds."""

    def __init__(self, lg: Log, clock: MockClock) -> None:
        self.lg, self.clock = lg, clock
        self.seq: dict[int, int] = {}
        self.open: dict[int, list[int]] = {}  # pid -> offsets of its open transaction
        #: offset -> (key, value, pid or -1 for plain); committed offsets are visible
        self.records: dict[int, tuple[bytes, bytes, int]] = {}
        self.visible: set[int] = set()
        self.aborted: set[int] = set()
        self.serial = 0

    def append(self, batch: bytearray, **kw: Any) -> int:
        first = self.lg.append(batch, 0, **kw).first_offset
        self.lg.update_high_watermark(self.lg.log_end_offset)
        return first

    def do(self, o: tuple[Any, ...]) -> None:
        kind = o[0]
        now = self.clock.time_ms()
        if kind in ("plain", "write"):
            self.serial += 1
            value = b"%d" % self.serial
            key = o[1] if kind == "plain" else o[2]
            rec = [SimpleRecord(key, value, timestamp=now)]
            if kind == "plain":
                offset = self.append(build_batch(rec))
                self.records[offset] = (key, value, -1)
                self.visible.add(offset)
                return
            pid = o[1]
            seq = self.seq.get(pid, 0)
            self.seq[pid] = seq + 1
            batch = build_batch(
                rec, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True
            )
            offset = self.append(batch)
            self.records[offset] = (key, value, pid)
            self.open.setdefault(pid, []).append(offset)
        elif kind == "end":
            pid, abort = o[1], o[2]
            end = ControlType.ABORT if abort else ControlType.COMMIT
            marker = build_batch(
                [control_record(end, 0, now)], producer_id=pid, producer_epoch=0, is_control=True
            )
            self.append(marker, from_coordinator=True)
            done = self.open.pop(pid, [])
            (self.aborted if abort else self.visible).update(done)
        elif kind == "roll":
            self.lg.roll()
        elif kind == "pass":
            lg = self.lg
            clean_log(lg, first_dirty=0, first_uncleanable=min(lg.last_stable_offset,
                      lg.active_segment.base_offset), offset_map=OffsetMap(1 << 10),
                      now_ms=now)  # fmt: skip
        elif kind == "reopen":
            lg, hw = self.lg, self.lg.high_watermark
            if o[1] == 0:
                lg.flush()
                lg.close()
            else:
                crash(lg)
                for seg in lg.segments:
                    seg.txn_index.close()
                if o[1] == 2:
                    lg.producer_state.delete_snapshots_after(-1)
            self.lg = Log.open(lg.directory, lg.tp, lg.config, self.clock,
                               high_watermark=hw, clean_shutdown=o[1] == 0)  # fmt: skip
        else:
            self.clock.advance(o[1])

    def expected(self) -> dict[bytes, bytes]:
        # the high watermark is the log end: the LSO is the first open transaction's start
        lso = min([offsets[0] for offsets in self.open.values()] + [self.lg.log_end_offset])
        assert self.lg.last_stable_offset == lso
        view: dict[bytes, bytes] = {}
        for offset in sorted(self.visible):
            if offset < lso:
                key, value, _ = self.records[offset]
                view[key] = value
        return view


def consume_committed(lg: Log) -> dict[bytes, bytes]:
    """What a read_committed consumer reads from the start, as Kafka's consumer reads."""
    view: dict[bytes, bytes] = {}
    offset = lg.log_start_offset
    while True:
        region = lg.read(offset, 1 << 20, lg.high_watermark, isolation_level=READ_COMMITTED)
        if region is None:
            return view
        aborted = sorted(lg.aborted_transactions(offset, region), key=lambda a: a.first_offset)
        data = region.read()
        skipping: set[int] = set()
        for pos, h in iter_batches(data):
            while aborted and aborted[0].first_offset <= h.last_offset:
                skipping.add(aborted.pop(0).producer_id)
            _, records = read_batch(data, pos)
            if h.is_control:
                if records and parse_control_record(records[0]).type == ControlType.ABORT:
                    skipping.discard(h.producer_id)
            elif not (h.is_transactional and h.producer_id in skipping):
                for r in records:
                    assert r.key is not None and r.value is not None
                    view[r.key] = r.value
            offset = h.next_offset


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=40))
# the marker of an aborted transaction whose emptied batch stays (its producer's last)
# must stay too: a log replayed from its start would otherwise find it never ended
@example([("write", 1, b"a"), ("end", 1, True), ("roll",), ("pass",), ("tick", 1_500),
          ("pass",), ("reopen", 2)])  # fmt: skip
def test_read_committed_sees_the_latest_committed_value_through_compaction(
    ops: list[tuple[Any, ...]],
) -> None:
    clock = MockClock()
    with tempfile.TemporaryDirectory() as tmp:
        w = Writer(Log.open(tmp, TopicPartition("c", 0), CONFIG, clock), clock)
        try:
            for o in ops:
                w.do(o)
                assert consume_committed(w.lg) == w.expected()
            lg = w.lg
            # aborted records below the cleaned section are gone from the log
            cleaned_below = lg.active_segment.base_offset
            w.do(("pass",))
            left = {
                h.base_offset
                for _, _, h in lg.iter_batch_headers(0)
                if not h.is_control and h.records_count
            }
            gone = {o for o in w.aborted if o < min(cleaned_below, lg.last_stable_offset)}
            assert not left & gone
        finally:
            w.lg.close_without_snapshot()
