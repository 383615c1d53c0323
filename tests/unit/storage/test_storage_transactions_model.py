"""The log's transaction bookkeeping against a model that recomputes it from scratch.

Random interleavings (hypothesis) of plain, idempotent and transactional producers,
COMMIT and ABORT markers, high-watermark moves, rolls, truncations and reopenings
(clean, or after a crash). After every step the log's last stable offset and aborted
index must equal what a scan of every batch written so far gives: the incremental
bookkeeping may never drift from the definition."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from protocol.records.control import ControlType
from storage.config import LogConfig
from storage.errors import InvalidTxnStateError
from storage.log import Log
from storage.txn_index import AbortedTxn
from tests.unit.storage.storage_helpers import crash, open_log
from tests.unit.storage.test_storage_transactions import SEQ, data, marker, plain

PIDS = [1, 2, 3]


@dataclass
class Batch:
    base: int
    last: int
    pid: int  # -1: no producer id
    txn: bool = False
    end: ControlType | None = None  # a marker's type


@dataclass
class Model:
    batches: list[Batch] = field(default_factory=list)

    def truncate(self, offset: int) -> None:
        self.batches = [b for b in self.batches if b.last < offset]

    def scan(self, hw: int) -> tuple[int, list[AbortedTxn], dict[int, int]]:
        """(LSO, aborted entries in marker order, open transactions pid -> first)."""
        open_txns: dict[int, int] = {}
        completed: list[tuple[int, int]] = []  # (first, marker offset)
        aborted: list[AbortedTxn] = []
        for b in self.batches:
            if b.end is None:
                if b.txn and b.pid not in open_txns:
                    open_txns[b.pid] = b.base
                continue
            first = open_txns.pop(b.pid, None)
            if first is None:
                continue
            completed.append((first, b.last))
            if b.end == ControlType.ABORT:
                others = sorted(open_txns.values())
                aborted.append(
                    AbortedTxn(b.pid, first, b.last, others[0] if others else b.last + 1)
                )
        unstable = list(open_txns.values()) + [f for f, last in completed if last >= hw]
        lso = min([hw, *unstable])
        return lso, aborted, open_txns


op = st.one_of(
    st.tuples(st.just("data"), st.sampled_from(PIDS), st.booleans()),
    st.tuples(st.just("end"), st.sampled_from(PIDS), st.booleans()),
    st.tuples(st.just("plain")),
    st.tuples(st.just("hw"), st.integers(0, 6)),
    st.tuples(st.just("roll")),
    st.tuples(st.just("truncate"), st.integers(0, 6)),
    st.tuples(st.just("reopen"), st.booleans()),
)


def check(lg: Log, model: Model) -> None:
    lso, aborted, _ = model.scan(lg.high_watermark)
    assert lg.last_stable_offset == lso
    got = [e for s in lg.segments for e in s.txn_index.entries]
    assert got == aborted
    for seg in lg.segments:  # each entry in the segment holding its marker
        for e in seg.txn_index.entries:
            assert seg.base_offset <= e.last_offset < seg.next_offset
    # (a read_committed read never reaches past the LSO)
    assert lg.aborted_transactions(0, lg.log_end_offset + 1) == [
        (e.producer_id, e.first_offset) for e in aborted if e.first_offset < lso
    ]


def step(lg: Log, model: Model, o: tuple[Any, ...]) -> Log:
    kind = o[0]
    leo = lg.log_end_offset
    if kind == "data":
        _, pid, txn = o
        _, _, open_txns = model.scan(lg.high_watermark)
        batch = data(pid, txn=txn)
        if pid in open_txns and not txn:
            SEQ[pid] -= 2
            try:
                lg.append(batch, 0)
            except InvalidTxnStateError:
                return lg
            raise AssertionError("a write outside the open transaction was accepted")
        info = lg.append(batch, 0)
        model.batches.append(Batch(info.first_offset, info.last_offset, pid, txn))
    elif kind == "end":
        _, pid, is_abort = o
        end = ControlType.ABORT if is_abort else ControlType.COMMIT
        info = lg.append(marker(pid, end), 0, from_coordinator=True)
        model.batches.append(Batch(info.first_offset, info.last_offset, pid, end=end))
    elif kind == "plain":
        info = lg.append(plain(), 0)
        model.batches.append(Batch(info.first_offset, info.last_offset, -1))
    elif kind == "hw":
        lg.update_high_watermark(min(lg.high_watermark + o[1], leo))
    elif kind == "roll":
        lg.roll()
    elif kind == "truncate":
        # a follower truncates above its high watermark (to the leader's end)
        target = max(lg.high_watermark, leo - o[1])
        lg.truncate_to(target)
        model.truncate(target)
        SEQ.clear()  # sequences restart at a new epoch would be needed: stay simple
        for b in model.batches:
            if b.pid >= 0 and b.end is None:
                SEQ[b.pid] = SEQ.get(b.pid, 0) + (b.last - b.base + 1)
    elif kind == "reopen":
        hw = lg.high_watermark
        if o[1]:
            lg.flush()
            lg.close()
        else:
            crash(lg)
            for seg in lg.segments:
                seg.txn_index.close()
        lg = open_log(lg.directory, lg.config, high_watermark=hw, clean_shutdown=o[1])
    return lg


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=30))
# a transaction completed above the high watermark stays unstable across a reopening
@example([("data", 1, True), ("end", 1, False), ("hw", 1), ("reopen", True)])
@example([("data", 1, True), ("roll",), ("end", 1, True), ("hw", 1), ("reopen", False)])
def test_the_bookkeeping_equals_a_scan_from_scratch(ops: list[tuple[Any, ...]]) -> None:
    SEQ.clear()
    model = Model()
    with tempfile.TemporaryDirectory() as tmp:
        lg = open_log(tmp, LogConfig(segment_bytes=1 << 20))
        try:
            for o in ops:
                lg = step(lg, model, o)
                check(lg, model)
        finally:
            lg.close_without_snapshot()
