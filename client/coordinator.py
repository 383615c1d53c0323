"""Finding a consumer group's coordinator, and calling it with retries.

Every request about a group (JoinGroup ... OffsetDelete) goes to the group's
*coordinator*: the broker leading the ``__consumer_offsets`` partition the group id hashes
to. Any broker answers FindCoordinator with it (v4 batches several keys in
``coordinator_keys``; v0-3 ask for one ``key``). The answer can be stale by the time it is
used: a coordinator that has lost its partition answers NOT_COORDINATOR, one still loading
the partition COORDINATOR_LOAD_IN_PROGRESS, and FindCoordinator itself answers
COORDINATOR_NOT_AVAILABLE while the offsets topic is being created or has no leader.
:meth:`CoordinatorCache.call` treats all three as "ask again": it forgets the cached
coordinator, backs off and finds it anew, within the client's retry budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

from client.client import KafkaClient
from client.cluster_view import BrokerNode, ClusterView
from client.errors import KafkaError
from protocol import ApiKey, ErrorCode
from protocol.messages import FindCoordinatorRequest

T = TypeVar("T")

#: FindCoordinator key types
GROUP_KEY_TYPE: Final = 0

#: answers after which the coordinator must be looked up again
COORDINATOR_ERRORS: Final = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


def check(error_code: int, what: str = "") -> None:
    """Raise KafkaError for a non-zero error code."""
    if error_code != ErrorCode.NONE:
        raise KafkaError(error_code, what or None)


async def find_coordinator(
    client: KafkaClient, group_id: str, key_type: int = GROUP_KEY_TYPE
) -> int:
    """The coordinator's node id (one attempt; KafkaError on an error answer) of a group,
    or with ``key_type`` 1 of a transactional id. The broker is added to the client's
    view when Metadata did not list it (yet)."""

    def build(version: int) -> Any:
        if version >= 4:
            return FindCoordinatorRequest(key_type=key_type, coordinator_keys=[group_id])
        return FindCoordinatorRequest(key=group_id, key_type=key_type)

    body = await client.request(None, ApiKey.FIND_COORDINATOR, build)
    if body.coordinators:
        (answer,) = [c for c in body.coordinators if c.key == group_id] or body.coordinators
    else:
        answer = body
    check(answer.error_code, f"FindCoordinator({group_id}): {answer.error_message or ''}")
    if answer.node_id not in client.view.brokers:
        brokers = dict(client.view.brokers)
        brokers[answer.node_id] = BrokerNode(answer.node_id, answer.host, answer.port)
        view = client.view
        client.view = ClusterView(brokers, view.topics, view.controller_id, view.cluster_id)
    return int(answer.node_id)


class CoordinatorCache:
    """The last known coordinator of each group, forgotten when it proves stale."""

    def __init__(self, client: KafkaClient) -> None:
        self.client = client
        self._known: dict[str, int] = {}

    async def node(self, group_id: str) -> int:
        node = self._known.get(group_id)
        if node is None:
            node = await find_coordinator(self.client, group_id)
            self._known[group_id] = node
        return node

    def forget(self, group_id: str) -> None:
        self._known.pop(group_id, None)

    async def call(
        self, group_id: str, op: Callable[[int], Awaitable[T]], timeout_s: float | None = None
    ) -> T:
        """``op(coordinator node id)`` with retries. ``op`` raises KafkaError with one of
        COORDINATOR_ERRORS to have the coordinator looked up again; a lost connection to
        it does the same."""

        async def once() -> T:
            node = await self.node(group_id)
            try:
                return await op(node)
            except KafkaError as exc:
                if exc.error_code in COORDINATOR_ERRORS:
                    self.forget(group_id)
                raise
            except Exception:
                self.forget(group_id)
                raise

        return await self.client.retrying(once, timeout_s=timeout_s)
