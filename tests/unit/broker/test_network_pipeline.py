"""The pipelining rules of one connection: which requests let the next in, and the order
and bound of the responses it owes (broker.network.pipeline)."""

from __future__ import annotations

import pytest

from broker.network.pipeline import (
    DEFAULT_DEPTH,
    ReplyQueue,
    lets_next_in,
    reads_on_when_answered,
)
from protocol import ApiKey


def test_only_a_waiting_produce_lets_the_next_request_in() -> None:
    assert lets_next_in(ApiKey.PRODUCE)
    for api in (ApiKey.FETCH, ApiKey.METADATA, ApiKey.API_VERSIONS, ApiKey.LIST_OFFSETS):
        assert not lets_next_in(api)


def test_an_answer_holds_the_connection_only_when_nothing_is_owed_before_it() -> None:
    assert not reads_on_when_answered(has_response=True, earlier_owed=False)  # Kafka's rule
    assert reads_on_when_answered(has_response=True, earlier_owed=True)  # waits its turn
    assert reads_on_when_answered(has_response=False, earlier_owed=False)  # acks=0
    assert reads_on_when_answered(has_response=False, earlier_owed=True)


def test_responses_are_taken_in_request_order_whatever_order_they_come_in() -> None:
    queue = ReplyQueue()
    keys = [object() for _ in range(4)]
    for key in keys:
        queue.open(key)
    assert queue.fill(keys[3], "r3")
    assert queue.fill(keys[1], "r1")
    assert queue.take() is None  # the head is still awaited
    assert queue.fill(keys[0], "r0")
    assert queue.take() == (keys[0], "r0")
    assert queue.take() == (keys[1], "r1")
    assert queue.take() is None  # keys[2] holds back keys[3]
    assert queue.fill(keys[2], None)  # no response: it keeps only its place
    assert queue.take() == (keys[2], None)
    assert queue.take() == (keys[3], "r3")
    assert len(queue) == 0


def test_the_depth_bounds_the_requests_owed() -> None:
    queue = ReplyQueue(depth=2)
    first, second = object(), object()
    queue.open(first)
    queue.open(second)
    assert not queue.has_room
    with pytest.raises(OverflowError):
        queue.open(object())
    queue.fill(first, "r")
    assert not queue.has_room  # filled but not taken: still owed
    queue.take()
    assert queue.has_room and len(queue) == 1


def test_a_response_is_recorded_once_and_only_for_an_open_slot() -> None:
    queue = ReplyQueue()
    key = object()
    assert not queue.fill(key, "r")  # never opened
    queue.open(key)
    assert queue.is_open(key)
    assert queue.fill(key, "r")
    assert not queue.fill(key, "again")
    queue.clear()
    assert not queue.is_open(key) and len(queue) == 0


def test_depth_defaults_to_an_idempotent_producers_largest_in_flight_and_is_positive() -> None:
    assert ReplyQueue().depth == DEFAULT_DEPTH == 5
    with pytest.raises(ValueError):
        ReplyQueue(depth=0)
