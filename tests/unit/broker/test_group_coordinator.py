"""The group coordinator's flows over an in-memory store, with time moved by hand.

A MockClock drives both purgatories (reapers off): ``Harness.advance(ms)`` moves time and
runs whatever fell due -- the initial rebalance delay, rebalance timeouts, session timers.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

import pytest

from broker.group.coordinator import GroupConfig, GroupCoordinator
from broker.group.delayed import DelayedHeartbeat
from broker.group.model import CommittedOffset, GroupState
from broker.group.results import JoinRequest, JoinResult, SyncResult
from protocol import ErrorCode
from protocol.data import data_class, encode_data
from protocol.values import TopicPartition
from tests.unit.broker.memory_group_store import MemoryGroupStore
from timer import DelayedOperation, DelayedOperationPurgatory
from timer.clock import MockClock

SESSION_MS = 10_000
REBALANCE_MS = 30_000
INITIAL_DELAY_MS = 3_000
pytestmark = pytest.mark.timeout(10)
TP0 = TopicPartition("t", 0)


def subscription(*topics: str) -> bytes:
    cls = data_class("ConsumerProtocolSubscription")
    return encode_data("ConsumerProtocolSubscription", 0, cls(topics=list(topics)))


@dataclass
class Harness:
    store: MemoryGroupStore = field(default_factory=MemoryGroupStore)
    clock: MockClock = field(default_factory=MockClock)
    max_size: int = 2**31 - 1
    coordinator: GroupCoordinator = field(init=False)
    rebalances: int = 0
    committed: int = 0

    def __post_init__(self) -> None:
        self.joins: DelayedOperationPurgatory[DelayedOperation] = DelayedOperationPurgatory(
            "Rebalance", clock=self.clock, reaper_enabled=False
        )
        self.heartbeats: DelayedOperationPurgatory[DelayedHeartbeat] = DelayedOperationPurgatory(
            "Heartbeat", clock=self.clock, reaper_enabled=False
        )
        ids = itertools.count(1)

        def count_rebalance() -> None:
            self.rebalances += 1

        def count_commits(n: int) -> None:
            self.committed += n

        self.coordinator = GroupCoordinator(
            self.store,
            GroupConfig(initial_rebalance_delay_ms=INITIAL_DELAY_MS, max_size=self.max_size),
            self.clock,
            self.joins,
            self.heartbeats,
            on_rebalance=count_rebalance,
            on_offsets_committed=count_commits,
            new_uuid=lambda: f"uuid{next(ids)}",
        )

    async def end_initial_delay(self) -> None:
        """The first rebalance waits one initial delay, and one more when members came
        during it (none come during the second, here)."""
        await self.advance(INITIAL_DELAY_MS)
        await self.advance(INITIAL_DELAY_MS)

    async def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.joins.advance_clock()
        self.heartbeats.advance_clock()
        await settle()

    def join(
        self,
        member_id: str = "",
        *,
        client_id: str = "client",
        protocols: tuple[tuple[str, bytes], ...] = (("range", subscription("t")),),
        instance: str | None = None,
        session_ms: int = SESSION_MS,
        require_known_member_id: bool = True,
    ) -> asyncio.Future[JoinResult]:
        return self.coordinator.join_group(
            JoinRequest(
                group_id="g",
                member_id=member_id,
                group_instance_id=instance,
                client_id=client_id,
                client_host="/127.0.0.1",
                session_timeout_ms=session_ms,
                rebalance_timeout_ms=REBALANCE_MS,
                protocol_type="consumer",
                protocols=protocols,
                require_known_member_id=require_known_member_id,
            )
        )

    def sync(
        self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None
    ) -> asyncio.Future[SyncResult]:
        return self.coordinator.sync_group(
            "g", generation, member_id, None, None, None, assignments or {}
        )

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> int:
        return self.coordinator.heartbeat("g", member_id, instance, generation)

    def state(self) -> GroupState:
        group = self.store.get_group("g")
        assert group is not None
        return group.state

    async def stable_group(self, *clients: str) -> dict[str, str]:
        """Clients (client ids) joined with v4 semantics and synced: client -> member id.
        The first client leads and assigns ``<member id>`` bytes to each member."""
        member_ids: dict[str, str] = {}
        parked = []
        for client in clients:
            first = await self.join(client_id=client)
            assert first.error == ErrorCode.MEMBER_ID_REQUIRED
            member_ids[client] = first.member_id
            parked.append(self.join(first.member_id, client_id=client))
        await self.end_initial_delay()
        results = [await p for p in parked]
        generation = results[0].generation_id
        leader = member_ids[clients[0]]
        syncs = [self.sync(m, generation) for m in list(member_ids.values())[1:]]
        leader_sync = self.sync(leader, generation, {m: m.encode() for m in member_ids.values()})
        for s in [leader_sync, *syncs]:
            assert (await s).error == ErrorCode.NONE
        assert self.state() is GroupState.STABLE
        return member_ids


async def settle() -> None:
    """Let tasks spawned by the coordinator (the store's writes) run to their end."""
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
def h() -> Harness:
    return Harness()


async def test_three_members_join_and_sync_one_generation(h: Harness) -> None:
    first = await h.join(client_id="a")
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id == "a-uuid1"
    ids = ["a-uuid1"]
    parked = [h.join("a-uuid1", client_id="a")]
    for client in ("b", "c"):
        result = await h.join(client_id=client)
        ids.append(result.member_id)
        parked.append(h.join(result.member_id, client_id=client))
    assert not any(p.done() for p in parked)  # the initial delay holds the first rebalance
    assert h.state() is GroupState.PREPARING_REBALANCE
    await h.advance(INITIAL_DELAY_MS)
    # members arrived during the delay: the group waits one delay more for others
    assert not any(p.done() for p in parked)
    await h.advance(INITIAL_DELAY_MS)

    leader, *followers = [await p for p in parked]
    assert {r.generation_id for r in (leader, *followers)} == {1}
    assert {r.leader_id for r in (leader, *followers)} == {"a-uuid1"}
    assert leader.protocol_name == "range"
    assert [m.member_id for m in leader.members] == ids
    assert all(not f.members for f in followers)
    assert h.state() is GroupState.COMPLETING_REBALANCE

    follower_syncs = [h.sync(ids[1], 1), h.sync(ids[2], 1)]
    await settle()
    assert not any(s.done() for s in follower_syncs)  # they wait for the leader
    h.store.hold()
    leader_sync = h.sync(ids[0], 1, {m: f"part-{m}".encode() for m in ids})
    await settle()
    assert not leader_sync.done()  # not answered before the assignment is stored
    h.store.release()
    answers = [await s for s in (leader_sync, *follower_syncs)]
    assert [a.assignment for a in answers] == [f"part-{m}".encode() for m in ids]
    assert h.store.stored_groups[-1] == ("g", 1, {m: f"part-{m}".encode() for m in ids})
    assert h.state() is GroupState.STABLE
    assert h.rebalances == 1


async def test_a_member_leaving_rebalances_the_rest(h: Harness) -> None:
    ids = await h.stable_group("a", "b", "c")
    top, errors = h.coordinator.leave_group("g", [(ids["c"], None)])
    assert (top, errors) == (ErrorCode.NONE, [ErrorCode.NONE])
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(ids["a"], 1) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin_a = h.join(ids["a"], client_id="a")
    await settle()
    assert not rejoin_a.done()
    rejoin_b = h.join(ids["b"], client_id="b")  # the last known member: the phase ends now
    a, b = await rejoin_a, await rejoin_b
    assert (a.generation_id, b.generation_id) == (2, 2)
    assert [m.member_id for m in a.members] == [ids["a"], ids["b"]]
    assert h.rebalances == 2


async def test_when_the_leader_leaves_the_next_member_leads(h: Harness) -> None:
    ids = await h.stable_group("a", "b", "c")
    h.coordinator.leave_group("g", [(ids["a"], None)])
    results = [h.join(ids[c], client_id=c) for c in ("b", "c")]
    b, c = [await r for r in results]
    assert b.leader_id == c.leader_id == ids["b"]
    assert [m.member_id for m in b.members] == [ids["b"], ids["c"]]


async def test_members_that_do_not_rejoin_are_removed_at_the_rebalance_timeout(
    h: Harness,
) -> None:
    ids = await h.stable_group("a", "b")
    rejoin = h.join(ids["b"], client_id="b", protocols=(("range", subscription("t", "u")),))
    for _ in range(REBALANCE_MS // (SESSION_MS // 2) - 1):
        await h.advance(SESSION_MS // 2)
        # a stays alive by heartbeating, but does not rejoin
        assert h.heartbeat(ids["a"], 1) == ErrorCode.REBALANCE_IN_PROGRESS
    await h.advance(SESSION_MS // 2 - 1)
    assert not rejoin.done()
    await h.advance(1)
    result = await rejoin
    assert (result.error, result.generation_id, result.leader_id) == (ErrorCode.NONE, 2, ids["b"])
    assert h.heartbeat(ids["a"], 2) == ErrorCode.UNKNOWN_MEMBER_ID


async def joined_pair(h: Harness) -> tuple[JoinResult, JoinResult]:
    """a (the leader) and b joined generation 1; neither has synced."""
    parked = []
    for client in ("a", "b"):
        first = await h.join(client_id=client)
        parked.append(h.join(first.member_id, client_id=client))
    await h.end_initial_delay()
    a, b = [await p for p in parked]
    assert h.state() is GroupState.COMPLETING_REBALANCE
    return a, b


async def heartbeat_through_the_rebalance_timeout(h: Harness, *member_ids: str) -> None:
    """Keep ``member_ids`` alive by heartbeating until 1 ms before the rebalance timeout
    of the join that ended the join phase."""
    for _ in range(REBALANCE_MS // (SESSION_MS // 2) - 1):
        await h.advance(SESSION_MS // 2)
        for m in member_ids:
            assert h.heartbeat(m, 1) == ErrorCode.NONE
    await h.advance(SESSION_MS // 2 - 1)


async def test_a_follower_that_never_syncs_is_removed_at_the_rebalance_timeout(
    h: Harness,
) -> None:
    a, b = await joined_pair(h)
    synced = await h.sync(a.member_id, 1, {a.member_id: b"A", b.member_id: b"B"})
    assert (synced.error, h.state()) == (ErrorCode.NONE, GroupState.STABLE)
    rebalances = h.rebalances
    # b heartbeats (its session never runs out) but never sends its SyncGroup
    await heartbeat_through_the_rebalance_timeout(h, a.member_id, b.member_id)
    assert (h.state(), h.rebalances) == (GroupState.STABLE, rebalances)
    await h.advance(1)
    assert h.state() is GroupState.PREPARING_REBALANCE and h.rebalances == rebalances + 1
    assert h.heartbeat(b.member_id, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a.member_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    alone = await h.join(a.member_id, client_id="a")
    assert (alone.generation_id, [m.member_id for m in alone.members]) == (2, [a.member_id])


async def test_a_leader_that_never_syncs_is_removed_and_the_parked_followers_told(
    h: Harness,
) -> None:
    a, b = await joined_pair(h)
    parked = h.sync(b.member_id, 1)
    await heartbeat_through_the_rebalance_timeout(h, a.member_id)
    assert not parked.done() and h.state() is GroupState.COMPLETING_REBALANCE
    await h.advance(1)
    assert (await parked).error == ErrorCode.REBALANCE_IN_PROGRESS
    group = h.store.get_group("g")
    assert group is not None
    assert (list(group.members), group.leader_id) == ([b.member_id], b.member_id)
    assert h.state() is GroupState.PREPARING_REBALANCE


async def test_a_generation_whose_members_all_synced_is_left_alone(h: Harness) -> None:
    ids = await h.stable_group("a", "b")
    rebalances = h.rebalances
    await heartbeat_through_the_rebalance_timeout(h, *ids.values())
    await h.advance(SESSION_MS // 2)
    assert all(h.heartbeat(m, 1) == ErrorCode.NONE for m in ids.values())
    assert (h.state(), h.rebalances) == (GroupState.STABLE, rebalances)


async def test_a_static_member_replaced_before_syncing_still_owes_the_sync(
    h: Harness,
) -> None:
    joins = [h.join(client_id=c, instance=f"i-{c}") for c in ("a", "b")]
    await h.end_initial_delay()
    a, _ = [await j for j in joins]
    await h.coordinator.sync_group("g", 1, a.member_id, "i-a", None, None, {a.member_id: b"A"})
    rejoined = await h.join(client_id="b", instance="i-b")  # b restarted before syncing
    assert (rejoined.error, h.state()) == (ErrorCode.NONE, GroupState.STABLE)
    for _ in range(REBALANCE_MS // (SESSION_MS // 2)):
        await h.advance(SESSION_MS // 2)
        h.heartbeat(a.member_id, 1, "i-a")
        h.heartbeat(rejoined.member_id, 1, "i-b")
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(rejoined.member_id, 1, "i-b") == ErrorCode.UNKNOWN_MEMBER_ID


async def test_a_member_that_stops_heartbeating_is_expired_and_the_group_rebalances(
    h: Harness,
) -> None:
    ids = await h.stable_group("a", "b", "c")
    await h.advance(SESSION_MS // 2)
    assert h.heartbeat(ids["a"], 1) == h.heartbeat(ids["b"], 1) == ErrorCode.NONE
    await h.advance(SESSION_MS // 2 - 1)
    assert h.state() is GroupState.STABLE
    await h.advance(1)
    # c never heartbeat: gone once its session ran out
    group = h.store.get_group("g")
    assert group is not None and ids["c"] not in group.members
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(ids["c"], 1) == ErrorCode.UNKNOWN_MEMBER_ID


async def test_a_static_member_rejoining_with_a_new_id_keeps_the_generation(h: Harness) -> None:
    joins = [h.join(client_id=c, instance=f"i-{c}") for c in ("a", "b")]
    await h.end_initial_delay()
    a, b = [await j for j in joins]
    assert a.member_id == "i-a-uuid1"  # static members need no MEMBER_ID_REQUIRED round
    syncs = [
        h.coordinator.sync_group(
            "g", 1, a.member_id, "i-a", None, None, {a.member_id: b"A", b.member_id: b"B"}
        ),
        h.coordinator.sync_group("g", 1, b.member_id, "i-b", None, None, {}),
    ]
    for s in syncs:
        await s
    rebalances = h.rebalances

    rejoined = await h.join(client_id="b", instance="i-b")  # b restarted, lost its member id
    assert (rejoined.error, rejoined.generation_id) == (ErrorCode.NONE, 1)
    assert rejoined.member_id != b.member_id
    assert h.state() is GroupState.STABLE and h.rebalances == rebalances
    assert h.heartbeat(b.member_id, 1, "i-b") == ErrorCode.FENCED_INSTANCE_ID
    assert h.heartbeat(rejoined.member_id, 1, "i-b") == ErrorCode.NONE
    kept = await h.coordinator.sync_group("g", 1, rejoined.member_id, "i-b", None, None, {})
    assert kept.assignment == b"B"


async def test_a_static_member_with_another_protocol_rebalances(h: Harness) -> None:
    await static_pair(h)
    h.join(client_id="b", instance="i-b", protocols=(("rr", b""), ("range", b"")))
    assert h.state() is GroupState.STABLE  # range still wins the vote: no rebalance
    h.join(client_id="a", instance="i-a", protocols=(("rr", b""), ("range", b"")))
    assert h.state() is GroupState.PREPARING_REBALANCE  # now rr would win


async def test_join_checks(h: Harness) -> None:
    short = await h.join(session_ms=10)
    assert short.error == ErrorCode.INVALID_SESSION_TIMEOUT
    await h.stable_group("a")
    other = await h.join(client_id="x", protocols=(("roundrobin", b""),))
    assert other.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    stranger = await h.join("not-a-member", client_id="x")
    assert stranger.error == ErrorCode.UNKNOWN_MEMBER_ID


async def test_a_full_group_refuses_a_new_member() -> None:
    h = Harness(max_size=2)
    await h.stable_group("a")
    first = await h.join(client_id="b")  # takes the last place, held while it rejoins
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    refused = await h.join(client_id="c")
    assert refused.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    admitted = h.join(first.member_id, client_id="b")
    await settle()
    assert not admitted.done()  # in, waiting for the rebalance it started
    assert h.state() is GroupState.PREPARING_REBALANCE


async def test_members_starting_together_fill_an_empty_group_only_to_its_size() -> None:
    h = Harness(max_size=2)
    firsts = [await h.join(client_id=c) for c in ("a", "b", "c")]
    assert [f.error for f in firsts] == [
        ErrorCode.MEMBER_ID_REQUIRED,
        ErrorCode.MEMBER_ID_REQUIRED,
        ErrorCode.GROUP_MAX_SIZE_REACHED,
    ]
    parked = [h.join(f.member_id, client_id=c) for f, c in zip(firsts[:2], "ab", strict=True)]
    await h.end_initial_delay()
    a, b = [await p for p in parked]
    assert (a.error, b.error) == (ErrorCode.NONE, ErrorCode.NONE)
    assert len(a.members) == 2


async def test_commit_checks_generation_member_and_phase(h: Harness) -> None:
    offsets = {TP0: CommittedOffset(5)}
    ids = await h.stable_group("a", "b")
    commit = h.coordinator.offsets.commit
    assert (await commit("g", ids["a"], None, 7, offsets)) == {TP0: ErrorCode.ILLEGAL_GENERATION}
    assert (await commit("g", "who", None, 1, offsets)) == {TP0: ErrorCode.UNKNOWN_MEMBER_ID}
    assert (await commit("g", "", None, -1, offsets)) == {TP0: ErrorCode.UNKNOWN_MEMBER_ID}
    assert (await commit("g", ids["a"], None, 1, offsets)) == {TP0: ErrorCode.NONE}
    assert h.coordinator.offsets.fetch("g", [TP0]) == {TP0: CommittedOffset(5)}
    assert h.committed == 1

    h.coordinator.leave_group("g", [(ids["b"], None)])
    # PreparingRebalance: the current generation may still commit what it consumed
    assert (await commit("g", ids["a"], None, 1, offsets)) == {TP0: ErrorCode.NONE}
    await h.join(ids["a"], client_id="a")
    assert h.state() is GroupState.COMPLETING_REBALANCE
    refused = await commit("g", ids["a"], None, 2, offsets)
    assert refused == {TP0: ErrorCode.REBALANCE_IN_PROGRESS}


async def test_generation_minus_one_commits_create_and_use_a_memberless_group(h: Harness) -> None:
    result = await h.coordinator.offsets.commit("solo", "", None, -1, {TP0: CommittedOffset(9)})
    assert result == {TP0: ErrorCode.NONE}
    group = h.store.get_group("solo")
    assert group is not None and group.state is GroupState.EMPTY
    assert h.coordinator.offsets.fetch("solo", None) == {TP0: CommittedOffset(9)}
    assert h.coordinator.offsets.fetch("solo", [TopicPartition("t", 1)]) == {
        TopicPartition("t", 1): None
    }
    refused = await h.coordinator.offsets.commit("nope", "m", None, 3, {TP0: CommittedOffset(1)})
    assert refused == {TP0: ErrorCode.ILLEGAL_GENERATION}


async def test_oversized_commit_metadata_is_refused_per_partition(h: Harness) -> None:
    big = CommittedOffset(1, metadata="x" * 5000)
    tp1 = TopicPartition("t", 1)
    result = await h.coordinator.offsets.commit(
        "g", "", None, -1, {TP0: big, tp1: CommittedOffset(2)}
    )
    assert result == {TP0: ErrorCode.OFFSET_METADATA_TOO_LARGE, tp1: ErrorCode.NONE}


async def test_only_an_empty_group_can_be_deleted(h: Harness) -> None:
    ids = await h.stable_group("a")
    assert await h.coordinator.delete_group("g") == ErrorCode.NON_EMPTY_GROUP
    h.coordinator.leave_group("g", [(ids["a"], None)])
    await h.advance(0)  # the join phase ends with nobody: Empty
    assert h.state() is GroupState.EMPTY
    assert await h.coordinator.delete_group("g") == ErrorCode.NONE
    assert h.store.get_group("g") is None
    assert await h.coordinator.delete_group("g") == ErrorCode.GROUP_ID_NOT_FOUND


async def test_offsets_of_subscribed_topics_cannot_be_deleted_from_a_live_group(
    h: Harness,
) -> None:
    ids = await h.stable_group("a")
    other = TopicPartition("other", 0)
    offsets = {TP0: CommittedOffset(1), other: CommittedOffset(2)}
    await h.coordinator.offsets.commit("g", ids["a"], None, 1, offsets)
    top, results = await h.coordinator.offsets.delete("g", [TP0, other])
    assert top == ErrorCode.NONE
    assert results == {TP0: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, other: ErrorCode.NONE}
    assert h.coordinator.offsets.fetch("g", None) == {TP0: CommittedOffset(1)}
    assert (await h.coordinator.offsets.delete("nope", [TP0]))[0] == ErrorCode.GROUP_ID_NOT_FOUND


async def test_unloading_answers_parked_joins_not_coordinator(h: Harness) -> None:
    first = await h.join(client_id="a")
    parked = h.join(first.member_id, client_id="a")
    group = h.store.unload("g")
    h.coordinator.on_groups_unloaded([group])
    assert (await parked).error == ErrorCode.NOT_COORDINATOR
    await h.advance(INITIAL_DELAY_MS)  # the cancelled delayed join does nothing
    assert group.state is GroupState.PREPARING_REBALANCE


async def test_unloading_answers_parked_syncs_not_coordinator(h: Harness) -> None:
    joins = [h.join(client_id=c, require_known_member_id=False) for c in ("a", "b")]
    await h.end_initial_delay()
    _, b = [await j for j in joins]
    parked = h.sync(b.member_id, b.generation_id)
    h.coordinator.on_groups_unloaded([h.store.unload("g")])
    assert (await parked).error == ErrorCode.NOT_COORDINATOR


async def test_describe_and_list_report_states_and_members(h: Harness) -> None:
    ids = await h.stable_group("a", "b")
    summary = h.coordinator.describe_group("g")
    assert (summary.state, summary.protocol_type, summary.protocol_name) == (
        GroupState.STABLE,
        "consumer",
        "range",
    )
    assert [(m.member_id, m.assignment) for m in summary.members] == [
        (ids["a"], ids["a"].encode()),
        (ids["b"], ids["b"].encode()),
    ]
    assert summary.members[0].metadata == subscription("t")
    assert h.coordinator.describe_group("unknown").state is GroupState.DEAD
    assert [g.group_id for g in h.coordinator.list_groups(["stable"])] == ["g"]
    assert h.coordinator.list_groups(["Empty"]) == []
    assert h.coordinator.states()[GroupState.STABLE] == 1


async def static_pair(h: Harness) -> tuple[JoinResult, JoinResult]:
    """Static members a (the leader) and b, joined and synced: generation 1, Stable."""
    joins = [h.join(client_id=c, instance=f"i-{c}") for c in ("a", "b")]
    await h.end_initial_delay()
    a, b = [await j for j in joins]
    for m in (a, b):
        await h.coordinator.sync_group("g", 1, m.member_id, None, None, None, {})
    return a, b


async def test_a_restarted_static_leader_keeps_its_place_and_leadership(h: Harness) -> None:
    a, b = await static_pair(h)
    rejoined = await h.join(client_id="a", instance="i-a")
    assert rejoined.member_id != a.member_id
    group = h.store.get_group("g")
    assert group is not None
    assert list(group.members) == [rejoined.member_id, b.member_id]
    assert group.leader_id == rejoined.member_id == rejoined.leader_id


async def test_a_static_rejoin_the_store_refuses_leaves_the_old_member_id_valid(
    h: Harness,
) -> None:
    _, b = await static_pair(h)
    h.store.error = ErrorCode.NOT_COORDINATOR
    refused = await h.join(client_id="b", instance="i-b")
    assert refused.error == ErrorCode.NOT_COORDINATOR
    h.store.error = ErrorCode.NONE
    assert h.heartbeat(b.member_id, 1, "i-b") == ErrorCode.NONE
    group = h.store.get_group("g")
    assert group is not None and group.static_members["i-b"] == b.member_id


async def test_shutdown_answers_parked_requests_and_stops_every_timer(h: Harness) -> None:
    ids = await h.stable_group("a", "b")
    parked = h.join(ids["a"], client_id="a", protocols=(("rr", b""), ("range", b"")))
    await settle()
    assert not parked.done()  # waiting for b to rejoin
    h.coordinator.shutdown()
    assert (await parked).error == ErrorCode.NOT_COORDINATOR
    assert h.heartbeats.num_delayed == h.joins.num_delayed == 0
    assert h.heartbeats.num_watch_keys == h.joins.num_watch_keys == 0


async def test_close_cancels_the_group_writes_still_under_way(h: Harness) -> None:
    joins = [h.join(client_id=c, require_known_member_id=False) for c in ("a", "b")]
    await h.end_initial_delay()
    a, _ = [await j for j in joins]
    h.store.hold()  # the leader's assignment write will wait for ever
    parked = h.sync(a.member_id, a.generation_id, {a.member_id: b"x"})
    await settle()
    assert not parked.done() and h.store.stored_groups == []
    await h.coordinator.close()
    h.store.release()
    await settle()
    assert h.store.stored_groups == []  # the write was cancelled, not finished late
