"""Correlation ids: fresh per request, wrapping at int32, answers matched oldest first."""

from __future__ import annotations

import struct

import pytest

from client.inflight import MAX_CORRELATION_ID, CorrelationMismatch, InFlightRequests


def frame(cid: int, rest: bytes = b"") -> bytes:
    return struct.pack(">i", cid) + rest


def test_ids_increase_and_wrap_to_zero() -> None:
    t: InFlightRequests[str] = InFlightRequests(first_id=MAX_CORRELATION_ID - 1)
    assert [t.next_id() for _ in range(3)] == [MAX_CORRELATION_ID - 1, MAX_CORRELATION_ID, 0]


def test_responses_complete_their_own_requests_in_order() -> None:
    t: InFlightRequests[str] = InFlightRequests()
    a = t.add(3, 12, "metadata")
    b = t.add(0, 9, "produce")
    assert (a.correlation_id, b.correlation_id) == (0, 1)
    assert t.complete(frame(0, b"body")).waiter == "metadata"
    done = t.complete(frame(1))
    assert (done.waiter, done.api_key, done.api_version) == ("produce", 0, 9)
    assert len(t) == 0


def test_an_answer_out_of_order_is_a_mismatch() -> None:
    t: InFlightRequests[str] = InFlightRequests()
    t.add(3, 12, "first")
    t.add(3, 12, "second")
    with pytest.raises(CorrelationMismatch, match="oldest"):
        t.complete(frame(1))


def test_unknown_or_unexpected_or_short_frames_are_mismatches() -> None:
    t: InFlightRequests[str] = InFlightRequests()
    with pytest.raises(CorrelationMismatch, match="no request in flight"):
        t.complete(frame(7))
    t.add(3, 12, "x")
    with pytest.raises(CorrelationMismatch, match="oldest"):
        t.complete(frame(99))
    with pytest.raises(CorrelationMismatch, match="no header"):
        t.complete(b"\x00\x00")


def test_ids_used_without_a_response_are_skipped_by_matching() -> None:
    # acks=0 produce takes an id but expects no answer: the next answer is still matched
    t: InFlightRequests[str] = InFlightRequests()
    t.next_id()
    entry = t.add(3, 12, "after")
    assert entry.correlation_id == 1
    assert t.complete(frame(1)).waiter == "after"


def test_drain_returns_everything_oldest_first_and_forget_drops_one() -> None:
    t: InFlightRequests[str] = InFlightRequests()
    for name in "abc":
        t.add(1, 4, name)
    assert t.forget(1) is not None and t.forget(1) is None
    assert [e.waiter for e in t.drain()] == ["a", "c"]
    assert len(t) == 0
