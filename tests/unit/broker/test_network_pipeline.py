"""The pipelining rules of one connection: which requests let the next in, and the order
and bound of the responses it owes (broker.network.pipeline)."""

from __future__ import annotations

import pytest

from broker.network.pipeline import (
    DEFAULT_BUDGET,
    DEFAULT_DEPTH,
    FREE_DEPTH,
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


def test_depth_defaults_deep_for_one_partition_produces_and_is_positive() -> None:
    """librdkafka sends a ProduceRequest per partition: a thousand partitions led by a
    broker are a thousand requests of one connection, let in together."""
    assert ReplyQueue().depth == DEFAULT_DEPTH == 1024
    assert FREE_DEPTH == 5  # an idempotent producer's largest in-flight, of any size
    with pytest.raises(ValueError):
        ReplyQueue(depth=0)


def test_past_the_free_depth_requests_enter_only_within_the_byte_budget() -> None:
    queue = ReplyQueue(depth=100, budget=1000)
    for _ in range(FREE_DEPTH):
        assert queue.has_room
        queue.open(object(), 600)  # large frames: the first five enter all the same
    assert queue.size == FREE_DEPTH * 600
    assert not queue.has_room  # a sixth must fit the budget, which they exceed
    while queue:
        queue.fill(queue[0].key, "r")
        queue.take()
    assert queue.size == 0
    for _ in range(9):
        queue.open(object(), 100)
    assert queue.has_room  # 900 bytes in the broker: under the budget
    assert not queue.room_for(1, 100)  # counting a frame read ahead, it is reached
    queue.open(object(), 100)
    assert not queue.has_room


def test_small_requests_stop_at_the_depth_whatever_the_budget() -> None:
    queue = ReplyQueue(depth=8, budget=DEFAULT_BUDGET)
    for _ in range(8):
        queue.open(object(), 1)
    assert not queue.has_room
    assert not ReplyQueue(depth=2).room_for(2, 0)  # a depth under the free one bounds too


def test_a_deep_queue_fills_out_of_order_and_clears_its_index() -> None:
    queue = ReplyQueue()
    keys = [object() for _ in range(500)]
    for key in keys:
        queue.open(key, 10)
    for i, key in enumerate(reversed(keys)):
        assert queue.fill(key, i)
        assert not queue.fill(key, "again")
    taken = [queue.take() for _ in keys]
    assert [t[0] for t in taken if t is not None] == keys
    assert not queue.is_open(keys[0]) and queue.size == 0
    queue.open(keys[0], 10)
    queue.clear()
    assert not queue.is_open(keys[0]) and queue.size == 0 and not queue.fill(keys[0], "r")
