"""A property test: random appends, truncations, rolls, DeleteRecords and reopenings
(clean or after a crash) against a model of the batches the log must hold."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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

#: No retention by time or size: only DeleteRecords moves the log start here.
CONFIG = dataclasses.replace(SMALL, retention_ms=-1)

Op = tuple[str, int, int]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 6), st.integers(0, 50)),
        st.tuples(st.just("truncate"), st.integers(0, 100), st.just(0)),
        st.tuples(st.just("roll"), st.just(0), st.just(0)),
        st.tuples(st.just("delete_records"), st.integers(0, 100), st.just(0)),
        st.tuples(st.just("reopen"), st.integers(0, 1), st.just(0)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_log_matches_the_model(operations: list[Op]) -> None:
    root = tempfile.mkdtemp(prefix="storage-model-")
    try:
        run(root, operations)
    finally:
        shutil.rmtree(root)


def run(root: str, operations: list[Op]) -> None:
    path = os.path.join(root, "log")
    lg = open_log(path, CONFIG)
    model: list[tuple[int, int]] = []  # (base offset, last offset) of every batch
    start = 0
    ts = 1_000
    for op, a, b in operations:
        if op == "append":
            ts += b
            info = lg.append(make_batch(a, timestamp=ts), leader_epoch=0)
            model.append((info.first_offset, info.last_offset))
        elif op == "truncate":
            end = model[-1][1] + 1 if model else start
            target = max(start, min(a, end))
            first_base = lg.segments[0].base_offset
            lg.truncate_to(target)
            removed = [m for m in model if m[1] >= target]
            model = [m for m in model if m[1] < target]
            # A batch holding the target goes whole, so the log may end below the target;
            # truncating at or below the first segment starts the log afresh at the target.
            if target <= first_base:
                new_end = target
            else:
                new_end = removed[0][0] if removed else end
            start = min(start, new_end)
        elif op == "roll":
            lg.roll()
        elif op == "delete_records":
            lg.update_high_watermark(lg.log_end_offset)
            target = min(max(a, start), lg.log_end_offset)
            start = lg.increment_log_start_offset(target)
            lg.delete_old_segments()
        else:
            lg = reopen(lg, path, clean=bool(a))
        assert [(h.base_offset, h.last_offset) for _, _, h in lg.iter_batch_headers(0)] == [
            m for m in model if m[1] >= lg.segments[0].base_offset
        ]
        assert lg.log_start_offset == start or (not model and lg.log_start_offset >= start)
        start = lg.log_start_offset
    reference = rebuilt_copy(path, os.path.join(root, "ref"), like=lg)
    assert_lookups_agree(lg, reference, exact_time_index=False)
    reference.close()
    assert len(all_batches(lg)) <= len(model)
    lg.close()


def reopen(lg: Log, path: str, clean: bool) -> Log:
    if clean:
        lg.flush()
        start, recovery = lg.log_start_offset, lg.recovery_point
        lg.close()
        reopened: Log = open_log(path, CONFIG, clean_shutdown=True, log_start_offset=start,
                                 recovery_point=recovery)  # fmt: skip
        return reopened
    start = lg.log_start_offset
    crash(lg)
    recovered: Log = open_log(
        path, CONFIG, clean_shutdown=False, log_start_offset=start, recovery_point=0
    )
    return recovered
