"""ZkFacade: Kafka's ZooKeeper for asyncio code, the one bridge to kazoo's threads.

kazoo blocks the calling thread until ZooKeeper answers. Every method here is a
coroutine that runs one blocking family call (zk.session, zk.brokers, zk.topics,
zk.partition_states, zk.configs, zk.controller_election, zk.producer_ids,
zk.isr_notifications, zk.admin, zk.scram, zk.acls) on a worker thread (``asyncio.to_thread``),
so the event loop never waits on ZooKeeper: this is the only place in the code base that
crosses from the loop to kazoo for a ZooKeeper call. The methods keep the names and arguments
the blocking client had, one family call each; the families document the znodes and
their invariants. A cancelled caller stops waiting, but a call already sent runs to its
end on its thread.

Watches: a ``watch`` argument is a plain function that kazoo calls ONCE, on its own
thread, at the next change of the znode (or of its children). It must only hand the
event to the asyncio loop (``loop.call_soon_threadsafe``, or the controller's
``events.put_threadsafe``), never touch loop state or call back into ZooKeeper.

Synchronous on purpose: ``kazoo`` (the KazooClient, for connection-state listeners, the
reachability probe and the request-latency metric) and ``session_id`` read local state.
Blocking code without a loop (a subprocess in a test, a benchmark's set-up) uses the
families over a ``ZkSession`` directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from kazoo.client import KazooClient

from protocol.acls import AccessControlEntry, ResourcePattern
from protocol.sasl.scram import ScramCredential
from protocol.values import TopicPartition
from zk import (
    acls,
    admin,
    brokers,
    client_quotas,
    codec,
    configs,
    consumer_offsets,
    controller_election,
    isr_notifications,
    partition_states,
    producer_ids,
    scram,
    session,
    topics,
    transactions,
)
from zk.codec import ZkDataError
from zk.controller_election import ControllerElection
from zk.model import (
    BrokerInfo,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    WriteResults,
)
from zk.quota_entities import EntityKey
from zk.session import Watch, ZkSession

P = ParamSpec("P")
T = TypeVar("T")


class ZkFacade:
    def __init__(self, zk_session: ZkSession) -> None:
        self.session = zk_session

    @classmethod
    async def connect(
        cls, hosts: str, session_timeout_s: float = 18.0, connect_timeout_s: float = 15.0
    ) -> ZkFacade:
        """Connect, creating the chroot if needed (ZooKeeperUnavailableError if no
        server answers within ``connect_timeout_s``)."""
        return cls(
            await asyncio.to_thread(ZkSession.connect, hosts, session_timeout_s, connect_timeout_s)
        )

    async def close(self) -> None:
        await asyncio.to_thread(self.session.close)

    @property
    def kazoo(self) -> KazooClient:
        return self.session.kazoo

    @property
    def session_id(self) -> int | None:
        return self.session.session_id

    async def _run(
        self, fn: Callable[Concatenate[ZkSession, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await asyncio.to_thread(fn, self.session, *args, **kwargs)

    # -- session and cluster id (zk.session) -------------------------------------------------

    async def ensure_persistent_paths(self) -> None:
        await self._run(session.ensure_persistent_paths)

    async def get_or_create_cluster_id(self, proposed: str | None = None) -> str:
        return await self._run(session.get_or_create_cluster_id, proposed)

    # -- brokers (zk.brokers) ----------------------------------------------------------------

    async def generate_broker_id(
        self, reserved_max_id: int = brokers.RESERVED_BROKER_MAX_ID
    ) -> int:
        return await self._run(brokers.generate_broker_id, reserved_max_id)

    async def register_broker(
        self, info: BrokerInfo, timestamp_ms: int, attempts: int = 5, stale_wait_s: float = 0.0
    ) -> int:
        return await self._run(brokers.register_broker, info, timestamp_ms, attempts, stale_wait_s)

    async def deregister_broker(self, broker_id: int) -> None:
        await self._run(brokers.deregister_broker, broker_id)

    async def get_broker_ids(self, watch: Watch | None = None) -> list[int]:
        return await self._run(brokers.get_broker_ids, watch)

    async def get_broker(self, broker_id: int) -> BrokerInfo | None:
        return await self._run(brokers.get_broker, broker_id)

    async def get_brokers(self, ids: Iterable[int]) -> dict[int, BrokerInfo]:
        return await self._run(brokers.get_brokers, list(ids))

    # -- topics (zk.topics) ------------------------------------------------------------------

    async def create_topic(self, assignment: TopicAssignment, config: Mapping[str, str]) -> None:
        await self._run(topics.create_topic, assignment, dict(config))

    async def create_topics(
        self, new: Sequence[tuple[TopicAssignment, Mapping[str, str]]]
    ) -> dict[str, Exception | None]:
        return await self._run(topics.create_topics, [(a, dict(c)) for a, c in new])

    async def set_topic_assignment(self, assignment: TopicAssignment, expected_version: int) -> int:
        return await self._run(topics.set_topic_assignment, assignment, expected_version)

    async def set_topic_assignment_as_controller(
        self, assignment: TopicAssignment, epoch_zk_version: int
    ) -> None:
        await self._run(topics.set_topic_assignment_as_controller, assignment, epoch_zk_version)

    async def get_topics(self, watch: Watch | None = None) -> list[str]:
        return await self._run(topics.get_topics, watch)

    async def get_topic(
        self, topic: str, watch: Watch | None = None
    ) -> tuple[TopicAssignment, int] | None:
        return await self._run(topics.get_topic, topic, watch)

    async def get_topic_list(
        self, names: Sequence[str], watches: Mapping[str, Watch] | None = None
    ) -> dict[str, tuple[TopicAssignment, int] | codec.ZkDataError | None]:
        return await self._run(topics.get_topic_list, names, watches)

    async def delete_topic_znodes(
        self, topic: str, epoch_zk_version: int, attempts: int = 3
    ) -> None:
        await self._run(topics.delete_topic_znodes, topic, epoch_zk_version, attempts)

    # -- partition states (zk.partition_states) ----------------------------------------------

    async def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        return await self._run(partition_states.get_partition_states, list(partitions))

    async def create_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        return await self._run(
            partition_states.create_partition_states,
            dict(states),
            controller_epoch,
            epoch_zk_version,
        )

    async def update_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> WriteResults:
        return await self._run(
            partition_states.update_partition_states,
            dict(states),
            controller_epoch,
            epoch_zk_version,
        )

    async def update_leader_and_isr(
        self, tp: TopicPartition, lai: LeaderAndIsr, controller_epoch: int
    ) -> LeaderAndIsr:
        return await self._run(partition_states.update_leader_and_isr, tp, lai, controller_epoch)

    async def watch_partition_state(
        self, tp: TopicPartition, watch: Watch
    ) -> LeaderIsrAndControllerEpoch | None:
        return await self._run(partition_states.watch_partition_state, tp, watch)

    # -- configs and change notifications (zk.configs) ---------------------------------------

    async def get_topic_config(self, topic: str) -> dict[str, str]:
        return await self._run(configs.get_topic_config, topic)

    async def get_topic_configs(
        self, names: Sequence[str]
    ) -> dict[str, dict[str, str] | Exception]:
        return await self._run(configs.get_topic_configs, names)

    async def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        return await self._run(configs.get_entity_config, entity_type, name)

    async def set_entity_config(
        self, entity_type: str, name: str, config: Mapping[str, str]
    ) -> str:
        return await self._run(configs.set_entity_config, entity_type, name, dict(config))

    async def get_config_changes(self, watch: Watch | None = None) -> list[str]:
        return await self._run(configs.get_config_changes, watch)

    async def read_config_change(
        self, name: str
    ) -> tuple[tuple[str, str] | ZkDataError, int] | None:
        return await self._run(configs.read_config_change, name)

    async def delete_config_changes(self, names: Iterable[str]) -> None:
        await self._run(configs.delete_config_changes, list(names))

    # -- SCRAM credentials (zk.scram) --------------------------------------------------------

    async def get_all_user_credentials(self) -> dict[str, dict[str, ScramCredential]]:
        return await self._run(scram.get_all_user_credentials)

    async def get_user_credentials(self, user: str) -> dict[str, ScramCredential]:
        return await self._run(scram.get_user_credentials, user)

    async def alter_user_credentials(
        self, user: str, upserts: Mapping[str, ScramCredential], deletions: Iterable[str]
    ) -> dict[str, ScramCredential]:
        return await self._run(scram.alter_user_credentials, user, dict(upserts), list(deletions))

    # -- client quotas (zk.client_quotas) ------------------------------------------------------

    async def get_all_client_quotas(self) -> dict[EntityKey, dict[str, float]]:
        return await self._run(client_quotas.get_all_client_quotas)

    async def alter_client_quotas(
        self, entity: EntityKey, sets: Mapping[str, float], removals: Iterable[str]
    ) -> dict[str, float]:
        return await self._run(client_quotas.alter_client_quotas, entity, dict(sets), set(removals))

    # -- ACLs (zk.acls) -----------------------------------------------------------------------

    async def ensure_acl_paths(self) -> None:
        await self._run(acls.ensure_acl_paths)

    async def get_all_acls(self) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
        return await self._run(acls.get_all_acls)

    async def get_acls(self, pattern: ResourcePattern) -> tuple[frozenset[AccessControlEntry], int]:
        return await self._run(acls.get_acls, pattern)

    async def add_acls(
        self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]
    ) -> frozenset[AccessControlEntry]:
        return await self._run(acls.add_acls, pattern, list(entries))

    async def remove_acls(
        self, pattern: ResourcePattern, keep: Callable[[AccessControlEntry], bool]
    ) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]:
        return await self._run(acls.remove_acls, pattern, keep)

    async def get_acl_changes(self, changes_path: str, watch: Watch | None = None) -> list[str]:
        return await self._run(acls.get_acl_changes, changes_path, watch)

    async def read_acl_change(
        self, changes_path: str, name: str
    ) -> tuple[ResourcePattern | ZkDataError, int] | None:
        return await self._run(acls.read_acl_change, changes_path, name)

    async def delete_acl_changes(self, changes_path: str, names: Iterable[str]) -> None:
        await self._run(acls.delete_acl_changes, changes_path, list(names))

    # -- controller election (zk.controller_election, zk.transactions) -----------------------

    async def get_controller_id(self, watch: Watch | None = None) -> int | None:
        return await self._run(controller_election.get_controller_id, watch)

    async def get_controller_epoch(self) -> tuple[int, int] | None:
        return await self._run(controller_election.get_controller_epoch)

    async def try_become_controller(self, broker_id: int, timestamp_ms: int) -> ControllerElection:
        return await self._run(controller_election.try_become_controller, broker_id, timestamp_ms)

    async def resign_controller(self, broker_id: int, timeout_s: float = 5.0) -> bool:
        return await self._run(controller_election.resign_controller, broker_id, timeout_s)

    async def controller_write(
        self, ops: Sequence[transactions.Op], epoch_zk_version: int
    ) -> list[Any]:
        return await self._run(transactions.controller_write, list(ops), epoch_zk_version)

    # -- ISR change notifications (zk.isr_notifications) -------------------------------------

    async def get_isr_change_notifications(self, watch: Watch | None = None) -> list[str]:
        return await self._run(isr_notifications.get_isr_change_notifications, watch)

    async def read_isr_change_notification(self, name: str) -> list[TopicPartition]:
        return await self._run(isr_notifications.read_isr_change_notification, name)

    async def delete_isr_change_notifications(
        self, names: Sequence[str], epoch_zk_version: int
    ) -> None:
        await self._run(
            isr_notifications.delete_isr_change_notifications, list(names), epoch_zk_version
        )

    async def propagate_isr_change(self, partitions: Iterable[TopicPartition]) -> str:
        return await self._run(isr_notifications.propagate_isr_change, list(partitions))

    # -- admin requests (zk.admin) -----------------------------------------------------------

    async def get_topic_deletions(self, watch: Watch | None = None) -> list[str]:
        return await self._run(admin.get_topic_deletions, watch)

    async def mark_topic_for_deletion(self, topic: str) -> None:
        await self._run(admin.mark_topic_for_deletion, topic)

    async def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None:
        await self._run(admin.delete_topic_deletions, list(topics), epoch_zk_version)

    async def get_preferred_replica_election(
        self, watch: Watch | None = None
    ) -> list[TopicPartition] | None:
        return await self._run(admin.get_preferred_replica_election, watch)

    async def delete_preferred_replica_election(self, epoch_zk_version: int) -> None:
        await self._run(admin.delete_preferred_replica_election, epoch_zk_version)

    async def request_preferred_replica_election(
        self, partitions: Iterable[TopicPartition]
    ) -> None:
        await self._run(admin.request_preferred_replica_election, list(partitions))

    async def get_partition_reassignment(
        self, watch: Watch | None = None
    ) -> tuple[dict[TopicPartition, tuple[int, ...]], int] | None:
        return await self._run(admin.get_partition_reassignment, watch)

    async def set_partition_reassignment(
        self, targets: Mapping[TopicPartition, Sequence[int]], epoch_zk_version: int
    ) -> None:
        await self._run(admin.set_partition_reassignment, dict(targets), epoch_zk_version)

    async def request_partition_reassignment(
        self, targets: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        await self._run(admin.request_partition_reassignment, dict(targets))

    # -- ZooKeeper-stored consumer offsets (zk.consumer_offsets) ----------------------------

    async def set_consumer_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        await self._run(consumer_offsets.set_consumer_offsets, group, dict(offsets))

    async def get_consumer_offsets(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        return await self._run(consumer_offsets.get_consumer_offsets, group, list(partitions))

    # -- producer ids (zk.producer_ids) ------------------------------------------------------

    async def allocate_producer_id_block(
        self, broker_id: int, size: int = codec.PRODUCER_ID_BLOCK_SIZE, attempts: int = 100
    ) -> codec.ProducerIdBlock:
        return await self._run(producer_ids.allocate_producer_id_block, broker_id, size, attempts)
