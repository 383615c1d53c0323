"""What the request handlers reach: one narrow, typed set of services per handler family.

Each API module's ``handle(services, request)`` takes the family its API belongs to; the
handler table (``broker.apis.HANDLERS``) pairs every API key with its family and handler,
and ``KafkaApis`` hands each handler its family's one instance, chosen once when the table
is built (nothing is looked up or allocated per request). ``broker.assembly`` builds every
family, complete, before the listeners open; unit tests build them from doubles
(tests/unit/broker/handler_services.py). No field is optional: a handler never meets a
missing service at run time, and a wiring mistake fails when the broker is assembled.

The families:

=================  ==============================================================
``ReplicaAccess``  Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords,
                   WriteTxnMarkers, DescribeProducers
                   and the controller's LeaderAndIsr, StopReplica, UpdateMetadata
``TopicAdmin``     CreateTopics, CreatePartitions, DeleteTopics, Metadata
                   (which may auto-create topics)
``GroupAccess``    FindCoordinator, the group APIs, offset commits (TxnOffsetCommit too)
                   and fetches
``ConfigAdmin``    DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
``ClusterAdmin``   DescribeCluster, ElectLeaders, the reassignment APIs,
                   ControlledShutdown, DescribeLogDirs
``ProducerIds``    InitProducerId (the transaction coordinator for transactional ids)
``Transactions``   AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
                   ListTransactions (broker.txn)
``ScramAdmin``     DescribeUserScramCredentials, AlterUserScramCredentials
``QuotaAdmin``     DescribeClientQuotas, AlterClientQuotas
``AclAdmin``       CreateAcls, DescribeAcls, DeleteAcls (broker.auth)
``Advertised``     ApiVersions (``KafkaApis`` provides it: it is the table's own)
=================  ==============================================================

Every family carries ``broker`` (:class:`BrokerBasics`: identity, configuration as it is
now, metadata cache), so what every handler consults lives in one object: a broker-wide
check that all handlers make (an authorizer) is a field of ``BrokerBasics``; a new
coordinator is a family of its own beside ``GroupAccess``, listed in
:class:`HandlerServices`, as the transaction coordinator's ``Transactions`` is
(FindCoordinator and InitProducerId reach it too, for transactional ids).

Two references are not known when the families are built, and are bound later in one
explicit place each: the dynamic broker configuration replaces ``BrokerBasics.config``
(``broker.config_changes``), and the controller, which can only be built once the
listeners are bound (it registers the ports they got), is attached to the
:class:`ControllerLink` the families share (``broker.assembly``). Event-loop bound.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.auth.access import AccessControl
from broker.background import BackgroundTasks
from broker.config import BrokerConfig
from broker.metadata_cache import MetadataCache
from broker.metrics import BrokerMetrics
from storage.topic_configs import TopicConfigs
from timer.clock import Clock

if TYPE_CHECKING:
    from broker.client_quotas.manager import ClientQuotas
    from broker.config_changes import DynamicConfigApplier
    from broker.fetch_session import FetchSessionCache
    from broker.group.coordinator import GroupCoordinator
    from broker.group.manager import GroupMetadataManager
    from broker.producer_id_manager import ProducerIdManager
    from broker.replica_manager import ReplicaManager
    from broker.security.credential_cache import ScramCredentialCache
    from broker.txn.coordinator import TransactionCoordinator
    from broker.txn.verification import PartitionVerifier
    from controller.controller import KafkaController
    from storage import LogManager
    from timer import DelayedOperation, DelayedOperationPurgatory
    from zk.facade import ZkFacade


@dataclass(eq=False, slots=True)
class BrokerBasics:
    """What every handler may consult. ``config`` is the broker's configuration as it is
    now: a dynamic broker config replaces it (never changes it in place), so it is read
    at each use, never kept. ``topic_configs``: the topics' overrides as read (the
    LogManager shares it)."""

    broker_id: int
    cluster_id: str
    clock: Clock
    config: BrokerConfig
    metadata_cache: MetadataCache
    topic_configs: TopicConfigs
    #: authorization of each request's resources (``broker.auth.access``; everything
    #: allowed when ``authorizer.class.name`` is empty)
    access: AccessControl


class ControllerLink:
    """This broker's controller as the handlers see it. Attached once, by the assembly,
    as soon as the controller is built: until then (the first requests after the
    listeners opened) this broker is simply not the controller, and its broker epoch is
    unknown (-1)."""

    __slots__ = ("_controller",)

    def __init__(self) -> None:
        self._controller: KafkaController | None = None

    def attach(self, controller: KafkaController) -> None:
        if self._controller is not None:
            raise RuntimeError("the controller is attached once")
        self._controller = controller

    def active(self) -> KafkaController | None:
        """The controller while this broker is the active one, else None."""
        controller = self._controller
        return controller if controller is not None and controller.is_active else None

    @property
    def broker_epoch(self) -> int:
        """The czxid of our current /brokers/ids registration (-1 before the first);
        the controller re-registers after a lost session."""
        controller = self._controller
        return -1 if controller is None else controller.broker_epoch


@dataclass(frozen=True, eq=False, slots=True)
class Family:
    """The part every family shares: :class:`BrokerBasics`, read through shortcuts."""

    broker: BrokerBasics

    @property
    def broker_id(self) -> int:
        return self.broker.broker_id

    @property
    def cluster_id(self) -> str:
        return self.broker.cluster_id

    @property
    def clock(self) -> Clock:
        return self.broker.clock

    @property
    def config(self) -> BrokerConfig:
        return self.broker.config

    @property
    def metadata_cache(self) -> MetadataCache:
        return self.broker.metadata_cache

    @property
    def topic_configs(self) -> TopicConfigs:
        return self.broker.topic_configs


@dataclass(frozen=True, eq=False, slots=True)
class ReplicaAccess(Family):
    """Appends, reads and offsets of the partitions hosted here, and the controller's
    requests that change them. ``event_loop``: the broker's loop, taken once (asking
    ``asyncio.get_running_loop()`` per Produce or Fetch is a system call each time);
    ``zk`` reads the overrides of the topics a LeaderAndIsr makes logs for; an
    UpdateMetadata completes the ``topic_purgatory``'s waiters and hands the deleted
    partitions' commits to the ``group_store``; Fetch keeps its sessions in
    ``fetch_sessions``. ``verifier``: a transactional batch's KIP-890 question to its
    coordinator (broker.txn.verification)."""

    replica_manager: ReplicaManager
    event_loop: asyncio.AbstractEventLoop
    metrics: BrokerMetrics
    controller: ControllerLink
    zk: ZkFacade
    topic_purgatory: DelayedOperationPurgatory[DelayedOperation]
    group_store: GroupMetadataManager
    #: the incremental fetch sessions (KIP-227) this broker leads
    fetch_sessions: FetchSessionCache
    verifier: PartitionVerifier


@dataclass(frozen=True, eq=False, slots=True)
class TopicAdmin(Family):
    """Creating, growing and deleting topics (the active controller's part: it writes
    ZooKeeper and waits in the ``topic_purgatory`` for the metadata to follow).
    ``tasks`` owns the work an answer leaves behind (CreateTopics' wait for its peers)."""

    zk: ZkFacade
    controller: ControllerLink
    topic_purgatory: DelayedOperationPurgatory[DelayedOperation]
    tasks: BackgroundTasks


@dataclass(frozen=True, eq=False, slots=True)
class GroupAccess(Family):
    """The classic group protocol (``coordinator``) over the groups its ``store``
    (__consumer_offsets) holds; the store also tells where a group lives. ``zk`` holds
    the offsets of OffsetCommit/OffsetFetch v0 (zk.consumer_offsets). FindCoordinator
    asks ``transactions`` where a transactional id lives."""

    coordinator: GroupCoordinator
    store: GroupMetadataManager
    zk: ZkFacade
    transactions: TransactionCoordinator


@dataclass(frozen=True, eq=False, slots=True)
class ConfigAdmin(Family):
    """Describing and altering dynamic configuration: ``zk`` holds it, ``applier``
    applies an altered entity on this broker at once."""

    zk: ZkFacade
    applier: DynamicConfigApplier


@dataclass(frozen=True, eq=False, slots=True)
class ClusterAdmin(Family):
    """The cluster-wide operations the active controller serves, and this broker's log
    directories."""

    controller: ControllerLink
    log_manager: LogManager


@dataclass(frozen=True, eq=False, slots=True)
class ProducerIds(Family):
    """Producer ids for idempotent producers, in blocks from ZooKeeper; transactional
    ids go to the ``transactions`` coordinator (which draws on the same ``manager``)."""

    manager: ProducerIdManager
    transactions: TransactionCoordinator


@dataclass(frozen=True, eq=False, slots=True)
class Transactions(Family):
    """The transaction coordinator (broker.txn): the transactional ids of the
    ``__transaction_state`` partitions this broker leads."""

    coordinator: TransactionCoordinator


@dataclass(frozen=True, eq=False, slots=True)
class ScramAdmin(Family):
    """Users' SCRAM credentials: ``cache`` is what this broker authenticates with (and
    what DescribeUserScramCredentials reports); AlterUserScramCredentials, the active
    ``controller``'s to serve, writes them in ``zk`` and into the cache at once."""

    zk: ZkFacade
    controller: ControllerLink
    cache: ScramCredentialCache


@dataclass(frozen=True, eq=False, slots=True)
class QuotaAdmin(Family):
    """Client quotas: ``quotas`` is the table this broker enforces (and what
    DescribeClientQuotas reports); AlterClientQuotas, any broker's to serve (Kafka's
    ZooKeeper mode), writes them in ``zk`` and into the table at once."""

    zk: ZkFacade
    quotas: ClientQuotas


@dataclass(frozen=True, eq=False, slots=True)
class AclAdmin(Family):
    """CreateAcls, DescribeAcls, DeleteAcls: the ACLs in ``zk`` (any broker writes them),
    this broker's authorizer (``broker.access``) answering and taking changes at once."""

    zk: ZkFacade


@dataclass(frozen=True, eq=False, slots=True)
class Advertised:
    """API key -> (min, max) version this broker serves: the handler table's own."""

    versions: Mapping[int, tuple[int, int]]


@dataclass(frozen=True, eq=False, slots=True)
class HandlerServices:
    """Every family the assembly provides, one instance each (``Advertised`` aside)."""

    replicas: ReplicaAccess
    topics: TopicAdmin
    groups: GroupAccess
    configs: ConfigAdmin
    cluster: ClusterAdmin
    producer_ids: ProducerIds
    scram: ScramAdmin
    transactions: Transactions
    acls: AclAdmin
    quotas: QuotaAdmin

    def by_family(self) -> dict[type, object]:
        """Family class -> its instance, for building the handler table."""
        found = (getattr(self, f.name) for f in dataclasses.fields(self))
        return {type(family): family for family in found}
