"""Which commits expire (Kafka 2.1+): from the time an Empty group became empty, from the
commit itself for groups without a protocol and for topics a Stable consumer group no
longer subscribes to, never while rebalancing; explicit expire timestamps win."""

from __future__ import annotations

from broker.group.expiry import expired_offsets, is_removable
from broker.group.membership import subscribed_topics
from broker.group.model import CommittedOffset, GroupMetadata, GroupState, MemberMetadata
from protocol.data import encode_data
from protocol.messages import ConsumerProtocolSubscription
from protocol.values import TopicPartition

RETENTION = 1000
A0 = TopicPartition("a", 0)
B0 = TopicPartition("b", 0)


def committed(ts: int, expire: int | None = None) -> CommittedOffset:
    return CommittedOffset(offset=1, commit_timestamp=ts, expire_timestamp=expire)


def subscription(*topics: str) -> bytes:
    return encode_data("ConsumerProtocolSubscription", 1, ConsumerProtocolSubscription(
        topics=list(topics), user_data=None, owned_partitions=[]
    ))  # fmt: skip


def member(topics: tuple[str, ...]) -> MemberMetadata:
    return MemberMetadata(
        member_id="m",
        group_instance_id=None,
        client_id="c",
        client_host="/h",
        rebalance_timeout_ms=1,
        session_timeout_ms=1,
        protocol_type="consumer",
        protocols=[("range", subscription(*topics))],
    )


def group(
    state: GroupState,
    protocol_type: str | None = "consumer",
    *,
    since: int | None = None,
    topics: tuple[str, ...] | None = None,
) -> GroupMetadata:
    g = GroupMetadata("g", state=state, protocol_type=protocol_type, current_state_timestamp=since)
    if topics is not None:
        g.protocol_name = "range"
        g.members = {"m": member(topics)}
    g.offsets = {A0: committed(0), B0: committed(500)}
    return g


def test_an_empty_group_expires_every_commit_retention_after_it_became_empty() -> None:
    g = group(GroupState.EMPTY, since=2000)
    assert expired_offsets(g, 2999, RETENTION) == []
    # the commits themselves are older, but only the time since emptiness counts
    assert sorted(expired_offsets(g, 3000, RETENTION)) == [A0, B0]


def test_an_empty_group_without_a_state_timestamp_uses_each_commit_time() -> None:
    g = group(GroupState.EMPTY, since=None)
    assert expired_offsets(g, 1200, RETENTION) == [A0]


def test_a_group_without_protocol_type_expires_by_commit_time() -> None:
    g = group(GroupState.EMPTY, protocol_type=None, since=5000)
    assert expired_offsets(g, 1000, RETENTION) == [A0]
    assert sorted(expired_offsets(g, 1500, RETENTION)) == [A0, B0]


def test_a_stable_consumer_group_expires_only_topics_no_member_subscribes_to() -> None:
    g = group(GroupState.STABLE, topics=("a",))
    assert subscribed_topics(g) == {"a"}
    assert expired_offsets(g, 10_000, RETENTION) == [B0]


def test_a_rebalancing_group_expires_nothing() -> None:
    for state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
        assert expired_offsets(group(state, topics=("x",)), 10**9, RETENTION) == []


def test_a_stable_group_of_another_protocol_type_expires_nothing() -> None:
    g = group(GroupState.STABLE, protocol_type="connect", topics=("x",))
    assert subscribed_topics(g) is None
    assert expired_offsets(g, 10**9, RETENTION) == []


def test_an_explicit_expire_timestamp_wins() -> None:
    g = group(GroupState.EMPTY, since=0)
    g.offsets = {A0: committed(0, expire=50_000)}
    assert expired_offsets(g, 49_999, RETENTION) == []
    assert expired_offsets(g, 50_000, RETENTION) == [A0]


def test_a_commit_being_written_never_expires() -> None:
    g = group(GroupState.EMPTY, since=0)
    g.pending_offsets = {A0: committed(0)}
    assert expired_offsets(g, 10**9, RETENTION) == [B0]


def test_only_an_empty_group_without_commits_is_removable() -> None:
    g = GroupMetadata("g")
    assert is_removable(g)
    g.pending_offsets = {A0: committed(0)}
    assert not is_removable(g)
    assert not is_removable(GroupMetadata("g", state=GroupState.STABLE))


def test_a_group_with_transactional_commits_awaiting_their_marker_is_not_removable() -> None:
    g = GroupMetadata("g")
    g.txn_offsets = {7: {A0: (12, committed(0))}}
    assert not is_removable(g)
