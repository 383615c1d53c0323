"""KafkaApis: the request dispatcher, a table from API key to handler.

Each API has one module here (``broker/apis/<api>.py``) exposing::

    async def handle(ctx: <Family>, request: ApiRequest[<Api>Request]) -> HandlerResult

where ``<Family>`` is the narrow set of services its handler family reaches
(``broker.apis.services``), and ``ListenerRequest`` replaces ``ApiRequest`` for the
handlers that need the listener (see ``broker.apis.request``). ``HANDLERS`` registers
each of them explicitly, with its family: an API that is not in it is neither advertised
by ApiVersions nor dispatched. The SASL APIs are listed so that ApiVersions advertises
them; their exchanges run in the network layer (``broker.security``), and what reaches
their handlers is answered ILLEGAL_SASL_STATE, as Kafka does. ``KafkaApis`` resolves
every route once, to (handler, family instance, versions): a request costs one dict
lookup and one call, as with a single context object.

Advertised versions are the codec's ``SUPPORTED_VERSIONS`` for the APIs in the table.
Produce v0-2 and Fetch v0-3 carry the legacy message formats: their handlers convert
(librdkafka also probes compression support against Produce v0).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import typing
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

import protocol
from broker.apis import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from broker.apis.request import Answer, HandlerResult, ListenerRequest
from broker.apis.services import (
    AclAdmin,
    Advertised,
    ClusterAdmin,
    ConfigAdmin,
    GroupAccess,
    HandlerServices,
    ProducerIds,
    QuotaAdmin,
    ReplicaAccess,
    ScramAdmin,
    TopicAdmin,
    Transactions,
)
from broker.client_quotas.enforce import QuotaEnforcer
from broker.metrics import BrokerMetrics
from protocol import ApiKey, ErrorCode, Response, error_name
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.api import api_name, response_message
from protocol.messages import RequestHeader

if TYPE_CHECKING:
    from broker.readiness import ReadinessGate

log = logging.getLogger(__name__)

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Route(Generic[S]):
    """One API's handler and the family of services it takes. The body's type is the
    API's request class, which only the API key in the header tells at run time (hence
    ``Any`` here)."""

    family: type[S]
    handle: Callable[[S, ListenerRequest[Any]], Awaitable[HandlerResult]]


def route(
    family: type[S], handle: Callable[[S, ListenerRequest[Any]], Awaitable[HandlerResult]]
) -> Route[Any]:
    """``Route(family, handle)`` for the table: ``S`` is inferred from the arguments alone
    (not from the table's ``Route[Any]``), so mypy refuses a handler of another family."""
    return Route(family, handle)


#: API key -> its handler and the family of services it takes: every API this broker serves.
HANDLERS: Mapping[int, Route[Any]] = MappingProxyType(
    {
        ApiKey.PRODUCE: route(ReplicaAccess, produce.handle),
        ApiKey.FETCH: route(ReplicaAccess, fetch.handle),
        ApiKey.LIST_OFFSETS: route(ReplicaAccess, list_offsets.handle),
        ApiKey.METADATA: route(TopicAdmin, metadata.handle),
        ApiKey.LEADER_AND_ISR: route(ReplicaAccess, leader_and_isr.handle),
        ApiKey.STOP_REPLICA: route(ReplicaAccess, stop_replica.handle),
        ApiKey.UPDATE_METADATA: route(ReplicaAccess, update_metadata.handle),
        ApiKey.CONTROLLED_SHUTDOWN: route(ClusterAdmin, controlled_shutdown.handle),
        ApiKey.API_VERSIONS: route(Advertised, api_versions.handle),
        ApiKey.CREATE_TOPICS: route(TopicAdmin, create_topics.handle),
        ApiKey.DELETE_TOPICS: route(TopicAdmin, delete_topics.handle),
        ApiKey.INIT_PRODUCER_ID: route(ProducerIds, init_producer_id.handle),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: route(ReplicaAccess, offset_for_leader_epoch.handle),
        ApiKey.DESCRIBE_CONFIGS: route(ConfigAdmin, describe_configs.handle),
        ApiKey.ALTER_CONFIGS: route(ConfigAdmin, alter_configs.handle),
        ApiKey.DESCRIBE_LOG_DIRS: route(ClusterAdmin, describe_log_dirs.handle),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: route(ConfigAdmin, incremental_alter_configs.handle),
        ApiKey.CREATE_PARTITIONS: route(TopicAdmin, create_partitions.handle),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: route(
            ClusterAdmin, alter_partition_reassignments.handle
        ),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: route(
            ClusterAdmin, list_partition_reassignments.handle
        ),
        ApiKey.DESCRIBE_CLUSTER: route(ClusterAdmin, describe_cluster.handle),
        ApiKey.ELECT_LEADERS: route(ClusterAdmin, elect_leaders.handle),
        ApiKey.SASL_HANDSHAKE: route(Advertised, sasl_handshake.handle),
        ApiKey.SASL_AUTHENTICATE: route(Advertised, sasl_authenticate.handle),
        ApiKey.DELETE_RECORDS: route(ReplicaAccess, delete_records.handle),
        # transactions, the partition leader's side (the coordinator is broker.txn)
        ApiKey.WRITE_TXN_MARKERS: route(ReplicaAccess, write_txn_markers.handle),
        ApiKey.DESCRIBE_PRODUCERS: route(ReplicaAccess, describe_producers.handle),
        # SCRAM credentials (broker.security.credential_cache)
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: route(
            ScramAdmin, describe_user_scram_credentials.handle
        ),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: route(ScramAdmin, alter_user_scram_credentials.handle),
        # client quotas (broker.client_quotas)
        ApiKey.DESCRIBE_CLIENT_QUOTAS: route(QuotaAdmin, describe_client_quotas.handle),
        ApiKey.ALTER_CLIENT_QUOTAS: route(QuotaAdmin, alter_client_quotas.handle),
        # consumer groups (broker.group)
        ApiKey.FIND_COORDINATOR: route(GroupAccess, find_coordinator.handle),
        ApiKey.JOIN_GROUP: route(GroupAccess, join_group.handle),
        ApiKey.SYNC_GROUP: route(GroupAccess, sync_group.handle),
        ApiKey.HEARTBEAT: route(GroupAccess, heartbeat.handle),
        ApiKey.LEAVE_GROUP: route(GroupAccess, leave_group.handle),
        ApiKey.OFFSET_COMMIT: route(GroupAccess, offset_commit.handle),
        ApiKey.OFFSET_FETCH: route(GroupAccess, offset_fetch.handle),
        ApiKey.LIST_GROUPS: route(GroupAccess, list_groups.handle),
        ApiKey.DESCRIBE_GROUPS: route(GroupAccess, describe_groups.handle),
        ApiKey.DELETE_GROUPS: route(GroupAccess, delete_groups.handle),
        ApiKey.OFFSET_DELETE: route(GroupAccess, offset_delete.handle),
        ApiKey.TXN_OFFSET_COMMIT: route(GroupAccess, txn_offset_commit.handle),
        # transactions (broker.txn)
        ApiKey.ADD_PARTITIONS_TO_TXN: route(Transactions, add_partitions_to_txn.handle),
        ApiKey.ADD_OFFSETS_TO_TXN: route(Transactions, add_offsets_to_txn.handle),
        ApiKey.END_TXN: route(Transactions, end_txn.handle),
        ApiKey.DESCRIBE_TRANSACTIONS: route(Transactions, describe_transactions.handle),
        ApiKey.LIST_TRANSACTIONS: route(Transactions, list_transactions.handle),
        # ACLs (broker.auth)
        ApiKey.DESCRIBE_ACLS: route(AclAdmin, describe_acls.handle),
        ApiKey.CREATE_ACLS: route(AclAdmin, create_acls.handle),
        ApiKey.DELETE_ACLS: route(AclAdmin, delete_acls.handle),
    }
)


#: the APIs client quotas apply to (Produce: producer_byte_rate, Fetch: consumer_byte_rate)
QUOTA_APIS: frozenset[int] = frozenset({ApiKey.PRODUCE, ApiKey.FETCH})


#: the APIs Kafka authorizes as one operation on the cluster, refused whole (the
#: response's top-level CLUSTER_AUTHORIZATION_FAILED) otherwise: the controller-to-broker
#: APIs and ControlledShutdown need CLUSTER_ACTION, the reassignment and SCRAM listing
#: admin APIs ALTER or DESCRIBE. (Other APIs check their own resources in their handlers.)
CLUSTER_OPERATION_OF: Mapping[int, AclOperation] = MappingProxyType(
    {
        ApiKey.LEADER_AND_ISR: AclOperation.CLUSTER_ACTION,
        ApiKey.STOP_REPLICA: AclOperation.CLUSTER_ACTION,
        ApiKey.UPDATE_METADATA: AclOperation.CLUSTER_ACTION,
        ApiKey.CONTROLLED_SHUTDOWN: AclOperation.CLUSTER_ACTION,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: AclOperation.ALTER,
        ApiKey.LIST_PARTITION_REASSIGNMENTS: AclOperation.DESCRIBE,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: AclOperation.DESCRIBE,
    }
)


def advertised_versions(handlers: Mapping[int, object]) -> dict[int, tuple[int, int]]:
    """What ApiVersions lists: the codec's range of each API we have a handler for."""
    return {
        key: protocol.SUPPORTED_VERSIONS[key]
        for key in sorted(handlers)
        if key in protocol.SUPPORTED_VERSIONS
    }


def api_versions_fallback(
    header: RequestHeader, advertised: Mapping[int, tuple[int, int]]
) -> Response:
    """The answer to an ApiVersions request newer than ours (body None): error 35 in a
    v0 body listing our ranges, decoded from the header alone; the client retries."""
    return protocol.api_versions_fallback_response(header, advertised)


def error_response(header: RequestHeader, error_code: int) -> Response | None:
    """A response to ``header``'s API carrying ``error_code`` at top level, or None when
    the message has no top-level error code (the network then closes the connection, as
    Kafka does for a request it cannot parse). Used for unsupported versions, malformed
    bodies and handlers that fail; plugged into the network's Codec."""
    try:
        info = response_message(int(header.api_key))
    except KeyError:
        return None
    version = int(header.api_version)
    if int(header.api_key) == ApiKey.API_VERSIONS:
        version = 0  # every client can read an ApiVersions v0 answer
    if not info.valid.has(version):
        return None
    cls: type[msgspec.Struct] = info.root.cls  # the response class of the header's API
    if "error_code" not in cls.__struct_fields__:
        return None
    body = cls(error_code=error_code)
    return Response(
        protocol.ResponseHeader(correlation_id=header.correlation_id),
        body,
        int(header.api_key),
        version,
    )


def iter_error_codes(body: object, depth: int = 0) -> Iterator[int]:
    """Every non-zero ``error_code`` in a response body (top level and nested lists), for
    the per-API error metric."""
    if depth > 4 or not isinstance(body, msgspec.Struct):
        return
    has_error_code, struct_lists = _error_walk(type(body))
    if has_error_code:
        code = body.error_code  # type: ignore[attr-defined]
        if isinstance(code, int) and code != 0:
            yield code
    for name in struct_lists:
        for item in getattr(body, name) or ():
            yield from iter_error_codes(item, depth + 1)


@functools.cache
def _error_walk(cls: type[msgspec.Struct]) -> tuple[bool, tuple[str, ...]]:
    """What iter_error_codes visits in a struct class, worked out once from its field
    types: whether it has an ``error_code``, and its fields that are lists of structs."""
    has_error_code = False
    struct_lists = []
    for field in msgspec.structs.fields(cls):
        if field.name == "error_code":
            has_error_code = True
        args = typing.get_args(field.type)
        if (
            typing.get_origin(field.type) is list
            and args
            and isinstance(args[0], type)
            and issubclass(args[0], msgspec.Struct)
        ):
            struct_lists.append(field.name)
    return has_error_code, tuple(struct_lists)


class KafkaApis:
    """Dispatches each request to its API's handler, with the handler's family of
    services; one per broker. ``gate`` holds client requests until the broker can
    answer them (broker.readiness); None serves every request at once (handler tests).
    ``Advertised`` is the one family provided here rather than by ``services``: the
    versions ApiVersions lists are this table's own."""

    def __init__(
        self,
        services: HandlerServices,
        metrics: BrokerMetrics,
        *,
        gate: ReadinessGate | None,
        handlers: Mapping[int, Route[Any]] = HANDLERS,
    ) -> None:
        self.metrics = metrics
        self.handlers: dict[int, Route[Any]] = dict(handlers)
        self.advertised = advertised_versions(self.handlers)
        families = services.by_family()
        families[Advertised] = Advertised(MappingProxyType(self.advertised))
        #: API key -> (handler, its family's services, lowest and highest version served):
        #: one lookup a request
        self._routes: dict[int, tuple[Callable[..., Awaitable[HandlerResult]], object, int, int]]
        self._routes = {
            key: (self.handlers[key].handle, families[self.handlers[key].family], lo, hi)
            for key, (lo, hi) in self.advertised.items()
        }
        self.gate = gate
        self.access = services.replicas.broker.access
        #: client quotas on Produce and Fetch (broker.client_quotas.enforce)
        self.quotas = QuotaEnforcer(
            services.quotas.quotas, services.replicas.broker.clock.monotonic_ms
        )

    async def handle(self, request: ListenerRequest[Any]) -> HandlerResult:
        """Route ``request`` (broker.network.Request) to its handler; unknown APIs and
        versions get an error response (or a closed connection where there is none)."""
        header: RequestHeader = request.header
        api_key = int(header.api_key)
        if request.body is None:
            # only ApiVersions above our range decodes without a body
            return api_versions_fallback(header, self.advertised)
        route = self._routes.get(api_key)
        if route is None or not route[2] <= int(header.api_version) <= route[3]:
            log.info("unsupported request %s v%s", api_key, header.api_version)
            return error_response(header, ErrorCode.UNSUPPORTED_VERSION)
        gate = self.gate
        if gate is not None and not gate.ready:
            return await gate.admit(request, self._serve)
        return await self._serve(request)

    async def _serve(self, request: ListenerRequest[Any]) -> HandlerResult:
        api_key = int(request.header.api_key)
        needed = CLUSTER_OPERATION_OF.get(api_key)
        if needed is not None and not self.access.authorize(
            request, needed, ResourceType.CLUSTER, CLUSTER_NAME
        ):
            return error_response(request.header, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        handle, services, _, _ = self._routes[api_key]
        if api_key in QUOTA_APIS:
            self.quotas.before(request)
        result = await handle(services, request)
        if api_key in QUOTA_APIS:
            result = self.quotas.apply(request, result)  # type: ignore[assignment]
        if api_key == ApiKey.UPDATE_METADATA and self.gate is not None:
            self.gate.check()  # the cache may now list this broker
        if isinstance(result, asyncio.Future):
            result.add_done_callback(self._count_deferred_errors)
        else:
            self._count_errors(result)
        return result

    def _count_errors(self, result: object) -> None:
        if not isinstance(result, Response):
            return
        api = api_name(result.api_key)
        for code in iter_error_codes(result.body):
            self.metrics.request_errors.labels(api=api, error=error_name(code)).inc()

    def _count_deferred_errors(
        self, future: asyncio.Future[Response] | asyncio.Future[Answer]
    ) -> None:
        if not future.cancelled() and future.exception() is None:
            self._count_errors(future.result())
