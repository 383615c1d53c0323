"""The failover tests' verdicts (tests.integration.replication_chaos) on made-up histories.

Those integration tests pass when ``delivery_problems`` and ``replica_divergence`` find
nothing; a checker that never finds anything would make them pass vacuously. Here each
kind of damage is shown to be found, and a clean history to be clean.
"""

from __future__ import annotations

from tests.integration.replication_chaos import StoredBatch, replica_divergence
from tests.integration.sequence_producer import Ack, delivery_problems


def acks(pairs: list[tuple[int, int]]) -> list[Ack]:
    """(sequence, offset) pairs as acknowledgements."""
    return [Ack(seq, offset, 0.0, 0.0) for seq, offset in pairs]


def log(values: list[int]) -> list[tuple[int, bytes]]:
    return [(offset, str(v).encode()) for offset, v in enumerate(values)]


SENT = {0: [0, 3, 6, 9], 1: [1, 4, 7]}


def test_a_clean_history_has_no_problems() -> None:
    acked = {0: acks([(0, 0), (3, 1), (6, 2), (9, 3)]), 1: acks([(1, 0), (4, 1)])}
    consumed = {0: log([0, 3, 6, 9]), 1: log([1, 4, 7])}  # 7 was written, not yet acked
    assert delivery_problems(SENT, acked, consumed) == []


def test_padded_values_read_as_their_sequence() -> None:
    consumed = {0: [(0, b"0....."), (1, b"3.....")]}
    assert delivery_problems({0: [0, 3]}, {0: acks([(0, 0), (3, 1)])}, consumed) == []


def test_a_lost_acknowledged_record_is_found() -> None:
    acked = {0: acks([(0, 0), (3, 1), (6, 2)])}
    (problem,) = delivery_problems({0: [0, 3, 6]}, acked, {0: log([0, 3])})
    assert "record 6 acknowledged at offset 2" in problem


def test_an_acknowledgement_at_the_wrong_offset_is_found() -> None:
    problems = delivery_problems({0: [0, 3]}, {0: acks([(0, 0), (3, 5)])}, {0: log([0, 3])})
    assert any("record 3 acknowledged at offset 5" in p for p in problems)


def test_duplicates_are_found() -> None:
    problems = delivery_problems({0: [0, 3]}, {}, {0: log([0, 3, 3])})
    assert any("duplicates [3]" in p for p in problems)


def test_a_gap_is_found() -> None:
    problems = delivery_problems({0: [0, 3, 6]}, {}, {0: log([0, 6])})
    assert any("gap" in p for p in problems)


def test_a_reorder_is_found() -> None:
    problems = delivery_problems({0: [0, 3, 6]}, {}, {0: log([0, 6, 3])})
    assert any("position 1" in p for p in problems)


def test_a_value_nobody_sent_is_found() -> None:
    consumed = {0: [(0, b"0"), (1, b"stale")]}
    problems = delivery_problems({0: [0]}, {}, consumed)
    assert any("nobody sent" in p for p in problems)


def batch(base: int, last: int, epoch: int, data: bytes = b"x") -> StoredBatch:
    return StoredBatch(base, last, epoch, data + bytes([base, epoch]))


def test_identical_replicas_agree_below_the_high_watermark() -> None:
    same = [batch(0, 4, 0), batch(5, 9, 1)]
    beyond = [*same, batch(10, 12, 1)]  # above the high watermark: not compared
    assert replica_divergence({0: same, 1: list(same), 2: beyond}, 10) is None


def test_an_empty_partition_agrees() -> None:
    assert replica_divergence({0: [], 1: [], 2: []}, 0) is None


def test_a_replica_short_of_the_high_watermark_diverges() -> None:
    found = replica_divergence({0: [batch(0, 4, 0), batch(5, 9, 1)], 1: [batch(0, 4, 0)]}, 10)
    assert found is not None and "end at 5" in found


def test_a_different_epoch_diverges() -> None:
    found = replica_divergence({0: [batch(0, 4, 0)], 1: [batch(0, 4, 1)]}, 5)
    assert found is not None and "epoch" in found


def test_different_bytes_diverge() -> None:
    a = StoredBatch(0, 4, 0, b"abc")
    b = StoredBatch(0, 4, 0, b"abd")
    found = replica_divergence({0: [a], 1: [b]}, 5)
    assert found is not None and "bytes" in found


def test_different_batch_boundaries_diverge() -> None:
    whole = [batch(0, 9, 0)]
    split = [batch(0, 4, 0), batch(5, 9, 0)]
    assert replica_divergence({0: whole, 1: split}, 10) is not None


def test_an_acknowledgement_without_an_offset_is_a_problem() -> None:
    acked = {0: acks([(0, 0), (3, -1)])}
    (problem,) = delivery_problems({0: [0, 3]}, acked, {0: log([0, 3])})
    assert "record 3 acknowledged without an offset" in problem
    no_offset, lost = delivery_problems({0: [0, 3]}, acked, {0: log([0])})
    assert "record 3 acknowledged without an offset" in no_offset
    assert "record 3 acknowledged, not read" in lost
