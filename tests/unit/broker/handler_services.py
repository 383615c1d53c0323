"""The handler families of a broker built from test doubles: the one factory the handler
unit tests share (in production, ``broker.assembly`` builds them).

``handler_services(...)`` takes the doubles a test cares about; every service it leaves
out is an :class:`Unwired` stand-in that fails loudly, naming the service, the moment a
handler uses it, so a test never runs on a default it did not ask for. The broker is
broker 0 of cluster "test-cluster" with a MockClock and an empty metadata cache unless
told otherwise.

``family_declarations`` and ``unprovided`` read what each family declares (its fields'
types), for the tests that check a broker's assembly provides all of it.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import itertools
import typing
from collections.abc import Coroutine, Iterable, Mapping
from types import ModuleType
from typing import Any, TypeVar, cast

from broker.apis import HANDLERS
from broker.apis import services as services_module
from broker.apis.services import (
    AclAdmin,
    BrokerBasics,
    ClusterAdmin,
    ConfigAdmin,
    ControllerLink,
    GroupAccess,
    HandlerServices,
    ProducerIds,
    QuotaAdmin,
    ReplicaAccess,
    ScramAdmin,
    TopicAdmin,
    Transactions,
)
from broker.auth.access import AccessControl
from broker.background import BackgroundTasks
from broker.client_quotas.manager import ClientQuotas
from broker.config import BrokerConfig
from broker.config_changes import DynamicConfigApplier
from broker.fetch_session import FetchSessionCache
from broker.fetch_session_news import NewsIndex
from broker.metadata_cache import MetadataCache
from broker.metrics import BrokerMetrics
from broker.security.credential_cache import ScramCredentialCache
from controller.controller import KafkaController
from protocol.values import TopicPartition
from storage.topic_configs import TopicConfigs
from tests.unit.broker.quota_doubles import RecordingObserver
from tests.unit.controller_double import controller_double
from timer.clock import Clock, MockClock


class Unwired:
    """A service the test did not provide: any use of it fails, naming it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise AssertionError(f"this test provides no {self._name} (a handler asked for .{attr})")

    def __bool__(self) -> bool:
        raise AssertionError(f"this test provides no {self._name}")


T = TypeVar("T")


