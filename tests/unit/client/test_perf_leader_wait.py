"""perf produce's wait for a topic's leaders (the brokers auto-creating it meanwhile):
which metadata counts as ready, what is waited out, and the bounded wait's error."""

from __future__ import annotations

import uuid
from typing import cast

import pytest

from client import KafkaClient, KafkaError
from client.cluster_view import BrokerNode, ClusterView, PartitionInfo, TopicInfo
from protocol import ErrorCode
from timer.clock import MockClock
from tools.perf import led_partitions, wait_for_leaders

pytestmark = pytest.mark.timeout(10)

BROKERS = {0: BrokerNode(0, "127.0.0.1", 9092), 1: BrokerNode(1, "127.0.0.1", 9093)}


def view(error: int = ErrorCode.NONE, leaders: tuple[int, ...] = ()) -> ClusterView:
    """The view of topic "t" with a partition per entry of ``leaders`` (-1: none)."""
    parts = {p: PartitionInfo(p, leader, 0, (0, 1), (0, 1)) for p, leader in enumerate(leaders)}
    topic = TopicInfo("t", uuid.uuid4(), False, parts, error)
    return ClusterView(BROKERS, {"t": topic}, 0)


def test_a_topic_is_ready_once_every_chosen_partition_has_a_leader() -> None:
    assert led_partitions(view(leaders=(1, 0)), "t", None) == [0, 1]
    assert led_partitions(view(leaders=(1, -1)), "t", None) == ErrorCode.LEADER_NOT_AVAILABLE
    assert led_partitions(view(leaders=(1, -1)), "t", 0) == [0]  # only partition 0 matters
    # a leader the view has no broker for is no leader to connect to
    assert led_partitions(view(leaders=(7,)), "t", None) == ErrorCode.LEADER_NOT_AVAILABLE


def test_a_topic_being_created_is_waited_out_and_other_errors_are_not() -> None:
    absent = ClusterView(BROKERS, {}, 0)
    assert led_partitions(absent, "t", None) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    created = view(ErrorCode.LEADER_NOT_AVAILABLE)
    assert led_partitions(created, "t", None) == ErrorCode.LEADER_NOT_AVAILABLE
    assert led_partitions(view(), "t", None) == ErrorCode.LEADER_NOT_AVAILABLE  # no partitions
    with pytest.raises(KafkaError) as refused:
        led_partitions(view(ErrorCode.TOPIC_AUTHORIZATION_FAILED), "t", None)
    assert refused.value.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(ValueError, match="no partition 5"):
        led_partitions(view(leaders=(0,)), "t", 5)


class Brokers:
    """A client whose metadata answers come from a list (the last one repeating), and the
    wait's sleep, which moves the clock instead of waiting."""

    def __init__(self, answers: list[ClusterView], clock: MockClock) -> None:
        self.answers = answers
        self.clock = clock
        self.asked: list[bool] = []
        self.slept_ms: list[int] = []

    async def refresh_metadata(
        self, topics: list[str], *, allow_auto_create: bool = False
    ) -> ClusterView:
        self.asked.append(allow_auto_create)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    async def sleep(self, seconds: float) -> None:
        self.slept_ms.append(round(seconds * 1000))
        self.clock.advance(round(seconds * 1000))


async def test_the_wait_lasts_until_the_controller_has_elected_the_leaders() -> None:
    clock = MockClock()
    answers = [
        view(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        view(ErrorCode.LEADER_NOT_AVAILABLE),
        view(leaders=(-1, 0)),
        view(leaders=(1, 0)),
    ]
    brokers = Brokers(answers, clock)
    client = cast(KafkaClient, brokers)
    partitions = await wait_for_leaders(client, "t", None, clock, 60_000, brokers.sleep)
    assert partitions == [0, 1]
    assert brokers.asked == [True] * 4  # every request lets the brokers auto-create it
    assert brokers.slept_ms == [50, 100, 200]  # a backoff between requests, doubling


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "does not exist"),
        (ErrorCode.LEADER_NOT_AVAILABLE, "has no leader for every partition"),
    ],
)
async def test_a_topic_that_never_appears_fails_after_max_block_ms(error: int, said: str) -> None:
    clock = MockClock()
    brokers = Brokers([view(error)], clock)
    with pytest.raises(KafkaError) as failed:
        await wait_for_leaders(cast(KafkaClient, brokers), "t", None, clock, 3_000, brokers.sleep)
    assert failed.value.error_code == error
    assert said in str(failed.value) and "after 3000 ms" in str(failed.value)
    # asked until the deadline and not beyond: the backoff is capped at 1 s and the last
    # sleep at what is left
    assert brokers.slept_ms == [50, 100, 200, 400, 800, 1000, 450]
    assert clock.monotonic_ms() == 3_000 and len(brokers.asked) == 8
