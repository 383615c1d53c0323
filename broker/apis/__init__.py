"""KafkaApis: the request dispatcher, a table from API key to handler module.

Each API has one module here (``broker/apis/<api>.py``) exposing::

    async def handle(ctx: BrokerContext, request) -> Response | ResponseParts | Future | None

(see ``broker.network.handler_pool`` for what each return kind means). The table below
names the module of every API minikafka may serve; a module that does not import yet
(an API whose issue has not landed) is simply absent, and an absent API is neither
advertised by ApiVersions nor dispatched. Deliberately left out of the table: DeleteTopics
(until the deletion manager lands, clients should see UNSUPPORTED_VERSION rather than
hang) and the SASL APIs (until security lands).

Advertised versions are the codec's ``SUPPORTED_VERSIONS`` for the APIs in the table.
Produce is advertised from v0 (librdkafka probes compression support against v0) and its
handler answers v0-2 with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import typing
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec

import protocol
from protocol import ApiKey, ErrorCode, Response
from protocol.api import response_message

if TYPE_CHECKING:
    from broker.context import BrokerContext

log = logging.getLogger(__name__)

#: ``handle(ctx, request)`` of one API module
ApiHandler = Callable[["BrokerContext", Any], Awaitable[Any]]

#: API key -> module under broker.apis. Order is irrelevant; presence means "may serve".
HANDLER_MODULES: Mapping[int, str] = MappingProxyType(
    {
        ApiKey.PRODUCE: "produce",
        ApiKey.FETCH: "fetch",
        ApiKey.LIST_OFFSETS: "list_offsets",
        ApiKey.METADATA: "metadata",
        ApiKey.LEADER_AND_ISR: "leader_and_isr",
        ApiKey.STOP_REPLICA: "stop_replica",
        ApiKey.UPDATE_METADATA: "update_metadata",
        ApiKey.CONTROLLED_SHUTDOWN: "controlled_shutdown",
        ApiKey.OFFSET_COMMIT: "offset_commit",
        ApiKey.OFFSET_FETCH: "offset_fetch",
        ApiKey.FIND_COORDINATOR: "find_coordinator",
        ApiKey.JOIN_GROUP: "join_group",
        ApiKey.HEARTBEAT: "heartbeat",
        ApiKey.LEAVE_GROUP: "leave_group",
        ApiKey.SYNC_GROUP: "sync_group",
        ApiKey.DESCRIBE_GROUPS: "describe_groups",
        ApiKey.LIST_GROUPS: "list_groups",
        ApiKey.API_VERSIONS: "api_versions",
        ApiKey.CREATE_TOPICS: "create_topics",
        ApiKey.DELETE_RECORDS: "delete_records",
        ApiKey.INIT_PRODUCER_ID: "init_producer_id",
        ApiKey.OFFSET_FOR_LEADER_EPOCH: "offset_for_leader_epoch",
        ApiKey.DESCRIBE_CONFIGS: "describe_configs",
        ApiKey.CREATE_PARTITIONS: "create_partitions",
        ApiKey.DESCRIBE_CLUSTER: "describe_cluster",
    }
)


def load_handlers(modules: Mapping[int, str] = HANDLER_MODULES) -> dict[int, ApiHandler]:
    """Import each API module that exists; a missing module leaves its API out.

    Only the absence of the module itself is tolerated: an ImportError raised from
    inside a module that does exist is a bug and propagates.
    """
    handlers: dict[int, ApiHandler] = {}
    for api_key, name in modules.items():
        qualified = f"{__name__}.{name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:
                raise
            continue
        handlers[api_key] = module.handle
    return handlers


def advertised_versions(handlers: Mapping[int, object]) -> dict[int, tuple[int, int]]:
    """What ApiVersions lists: the codec's range of each API we have a handler for."""
    return {
        key: protocol.SUPPORTED_VERSIONS[key]
        for key in sorted(handlers)
        if key in protocol.SUPPORTED_VERSIONS
    }


def api_versions_fallback(header: Any, advertised: Mapping[int, tuple[int, int]]) -> Response:
    """The answer to an ApiVersions request newer than ours (body None): error 35 in a
    v0 body listing our ranges, decoded from the header alone; the client retries."""
    response = protocol.api_versions_fallback_response(header)
    body = response.body
    body.api_keys = [entry for entry in body.api_keys if entry.api_key in advertised]
    return response


def error_response(header: Any, error_code: int) -> Response | None:
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
    cls = info.root.cls
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


def is_stale_broker_epoch(ctx: BrokerContext, broker_epoch: int) -> bool:
    """A controller request addressed to an earlier registration of this broker (Kafka's
    isBrokerEpochStale): -1 means the version carries no epoch and is never stale. The
    current epoch is the controller's, which re-registers after a lost session."""
    current = getattr(ctx.controller, "broker_epoch", None)
    if not isinstance(current, int) or current < 0:
        current = ctx.broker_epoch
    return broker_epoch != -1 and broker_epoch < current


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class KafkaApis:
    """Dispatches each request to its API's handler; one per broker."""

    def __init__(
        self, ctx: BrokerContext, handlers: Mapping[int, ApiHandler] | None = None
    ) -> None:
        self.ctx = ctx
        self.handlers: dict[int, ApiHandler] = dict(
            load_handlers() if handlers is None else handlers
        )
        self.advertised = advertised_versions(self.handlers)
        ctx.extras["advertised_versions"] = self.advertised

    async def handle(self, request: Any) -> Any:
        """Route ``request`` (broker.network.Request) to its handler; unknown APIs and
        versions get an error response (or a closed connection where there is none)."""
        header = request.header
        api_key = int(header.api_key)
        if request.body is None:
            # only ApiVersions above our range decodes without a body
            return api_versions_fallback(header, self.advertised)
        handler = self.handlers.get(api_key)
        lo, hi = self.advertised.get(api_key, (0, -1))
        if handler is None or not lo <= int(header.api_version) <= hi:
            log.info("unsupported request %s v%s", api_key, header.api_version)
            return error_response(header, ErrorCode.UNSUPPORTED_VERSION)
        result = await handler(self.ctx, request)
        if isinstance(result, asyncio.Future):
            result.add_done_callback(self._count_deferred_errors)
        else:
            self._count_errors(result)
        return result

    def _count_errors(self, result: object) -> None:
        if not isinstance(result, Response):
            return
        api = _api_name(result.api_key)
        for code in iter_error_codes(result.body):
            self.ctx.metrics.request_errors.labels(api=api, error=_error_name(code)).inc()

    def _count_deferred_errors(self, future: asyncio.Future[Any]) -> None:
        if not future.cancelled() and future.exception() is None:
            self._count_errors(future.result())


def _api_name(api_key: int) -> str:
    try:
        name = ApiKey(api_key).name
    except ValueError:
        return str(api_key)
    return "".join(word.capitalize() for word in name.split("_"))
