"""KafkaApis: the table dispatch, advertised versions, fallbacks and error responses."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

import protocol
from broker.apis import (
    HANDLERS,
    KafkaApis,
    Route,
    advertised_versions,
    error_response,
    iter_error_codes,
    route,
)
from broker.apis.services import ReplicaAccess, TopicAdmin
from broker.metrics import BrokerMetrics
from protocol import ApiKey, ErrorCode, Response, decode_response, encode_response, make_request
from protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    MetadataRequest,
    MetadataResponse,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from tests.unit.broker.handler_services import handler_services


class _Req:
    """The parts of broker.network.Request a handler reads."""

    def __init__(self, header: Any, body: Any) -> None:
        self.header = header
        self.body = body
        self.listener = "PLAINTEXT"


def _apis(handlers: Mapping[int, Route[Any]] = HANDLERS) -> KafkaApis:
    """KafkaApis over every family built from doubles (none used by these tests)."""
    services = handler_services(props={"zookeeper.connect": "127.0.0.1:1"}, cluster_id="c")
    return KafkaApis(services, BrokerMetrics(), gate=None, handlers=handlers)


def _request(api_key: int, version: int, body: Any) -> _Req:
    r = make_request(api_key, version, 7, "test", body)
    return _Req(r.header, body)


async def test_api_versions_lists_the_handlers_ranges() -> None:
    async def metadata(ctx: TopicAdmin, request: Any) -> None:
        return None

    handlers: dict[int, Route[Any]] = {
        ApiKey.API_VERSIONS: HANDLERS[ApiKey.API_VERSIONS],
        ApiKey.METADATA: route(TopicAdmin, metadata),
    }
    apis = _apis(handlers)
    response = await apis.handle(_request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest()))
    assert isinstance(response, Response)
    keys = {e.api_key: (e.min_version, e.max_version) for e in response.body.api_keys}
    assert response.body.error_code == 0
    assert keys[ApiKey.API_VERSIONS] == (0, 3)
    assert keys[ApiKey.METADATA] == (0, 12)
    assert ApiKey.DELETE_TOPICS not in keys
    assert ApiKey.SASL_HANDSHAKE not in keys and ApiKey.SASL_AUTHENTICATE not in keys
    # the answer encodes and decodes at the request's version
    decoded = decode_response(encode_response(response), ApiKey.API_VERSIONS, 3)
    assert decoded.body.api_keys == response.body.api_keys


async def test_produce_is_advertised_from_v0_once_its_handler_exists() -> None:
    async def produce(ctx: ReplicaAccess, request: Any) -> None:
        return None

    advertised = advertised_versions({ApiKey.PRODUCE: route(ReplicaAccess, produce)})
    assert advertised == {ApiKey.PRODUCE: (0, 9)}


async def test_api_versions_newer_than_ours_gets_error_35_in_a_v0_body() -> None:
    apis = _apis()
    header = make_request(ApiKey.API_VERSIONS, 9, 11, "new-client", None).header
    response = await apis.handle(_Req(header, None))
    assert isinstance(response, Response)
    assert response.api_version == 0
    assert response.header.correlation_id == 11
    assert response.body.error_code == ErrorCode.UNSUPPORTED_VERSION
    listed = {e.api_key for e in response.body.api_keys}
    assert ApiKey.API_VERSIONS in listed and ApiKey.DELETE_TOPICS in listed
    # clients look for SaslHandshake in ApiVersions before they authenticate
    assert ApiKey.SASL_HANDSHAKE in listed and ApiKey.SASL_AUTHENTICATE in listed


async def test_an_api_without_handler_gets_unsupported_version_or_close() -> None:
    apis = _apis({})
    # DeleteTopics has no top-level error code: None tells the network to close
    delete = _request(ApiKey.DELETE_TOPICS, 4, DeleteTopicsRequest(topic_names=["t"]))
    assert await apis.handle(delete) is None
    metadata = _request(ApiKey.METADATA, 9, MetadataRequest(topics=None))
    assert await apis.handle(metadata) is None


async def test_error_response_sets_top_level_error_code() -> None:
    header = make_request(ApiKey.DESCRIBE_CLUSTER, 0, 3, "c", None).header
    response = error_response(header, ErrorCode.UNKNOWN_SERVER_ERROR)
    assert response is not None
    assert response.body.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert response.header.correlation_id == 3
    protocol.encode_response(response)  # encodable at that version


async def test_dispatch_calls_the_tables_handler_with_its_family() -> None:
    seen: list[tuple[TopicAdmin, Any]] = []

    request = _request(ApiKey.METADATA, 12, MetadataRequest(topics=None))
    answer = protocol.make_response(request.header, MetadataResponse())

    async def metadata(ctx: TopicAdmin, request: Any) -> Response:
        seen.append((ctx, request))
        return answer

    services = handler_services()
    handlers: dict[int, Route[Any]] = {ApiKey.METADATA: route(TopicAdmin, metadata)}
    apis = KafkaApis(services, BrokerMetrics(), gate=None, handlers=handlers)
    assert await apis.handle(request) is answer
    assert seen == [(services.topics, request)]
    # a version outside the advertised range never reaches the handler
    old = _request(ApiKey.METADATA, 13, MetadataRequest(topics=None))
    assert await apis.handle(old) is None
    assert len(seen) == 1


async def test_deferred_responses_pass_through_and_count_errors() -> None:
    metrics = BrokerMetrics()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Response] = loop.create_future()

    async def create(ctx: TopicAdmin, request: Any) -> asyncio.Future[Response]:
        return future

    handlers: dict[int, Route[Any]] = {ApiKey.CREATE_TOPICS: route(TopicAdmin, create)}
    apis = KafkaApis(handler_services(), metrics, gate=None, handlers=handlers)
    req = _request(ApiKey.CREATE_TOPICS, 7, None)
    req.body = object()
    assert await apis.handle(req) is future
    topic = CreateTopicsResponse.CreatableTopicResult(
        name="t", error_code=ErrorCode.TOPIC_ALREADY_EXISTS
    )
    future.set_result(protocol.make_response(req.header, CreateTopicsResponse(topics=[topic])))
    await asyncio.sleep(0)  # done callbacks run on the next loop iteration
    sample = metrics.request_errors.labels(
        api="CreateTopics", error="TOPIC_ALREADY_EXISTS"
    )._value.get()
    assert sample == 1


def test_iter_error_codes_walks_nested_lists() -> None:
    topic = CreateTopicsResponse.CreatableTopicResult(name="t", error_code=36)
    body = CreateTopicsResponse(topics=[topic, CreateTopicsResponse.CreatableTopicResult()])
    assert list(iter_error_codes(body)) == [36]
    assert list(iter_error_codes(ApiVersionsResponse(error_code=35))) == [35]


def test_the_table_names_the_served_apis() -> None:
    assert set(HANDLERS) >= {ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.METADATA}
    assert ApiKey.DELETE_TOPICS in HANDLERS
    assert ApiKey.SASL_HANDSHAKE in HANDLERS


@pytest.mark.parametrize(
    ("api_key", "body"),
    [
        (ApiKey.SASL_HANDSHAKE, SaslHandshakeRequest(mechanism="PLAIN")),
        (ApiKey.SASL_AUTHENTICATE, SaslAuthenticateRequest(auth_bytes=b"\x00a\x00b")),
    ],
)
async def test_sasl_reaching_the_handlers_is_an_illegal_state(api_key: int, body: Any) -> None:
    # the exchanges run in the network layer; a handshake or token that gets here came
    # on a listener without SASL, or after authentication: Kafka's ILLEGAL_SASL_STATE
    response = await _apis().handle(_request(api_key, 1, body))
    assert isinstance(response, Response)
    assert response.body.error_code == ErrorCode.ILLEGAL_SASL_STATE
