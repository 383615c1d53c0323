"""DescribeClientQuotas and AlterClientQuotas on one broker (over FakeZk): any broker
writes ZooKeeper and its own table at once; entries fail alone, with Kafka's
INVALID_REQUEST; validate_only writes nothing; the authorizer's refusals; describe
answers from the table, filtered."""

from __future__ import annotations

from typing import Any

from broker.apis import alter_client_quotas, describe_client_quotas
from broker.apis.services import QuotaAdmin
from broker.auth.access import AccessControl
from broker.client_quotas.manager import ClientQuotas
from protocol import ApiKey, ErrorCode, make_request
from protocol.acls import CLUSTER_NAME, AclOperation, ResourceType
from protocol.messages import AlterClientQuotasRequest, DescribeClientQuotasRequest
from tests.fakes.zk import FakeZk
from tests.unit.broker.access_doubles import allowing
from tests.unit.broker.handler_services import handler_services
from tests.unit.broker.quota_doubles import RecordingObserver
from zk.quota_entities import client_entity, user_client_entity, user_entity

Entity = AlterClientQuotasRequest.EntityData
Op = AlterClientQuotasRequest.OpData


class Req:
    def __init__(self, api_key: int, body: Any) -> None:
        self.header = make_request(api_key, 1, 1, "c", body).header
        self.body = body


def ctx(zk: FakeZk, access: AccessControl | None = None) -> QuotaAdmin:
    quotas = ClientQuotas(11, 1000, RecordingObserver())
    return handler_services(zk=zk, quotas=quotas, access=access).quotas


def entry(entity: list[tuple[str, str | None]], *ops: Any) -> Any:
    return AlterClientQuotasRequest.EntryData(
        entity=[Entity(entity_type=t, entity_name=n) for t, n in entity], ops=list(ops)
    )


def op(key: str, value: float = 0.0, remove: bool = False) -> Any:
    return Op(key=key, value=value, remove=remove)


async def alter(admin: QuotaAdmin, *entries: Any, validate_only: bool = False) -> list[Any]:
    body = AlterClientQuotasRequest(entries=list(entries), validate_only=validate_only)
    response = await alter_client_quotas.handle(admin, Req(ApiKey.ALTER_CLIENT_QUOTAS, body))
    return [(e.error_code, e.error_message) for e in response.body.entries]


async def describe(admin: QuotaAdmin, *components: tuple[str, int, str | None]) -> Any:
    body = DescribeClientQuotasRequest(
        components=[
            DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=n)
            for t, m, n in components
        ],
        strict=False,
    )
    response = await describe_client_quotas.handle(admin, Req(ApiKey.DESCRIBE_CLIENT_QUOTAS, body))
    return response.body


async def test_alter_writes_zookeeper_and_the_table_and_entries_fail_alone() -> None:
    zk = FakeZk()
    zk.entity_configs[("users", "alice")] = {"SCRAM-SHA-256": "kept"}
    admin = ctx(zk)
    results = await alter(
        admin,
        entry([("user", "alice")], op("producer_byte_rate", 1024.0)),
        entry([("client-id", "c1")], op("producer_byte_rate", -1.0)),
        entry([("user", "alice"), ("client-id", None)], op("consumer_byte_rate", 2048.0)),
        entry([("group", "g")], op("producer_byte_rate", 1.0)),
    )
    assert [code for code, _ in results] == [
        ErrorCode.NONE,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NONE,
        ErrorCode.INVALID_REQUEST,
    ]
    assert "producer_byte_rate" in str(results[1][1])
    assert zk.entity_configs[("users", "alice")] == {
        "SCRAM-SHA-256": "kept",
        "producer_byte_rate": "1024",
    }
    assert zk.config_changes == ["users/alice", "users/alice/clients/<default>"]
    assert admin.quotas.table() == {
        user_entity("alice"): {"producer_byte_rate": 1024.0},
        user_client_entity("alice", None): {"consumer_byte_rate": 2048.0},
    }
    # removal
    removed = await alter(admin, entry([("user", "alice")], op("producer_byte_rate", remove=True)))
    assert removed == [(ErrorCode.NONE, None)]
    assert user_entity("alice") not in admin.quotas.table()
    assert zk.entity_configs[("users", "alice")] == {"SCRAM-SHA-256": "kept"}


async def test_validate_only_writes_nothing() -> None:
    zk = FakeZk()
    admin = ctx(zk)
    ok = entry([("client-id", "c")], op("producer_byte_rate", 10.0))
    bad = entry([("client-id", "c")], op("request_percentage", 10.0))
    results = await alter(admin, ok, bad, validate_only=True)
    assert [code for code, _ in results] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST]
    assert zk.entity_configs == {} and zk.config_changes == []
    assert admin.quotas.table() == {}


async def test_zookeeper_trouble_fails_the_entry() -> None:
    zk = FakeZk()
    zk.fail_credential_writes = True
    results = await alter(ctx(zk), entry([("client-id", "c")], op("producer_byte_rate", 10.0)))
    assert results[0][0] == ErrorCode.UNKNOWN_SERVER_ERROR


async def test_the_cluster_permissions_admit_them() -> None:
    admin = ctx(
        FakeZk(),
        access=allowing(
            (ResourceType.CLUSTER, CLUSTER_NAME, AclOperation.ALTER_CONFIGS),
            (ResourceType.CLUSTER, CLUSTER_NAME, AclOperation.DESCRIBE_CONFIGS),
        ),
    )
    results = await alter(admin, entry([("client-id", "c")], op("producer_byte_rate", 1.0)))
    assert results[0][0] == ErrorCode.NONE
    assert len((await describe(admin)).entries) == 1


async def test_describe_filters_the_table() -> None:
    admin = ctx(FakeZk())
    admin.quotas.set_entity(client_entity("c"), {"producer_byte_rate": 1.0})
    admin.quotas.set_entity(client_entity(None), {"consumer_byte_rate": 2.0})
    body = await describe(admin, ("client-id", 1, None))
    assert body.error_code == ErrorCode.NONE
    assert [
        ([(e.entity_type, e.entity_name) for e in x.entity], [(v.key, v.value) for v in x.values])
        for x in body.entries
    ] == [([("client-id", None)], [("consumer_byte_rate", 2.0)])]
    refused = await describe(admin, ("topic", 0, "t"))
    assert refused.error_code == ErrorCode.INVALID_REQUEST and refused.entries is None


async def test_the_authorizer_refuses_without_cluster_permissions() -> None:
    admin = ctx(FakeZk(), access=allowing())
    results = await alter(admin, entry([("client-id", "c")], op("producer_byte_rate", 1.0)))
    assert results[0][0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert (await describe(admin)).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