class RunningLoop:
    """The broker's event loop for a context built outside any loop (a sync fixture):
    the loop running the test when a handler asks."""

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().create_future()

    def create_task(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        return asyncio.get_running_loop().create_task(coro)


class HostsNothing:
    """A replica manager hosting no partition, for tests of the metadata path: the
    controller requests only move its controller epoch."""

    def __init__(self) -> None:
        self.controller_epoch = 0

    def is_stale_controller_epoch(self, epoch: int) -> bool:
        return epoch < self.controller_epoch

    def live_brokers_changed(self) -> None:
        pass


class NoGroups:
    """A group store without groups: deleted partitions take no commits with them."""

    def on_partitions_deleted(self, partitions: Iterable[TopicPartition]) -> None:
        pass


def family_for(services: HandlerServices, api_key: int) -> Any:
    """The family KafkaApis hands ``api_key``'s handler."""
    return services.by_family()[HANDLERS[api_key].family]


def _or_unwired(service: object | None, name: str) -> Any:
    return Unwired(name) if service is None else service


def handler_services(
    *,
    props: Mapping[str, str] | None = None,
    clock: Clock | None = None,
    metrics: BrokerMetrics | None = None,
    metadata_cache: MetadataCache | None = None,
    topic_configs: TopicConfigs | None = None,
    cluster_id: str = "test-cluster",
    controller: KafkaController | None = None,
    broker_epoch: int | None = None,
    replica_manager: object | None = None,
    zk: object | None = None,
    topic_purgatory: object | None = None,
    group_store: object | None = None,
    coordinator: object | None = None,
    log_manager: object | None = None,
    producer_ids: object | None = None,
    credentials: ScramCredentialCache | None = None,
    txn_coordinator: object | None = None,
    access: AccessControl | None = None,
    verifier: object | None = None,
    quotas: ClientQuotas | None = None,
) -> HandlerServices:
    """Broker 0's handler families over the given doubles (the rest :class:`Unwired`).
    ``controller``: attached to the families' ControllerLink (tests.unit.controller_double);
    ``broker_epoch`` alone: registered at that epoch, not the controller;
    ``credentials``: the SCRAM credential cache (an empty one unless given);
    ``quotas``: the client quota table (an empty one, 11 windows of 1 s, unless given)."""
    basics = BrokerBasics(
        broker_id=0,
        cluster_id=cluster_id,
        clock=clock or MockClock(),
        config=BrokerConfig.from_properties(dict(props or {})),
        metadata_cache=metadata_cache or MetadataCache(0),
        topic_configs=TopicConfigs() if topic_configs is None else topic_configs,
        access=access or AccessControl.open(),
    )
    link = ControllerLink()
    if controller is None and broker_epoch is not None:
        controller = controller_double(False, broker_epoch=broker_epoch)
    if controller is not None:
        link.attach(controller)
    metrics = metrics or BrokerMetrics()
    rm = _or_unwired(replica_manager, "replica manager")
    zk_client = _or_unwired(zk, "ZooKeeper client")
    purgatory = _or_unwired(topic_purgatory, "topic purgatory")
    store = _or_unwired(group_store, "group store")
    logs = _or_unwired(log_manager, "log manager")
    credentials = ScramCredentialCache() if credentials is None else credentials
    quotas = ClientQuotas(11, 1000, RecordingObserver()) if quotas is None else quotas
    txns = _or_unwired(txn_coordinator, "transaction coordinator")
    return HandlerServices(
        replicas=ReplicaAccess(
            basics,
            replica_manager=rm,
            event_loop=cast(Any, RunningLoop()),
            metrics=metrics,
            controller=link,
            zk=zk_client,
            topic_purgatory=purgatory,
            group_store=store,
            fetch_sessions=FetchSessionCache(
                1000,
                itertools.count(1).__next__,
                # the manager's own (a fake manager without __init__ has none)
                rm.fetch_news if "fetch_news" in vars(rm) else NewsIndex(),
            ),
            verifier=_or_unwired(verifier, "partition verifier"),
        ),
        topics=TopicAdmin(
            basics,
            zk=zk_client,
            controller=link,
            topic_purgatory=purgatory,
            tasks=BackgroundTasks("test topic admin"),
        ),
        groups=GroupAccess(
            basics,
            coordinator=_or_unwired(coordinator, "group coordinator"),
            store=store,
            zk=zk_client,
            transactions=txns,
        ),
        configs=ConfigAdmin(
            basics,
            zk=zk_client,
            applier=DynamicConfigApplier(basics, logs, credentials, quotas),
        ),
        cluster=ClusterAdmin(basics, controller=link, log_manager=logs),
        producer_ids=ProducerIds(
            basics, manager=_or_unwired(producer_ids, "producer ids"), transactions=txns
        ),
        scram=ScramAdmin(basics, zk=zk_client, controller=link, cache=credentials),
        transactions=Transactions(basics, coordinator=txns),
        acls=AclAdmin(basics, zk=zk_client),
        quotas=QuotaAdmin(basics, zk=zk_client, quotas=quotas),
    )


def _type_checking_names(module: ModuleType) -> dict[str, Any]:
    """The names ``module`` imports only for type checking, imported now: its
    annotations name them."""
    names: dict[str, Any] = {}
    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    imported = importlib.import_module(statement.module)
                    for alias in statement.names:
                        names[alias.asname or alias.name] = getattr(imported, alias.name)
    return names


def family_declarations() -> dict[str, tuple[type, dict[str, Any]]]:
    """HandlerServices' field -> (its family class, that family's fields and their
    declared types), read from broker.apis.services."""
    namespace = {**vars(services_module), **_type_checking_names(services_module)}
    families = typing.get_type_hints(HandlerServices, localns=namespace)
    return {
        name: (family, typing.get_type_hints(family, localns=namespace))
        for name, family in families.items()
    }


def unprovided(services: HandlerServices) -> list[str]:
    """Every declared service ``services`` lacks or holds as something else than its
    declared type ("family.field: why"); empty when the families are complete."""
    problems = []
    for name, (family, fields) in family_declarations().items():
        instance = getattr(services, name, None)
        if not isinstance(instance, family):
            problems.append(f"{name}: not a {family.__name__}")
            continue
        for field, declared in fields.items():
            value = getattr(instance, field, None)
            expected = typing.get_origin(declared) or declared
            if not isinstance(value, expected):
                problems.append(f"{name}.{field}: {type(value).__name__}, not {declared}")
    return problems
