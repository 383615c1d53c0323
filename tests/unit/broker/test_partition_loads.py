"""The leadership rules both coordinator stores follow (broker.partition_loads): which
leader epochs apply, and which partitions of the report are the store's."""

from __future__ import annotations

from broker.partition_loads import LeaderEpochs, route_leadership
from protocol.values import EPOCH_DURING_DELETE, TopicPartition


def test_an_older_epoch_is_ignored_and_a_deletion_starts_over() -> None:
    epochs = LeaderEpochs("__consumer_offsets")
    assert epochs.get(3) == -1
    assert epochs.accept(3, 5) and epochs.get(3) == 5
    assert epochs.accept(3, 5)  # the same epoch applies again (a repeated request)
    assert not epochs.accept(3, 4) and epochs.get(3) == 5
    assert epochs.accept(3, -1) and epochs.get(3) == 5  # a StopReplica without an epoch
    assert epochs.accept(3, EPOCH_DURING_DELETE) and epochs.get(3) == -1
    assert epochs.accept(3, 1)  # the topic created again: its epochs start over
    assert epochs.get(4) == -1  # each partition on its own


def test_only_the_stores_topic_is_routed_leaders_first() -> None:
    calls: list[tuple[str, int, int]] = []
    route_leadership(
        "__transaction_state",
        {TopicPartition("__transaction_state", 1): 7, TopicPartition("orders", 1): 2},
        {TopicPartition("__transaction_state", 0): 3, TopicPartition("__consumer_offsets", 0): 1},
        lambda p, e: calls.append(("lead", p, e)),
        lambda p, e: calls.append(("resign", p, e)),
    )
    assert calls == [("lead", 1, 7), ("resign", 0, 3)]
