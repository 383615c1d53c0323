"""AccessControl as the handlers use it: open without an authorizer, Kafka's denial log
line and the denial metric with one; the cluster-level table of KafkaApis answers with a
top-level error at every version; the ACL APIs without and with an authorizer."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

import pytest

import protocol
from broker.apis import CLUSTER_OPERATION_OF, HANDLERS, KafkaApis, error_response
from broker.auth.access import AccessControl
from broker.auth.acl_cache import AclCache
from broker.auth.authorizer import Authorizer, AuthorizerSettings
from broker.metrics import BrokerMetrics
from broker.security.principal import KafkaPrincipal
from protocol import ApiKey, ErrorCode, make_request
from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from protocol.messages import CreateAclsRequest, DescribeAclsRequest
from tests.unit.broker.handler_services import handler_services

ALICE = KafkaPrincipal.user("alice")


@dataclass
class Req:
    header: Any
    body: Any
    listener: str = "SASL_PLAINTEXT"
    principal: KafkaPrincipal = ALICE
    client_host: str = "10.1.2.3"
    api_name: str = "Fetch"


def access(metrics: BrokerMetrics | None = None) -> AccessControl:
    cache = AclCache()
    cache.set(
        ResourcePattern(ResourceType.TOPIC, "open", PatternType.LITERAL),
        [AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)],
    )
    settings = AuthorizerSettings(frozenset({"User:admin"}), False)
    return AccessControl(Authorizer(cache, settings), metrics or BrokerMetrics())


def test_without_an_authorizer_everything_is_allowed() -> None:
    open_access = AccessControl.open()
    request = Req(None, None)
    assert not open_access.enabled
    assert open_access.authorize(request, AclOperation.DELETE, ResourceType.TOPIC, "x")
    assert open_access.allowed(request, AclOperation.READ, ResourceType.TOPIC, ["a", "b"]) == {
        "a",
        "b",
    }


def test_a_denial_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    metrics = BrokerMetrics()
    checks = access(metrics)
    request = Req(None, None)
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        assert checks.authorize(request, AclOperation.READ, ResourceType.TOPIC, "open")
        assert not checks.authorize(request, AclOperation.READ, ResourceType.TOPIC, "closed")
        # a quiet check (filtering a listing) is neither logged nor counted
        assert not checks.authorize(
            request, AclOperation.DESCRIBE, ResourceType.TOPIC, "closed", quiet=True
        )
    assert [r.getMessage() for r in caplog.records] == [
        "Principal = User:alice is Denied Operation = Read from host = 10.1.2.3 on resource = "
        "Topic:LITERAL:closed for request = Fetch"
    ]
    sample = metrics.registry.get_sample_value(
        "minikafka_authorization_denials_total", {"api": "Fetch", "resource_type": "topic"}
    )
    assert sample == 1.0


@pytest.mark.parametrize("api_key", sorted(CLUSTER_OPERATION_OF))
def test_cluster_level_refusals_have_a_top_level_error_at_every_version(api_key: int) -> None:
    low, high = protocol.SUPPORTED_VERSIONS[api_key]
    for version in range(low, high + 1):
        header = make_request(api_key, version, 3, "c", None).header
        response = error_response(header, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        assert response is not None, (api_key, version)
        assert response.body.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _apis(checks: AccessControl) -> KafkaApis:
    services = handler_services(
        props={"zookeeper.connect": "127.0.0.1:1"}, cluster_id="c", access=checks
    )
    return KafkaApis(services, BrokerMetrics(), gate=None, handlers=HANDLERS)


def _creation() -> CreateAclsRequest:
    return CreateAclsRequest(
        creations=[
            CreateAclsRequest.AclCreation(
                resource_type=ResourceType.TOPIC,
                resource_name="t",
                resource_pattern_type=PatternType.LITERAL,
                principal="User:bob",
                host="*",
                operation=AclOperation.READ,
                permission_type=AclPermissionType.ALLOW,
            )
        ]
    )


@pytest.mark.parametrize(
    ("checks", "code"),
    [
        (AccessControl.open(), ErrorCode.SECURITY_DISABLED),
        (access(), ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    ],
)
def test_the_acl_apis_need_an_authorizer_and_the_cluster(
    checks: AccessControl, code: ErrorCode
) -> None:
    apis = _apis(checks)
    body = _creation()
    created = asyncio.run(
        apis.handle(Req(make_request(ApiKey.CREATE_ACLS, 3, 1, "c", body).header, body))
    )
    assert [r.error_code for r in created.body.results] == [code]  # type: ignore[union-attr]
    describe = DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY,
        principal_filter=None,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )
    described = asyncio.run(
        apis.handle(Req(make_request(ApiKey.DESCRIBE_ACLS, 3, 2, "c", describe).header, describe))
    )
    assert described.body.error_code == code  # type: ignore[union-attr]
