"""The cleaning pass against a model: sequences of keyed writes, deletes, rolls, passes
and clock moves (hypothesis), checked after each pass against what was written.

The model keeps every record written (offset -> key, value, timestamp, codec) and the
delete horizon each batch got from the pass that first kept a tombstone in it. After a
pass that deduplicated up to ``end``, a record below ``end`` survives exactly when it is
its key's latest below ``end`` and is not a tombstone past its horizon; every record
from ``end`` on (the active segment) survives untouched. Surviving records keep their
offsets, timestamps and their batch's codec, and a consumer replaying the log from the
beginning ends with the model's latest value per key.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.records.batch import DELETE_HORIZON_MASK, Compression
from protocol.records.builder import build_batch, read_batch
from protocol.records.record import SimpleRecord
from storage.cleaner import clean_log, group_segments
from storage.clock import MockClock
from storage.config import LogConfig
from storage.log import Log
from storage.offset_map import OffsetMap
from tests.unit.storage.storage_helpers import TP

DELETE_RETENTION_MS = 1_000
COMPACT = LogConfig(
    segment_bytes=700,
    index_interval_bytes=100,
    segment_index_bytes=4096,
    cleanup_policy="compact",
    delete_retention_ms=DELETE_RETENTION_MS,
    file_delete_delay_ms=0,
)
KEYS = [b"k%d" % i for i in range(6)]


@dataclass
class Model:
    #: offset -> (key, value, timestamp, base offset of its batch)
    written: dict[int, tuple[bytes, bytes | None, int, int]] = field(default_factory=dict)
    codecs: dict[int, Compression] = field(default_factory=dict)  # batch base -> codec
    horizons: dict[int, int] = field(default_factory=dict)  # batch base -> delete horizon
    gone: set[int] = field(default_factory=set)  # offsets a pass removed

    def latest_values(self) -> dict[bytes, bytes]:
        out: dict[bytes, bytes] = {}
        for offset in sorted(self.written):
            key, value, _, _ = self.written[offset]
            if value is None:
                out.pop(key, None)
            else:
                out[key] = value
        return out

    def apply_pass(self, end: int, now: int) -> None:
        latest: dict[bytes, int] = {}
        for offset in sorted(o for o in self.written if o < end and o not in self.gone):
            latest[self.written[offset][0]] = offset
        new_horizons: set[int] = set()
        for offset in sorted(o for o in self.written if o < end and o not in self.gone):
            key, value, _, base = self.written[offset]
            if latest[key] != offset:
                self.gone.add(offset)
            elif value is None:
                horizon = self.horizons.get(base)
                if horizon is not None and now >= horizon:
                    self.gone.add(offset)
                elif horizon is None:
                    new_horizons.add(base)
        for base in new_horizons:
            self.horizons[base] = now + DELETE_RETENTION_MS


def read_log(lg: Log) -> list[tuple[int, bytes | None, bytes | None, int, int, int, int]]:
    """(offset, key, value, timestamp, batch base, codec, attributes) of every record."""
    out = []
    for seg in lg.segments:
        data = os.pread(seg.fd, seg.size, 0)
        pos = 0
        while pos < len(data):
            header, records = read_batch(data, pos)
            for r in records:
                out.append(
                    (
                        r.offset(header),
                        r.key,
                        r.value,
                        r.timestamp(header),
                        header.base_offset,
                        header.compression,
                        header.attributes,
                    )
                )
            pos += header.size
    return out


write_op = st.tuples(
    st.just("write"),
    st.lists(st.tuples(st.sampled_from(KEYS), st.booleans()), min_size=1, max_size=4),
    st.sampled_from(list(Compression)),
)
operations = st.lists(
    st.one_of(
        write_op,
        st.tuples(st.just("roll")),
        st.tuples(st.just("pass")),
        st.tuples(st.just("tick"), st.integers(1, 2 * DELETE_RETENTION_MS)),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_cleaning_keeps_the_latest_value_per_key(ops: list[tuple[Any, ...]]) -> None:
    clock = MockClock()
    model = Model()
    first_dirty = 0
    with tempfile.TemporaryDirectory() as d:
        lg = Log.open(d, TP, COMPACT, clock)
        try:
            for op in ops:
                if op[0] == "write":
                    pairs: list[tuple[bytes, bool]] = op[1]
                    codec: Compression = op[2]
                    base = lg.log_end_offset
                    now = clock.time_ms()
                    records = [
                        SimpleRecord(k, None if tomb else b"v%d" % (base + i), (), now + i)
                        for i, (k, tomb) in enumerate(pairs)
                    ]
                    lg.append(bytes(build_batch(records, compression=codec)), leader_epoch=0)
                    model.codecs[base] = codec
                    for i, (k, _) in enumerate(pairs):
                        model.written[base + i] = (k, records[i].value, records[i].timestamp, base)
                elif op[0] == "roll":
                    lg.roll()
                elif op[0] == "tick":
                    clock.advance(op[1])
                else:
                    active = lg.active_segment
                    active_bytes = os.pread(active.fd, active.size, 0)
                    end = active.base_offset
                    result = clean_log(
                        lg,
                        first_dirty=first_dirty,
                        first_uncleanable=end,
                        offset_map=OffsetMap(1 << 20),
                        now_ms=clock.time_ms(),
                    )
                    assert result.end_offset == end
                    first_dirty = end
                    model.apply_pass(end, clock.time_ms())
                    assert os.pread(lg.active_segment.fd, active.size, 0) == active_bytes
                    assert lg.active_segment is active
                check(lg, model)
            assert consumer_view(lg) == model.latest_values()
        finally:
            lg.close()


def check(lg: Log, model: Model) -> None:
    got = read_log(lg)
    offsets = [g[0] for g in got]
    assert offsets == sorted(offsets)
    expected = sorted(o for o in model.written if o not in model.gone)
    assert offsets == expected
    for offset, key, value, ts, base, codec, attributes in got:
        w_key, w_value, w_ts, w_base = model.written[offset]
        assert (key, value, ts, base) == (w_key, w_value, w_ts, w_base)
        assert codec == model.codecs[base]
        if base in model.horizons:
            assert attributes & DELETE_HORIZON_MASK
    assert lg.log_end_offset == (max(model.written) + 1 if model.written else 0)


def consumer_view(lg: Log) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for _, key, value, *_ in read_log(lg):
        assert key is not None
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def test_a_full_offset_map_cleans_as_far_as_it_reaches_and_the_next_pass_goes_on() -> None:
    with tempfile.TemporaryDirectory() as d:
        lg = overwritten_log(d)
        small = OffsetMap(600)
        assert small.slots == 3
        first = clean_log(lg, first_dirty=0, first_uncleanable=12, offset_map=small, now_ms=0)
        assert first.end_offset == 3  # k0, k1, k2 mapped; the batch of k3 did not fit
        assert [g[0] for g in read_log(lg)] == list(range(12))  # nothing superseded yet
        second = clean_log(lg, first_dirty=3, first_uncleanable=12, offset_map=small, now_ms=0)
        assert second.end_offset == 6
        third = clean_log(lg, first_dirty=6, first_uncleanable=12, offset_map=small, now_ms=0)
        fourth = clean_log(lg, first_dirty=third.end_offset, first_uncleanable=12,
                           offset_map=small, now_ms=0)  # fmt: skip
        assert fourth.end_offset == 12
        assert [g[0] for g in read_log(lg)] == list(range(6, 12))
        lg.close()


def overwritten_log(d: str) -> Log:
    """k0..k5 written twice over three rolled segments, and an active one."""
    lg = Log.open(d, TP, COMPACT, MockClock())
    for i in range(12):
        record = SimpleRecord(KEYS[i % 6], b"v%d" % i, (), 1_000)
        lg.append(bytes(build_batch([record])), leader_epoch=0)
        if i % 4 == 3:
            lg.roll()
    return lg


def test_a_pass_is_abandoned_when_the_log_changed_under_it() -> None:
    with tempfile.TemporaryDirectory() as d:
        lg = overwritten_log(d)

        def truncate_first(swap: Callable[[], bool]) -> bool:
            lg.truncate_to(2)  # a follower's truncation, run on the loop before the swap
            return swap()

        result = clean_log(
            lg, first_dirty=0, first_uncleanable=12, offset_map=OffsetMap(1 << 20),
            now_ms=0, on_owner=truncate_first,
        )  # fmt: skip
        assert not result.complete
        assert [g[0] for g in read_log(lg)] == [0, 1]
        assert not [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap"))]
        lg.close()


def test_a_swap_that_cannot_reach_the_owner_leaves_no_swap_file_behind() -> None:
    with tempfile.TemporaryDirectory() as d:
        lg = overwritten_log(d)
        before = read_log(lg)

        def loop_closed(swap: Callable[[], bool]) -> bool:
            raise RuntimeError("Event loop is closed")

        with pytest.raises(RuntimeError):
            clean_log(
                lg, first_dirty=0, first_uncleanable=12, offset_map=OffsetMap(1 << 20),
                now_ms=0, on_owner=loop_closed,
            )  # fmt: skip
        assert read_log(lg) == before
        assert not [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap"))]
        lg.close()


def test_a_stopping_cleaner_ends_the_pass_before_the_next_group() -> None:
    with tempfile.TemporaryDirectory() as d:
        lg = overwritten_log(d)
        before = read_log(lg)
        result = clean_log(
            lg, first_dirty=0, first_uncleanable=12, offset_map=OffsetMap(1 << 20),
            now_ms=0, stopping=lambda: True,
        )  # fmt: skip
        assert not result.complete and read_log(lg) == before
        lg.close()


def test_groups_stay_within_the_segment_size_and_the_offsets_a_segment_holds() -> None:
    with tempfile.TemporaryDirectory() as d:
        lg = overwritten_log(d)
        segments = lg.segments[:-1]
        nexts = [s.base_offset for s in lg.segments[1:]]
        sizes = [s.size for s in segments]
        groups = group_segments(segments, nexts, sum(sizes[:2]), 4096)
        assert [len(g) for g in groups] == [2, 1]
        assert [s for g in groups for s in g] == segments
        assert [len(g) for g in group_segments(segments, nexts, 1 << 30, 4096)] == [3]
        assert [len(g) for g in group_segments(segments, nexts, sizes[0], 4096)] == [1, 1, 1]
        # offsets: a segment holds at most 2**32 of them past its base
        far = [nexts[0], nexts[1], nexts[1] + (1 << 32)]
        assert [len(g) for g in group_segments(segments, far, 1 << 30, 4096)] == [2, 1]
        lg.close()
