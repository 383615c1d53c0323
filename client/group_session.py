"""A consumer's life in a group, for a tool consuming one topic: where to start, when to
commit, how to leave.

:class:`GroupSession` wraps a :class:`~client.group.GroupMember` subscribed to one topic
and owns the consumer's positions (partition -> next offset to fetch):

- ``ensure_joined`` (before every fetch round): when the member must (re)join, first
  commit the positions it has, then join, then start each assigned partition at the
  group's committed offset, or -- for a partition the group has never committed -- at
  the reset point (``auto.offset.reset``: earliest or latest). Kafka's
  ``--from-beginning`` is that reset point, so it does not rewind a group that has
  committed already.
- ``maybe_commit`` (after every round): commit the positions when
  ``auto.commit.interval.ms`` has passed since the last commit and they moved.
- ``close``: a last commit, then LeaveGroup, so the others take over the partitions at
  once and from where we stopped.

A commit refused because the group is rebalancing is not an error: the member rejoins
at the next round (the records since the last successful commit may be consumed again,
at-least-once as in Kafka).
"""

from __future__ import annotations

import contextlib

from client.client import KafkaClient
from client.errors import ClientError
from client.fetch import list_offsets
from client.group import GroupMember
from protocol.values import TopicPartition
from timer.clock import Clock


class GroupSession:
    def __init__(
        self,
        client: KafkaClient,
        member: GroupMember,
        topic: str,
        reset_to: int,
        commit_interval_ms: int,
        clock: Clock,
        *,
        require_stable: bool,
    ) -> None:
        self.client = client
        #: a read_committed consumer asks for stable offsets only (KIP-447): a commit
        #: still in an open transaction is answered UNSTABLE_OFFSET_COMMIT, and retried
        self.require_stable = require_stable
        self.member = member
        self.topic = topic
        #: EARLIEST_TIMESTAMP or LATEST_TIMESTAMP: where a partition never committed starts
        self.reset_to = reset_to
        self.commit_interval_ms = commit_interval_ms
        self.clock = clock
        self.positions: dict[int, int] = {}
        self._committed: dict[int, int] = {}
        self._last_commit_ms = clock.monotonic_ms()

    async def ensure_joined(self) -> bool:
        """(Re)join when needed; True when the positions were replaced."""
        if not self.member.needs_rejoin:
            return False
        await self.commit()
        assignment = await self.member.join()
        partitions = sorted(assignment.partitions.get(self.topic, ()))
        committed = await self.member.committed(
            [TopicPartition(self.topic, p) for p in partitions], require_stable=self.require_stable
        )
        positions = {tp.partition: offset for tp, offset in committed.items()}
        fresh = [p for p in partitions if p not in positions]
        if fresh:
            positions.update(
                await list_offsets(self.client, self.topic, dict.fromkeys(fresh, self.reset_to))
            )
        self.positions = positions
        self._committed = {tp.partition: o for tp, o in committed.items()}
        return True

    async def commit(self) -> None:
        """Commit the positions that moved since the last commit (a refusal that calls for
        a rejoin is left to the next ``ensure_joined``)."""
        moved = {p: o for p, o in self.positions.items() if self._committed.get(p) != o}
        self._last_commit_ms = self.clock.monotonic_ms()
        if not moved or self.member.generation < 0:
            return
        with contextlib.suppress(ClientError):
            await self.member.commit({TopicPartition(self.topic, p): o for p, o in moved.items()})
            self._committed.update(moved)

    async def maybe_commit(self) -> None:
        if self.clock.monotonic_ms() - self._last_commit_ms >= self.commit_interval_ms:
            await self.commit()

    async def close(self) -> None:
        await self.commit()
        await self.member.close()
