"""Membership rules: the protocol vote, the leader, admission, timeouts and fencing."""

from __future__ import annotations

from broker.group import membership
from broker.group.model import GroupMetadata, GroupState, MemberMetadata
from protocol import ErrorCode


def member(member_id: str, *protocols: str, instance: str | None = None) -> MemberMetadata:
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance,
        client_id="c",
        client_host="/127.0.0.1",
        rebalance_timeout_ms=1000,
        session_timeout_ms=10000,
        protocol_type="consumer",
        protocols=[(p, p.encode()) for p in protocols],
    )


def group_of(*members: MemberMetadata, state: GroupState = GroupState.STABLE) -> GroupMetadata:
    return GroupMetadata(
        "g", state=state, protocol_type="consumer", members={m.member_id: m for m in members}
    )


def test_each_member_votes_for_its_first_protocol_every_member_supports() -> None:
    # "range" is a's first choice but c lacks it: a votes sticky, b votes sticky, c roundrobin
    members = [
        member("a", "range", "sticky", "roundrobin"),
        member("b", "sticky", "roundrobin"),
        member("c", "roundrobin", "sticky"),
    ]
    assert membership.select_protocol(members) == "sticky"


def test_the_protocol_with_most_votes_wins_over_the_first_members_choice() -> None:
    members = [member("a", "range", "rr"), member("b", "rr", "range"), member("c", "rr", "range")]
    assert membership.select_protocol(members) == "rr"


def test_a_tie_goes_to_the_protocol_voted_for_first() -> None:
    members = [member("a", "range", "rr"), member("b", "rr", "range")]
    assert membership.select_protocol(members) == "range"


def test_a_member_with_no_protocol_in_common_cannot_join() -> None:
    group = group_of(member("a", "range", "rr"), member("b", "rr"))
    assert not membership.supports_protocols(group, "consumer", [("range", b"")])
    assert membership.supports_protocols(group, "consumer", [("sticky", b""), ("rr", b"")])


def test_the_protocol_type_must_be_the_groups() -> None:
    group = group_of(member("a", "range"))
    assert not membership.supports_protocols(group, "connect", [("range", b"")])


def test_an_empty_group_takes_any_type_and_protocols_but_not_none() -> None:
    empty = GroupMetadata("g")
    assert membership.supports_protocols(empty, "connect", [("x", b"")])
    assert not membership.supports_protocols(empty, "", [("x", b"")])
    assert not membership.supports_protocols(empty, "consumer", [])


def test_the_first_member_leads_until_it_leaves_then_the_next_in_join_order() -> None:
    assert membership.next_leader(["a", "b", "c"], "a") == "a"
    assert membership.next_leader(["b", "c"], "a") == "b"
    assert membership.next_leader([], "a") is None


def test_a_leader_that_did_not_rejoin_gives_way_to_the_first_that_did() -> None:
    assert membership.next_leader(["a", "b", "c"], "a", rejoined={"c", "b"}) == "b"
    assert membership.next_leader(["a", "b"], "a", rejoined={"a", "b"}) == "a"


def test_session_timeouts_outside_the_bounds_are_invalid() -> None:
    assert membership.session_timeout_error(5999, 6000, 30000) == ErrorCode.INVALID_SESSION_TIMEOUT
    assert membership.session_timeout_error(30001, 6000, 30000) == ErrorCode.INVALID_SESSION_TIMEOUT
    assert membership.session_timeout_error(6000, 6000, 30000) == ErrorCode.NONE


def test_a_full_group_admits_its_members_but_no_new_one() -> None:
    group = group_of(member("a", "r"), member("b", "r"))
    assert membership.accepts_member(group, "a", awaiting_join=(), pending=(), max_size=2)
    assert not membership.accepts_member(group, "new", awaiting_join=(), pending=(), max_size=2)


def test_an_empty_group_counts_the_member_ids_it_handed_out() -> None:
    group = group_of(state=GroupState.EMPTY)
    assert membership.accepts_member(group, "new", awaiting_join=(), pending={"p"}, max_size=2)
    assert not membership.accepts_member(
        group, "new", awaiting_join=(), pending={"p", "q"}, max_size=2
    )
    assert membership.accepts_member(group, "q", awaiting_join=(), pending={"p", "q"}, max_size=2)


def test_during_a_rebalance_only_rejoined_and_pending_members_count() -> None:
    group = group_of(member("a", "r"), member("b", "r"), state=GroupState.PREPARING_REBALANCE)
    assert membership.accepts_member(group, "new", awaiting_join={"a"}, pending=(), max_size=2)
    assert not membership.accepts_member(
        group, "new", awaiting_join={"a"}, pending={"p"}, max_size=2
    )


def test_a_replaced_static_member_is_fenced_and_a_stranger_unknown() -> None:
    group = group_of(member("new-id", "r", instance="i1"))
    group.static_members["i1"] = "new-id"
    assert membership.fenced_or_unknown(group, "old-id", "i1") == ErrorCode.FENCED_INSTANCE_ID
    assert membership.fenced_or_unknown(group, "x", None) == ErrorCode.UNKNOWN_MEMBER_ID
    assert membership.fenced_or_unknown(group, "new-id", "i1") == ErrorCode.NONE
