"""ACL administration on a real two-broker cluster with the authorizer on: confluent-kafka's
and kafka-python's admin clients and ``minikafka acls`` create, describe (every filter
kind) and delete ACLs; a change made through one broker is in force on the other without
a restart; only a user with ALTER / DESCRIBE on the cluster may manage ACLs; malformed
principals, names and pattern types are refused with INVALID_REQUEST and change nothing."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
)
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType

from client.acls import create_acls, describe_acls
from client.client import KafkaClient
from client.errors import KafkaError
from protocol import ApiKey
from protocol import acls as pa
from protocol.errors import ErrorCode
from protocol.messages import DescribeAclsRequest
from tests.integration.acl_cluster import AclCluster, start_acl_cluster
from tests.polling import wait_until
from tools import acls as acls_tool
from tools.main import build_parser
from tools.zookeeper_server import ZooKeeperServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def c(zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    yield from start_acl_cluster(zookeeper, tmp_path_factory.mktemp("acls"))


def admin(c: AclCluster, user: str = "admin", broker: int | None = None) -> AdminClient:
    return AdminClient(c.librdkafka(user, broker))


def binding(
    name: str,
    principal: str = "User:alice",
    op: AclOperation = AclOperation.READ,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, name, pattern, principal, "*", op, AclPermissionType.ALLOW
    )


def described(client: AdminClient, f: AclBindingFilter) -> set[tuple[str, str, str, str]]:
    found = client.describe_acls(f).result(timeout=15)
    return {(b.name, b.resource_pattern_type.name, b.principal, b.operation.name) for b in found}


#: confluent-kafka's filters take None for "any name, principal or host" (annotated str)
ANY: Any = None


def topic_filter(
    name: str | None, pattern: ResourcePatternType, principal: str | None = None
) -> AclBindingFilter:
    name_or_any: Any = name
    principal_or_any: Any = principal
    return AclBindingFilter(
        ResourceType.TOPIC,
        name_or_any,
        pattern,
        principal_or_any,
        ANY,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )


def test_confluent_kafka_creates_describes_and_deletes(c: AclCluster) -> None:
    a = admin(c)
    created = a.create_acls(
        [
            binding("cf-orders"),
            binding("cf-", "User:bob", AclOperation.WRITE, ResourcePatternType.PREFIXED),
            binding("*", "User:carol", AclOperation.DESCRIBE),
        ]
    )
    for future in created.values():
        assert future.result(timeout=15) is None
    assert described(a, topic_filter("cf-orders", ResourcePatternType.LITERAL)) == {
        ("cf-orders", "LITERAL", "User:alice", "READ")
    }
    # MATCH: every pattern that applies to the topic cf-orders
    assert described(a, topic_filter("cf-orders", ResourcePatternType.MATCH)) == {
        ("cf-orders", "LITERAL", "User:alice", "READ"),
        ("cf-", "PREFIXED", "User:bob", "WRITE"),
        ("*", "LITERAL", "User:carol", "DESCRIBE"),
    }
    # ANY with a name: that exact name, any pattern type
    assert described(a, topic_filter("cf-", ResourcePatternType.ANY)) == {
        ("cf-", "PREFIXED", "User:bob", "WRITE")
    }
    assert described(a, topic_filter(None, ResourcePatternType.PREFIXED)) >= {
        ("cf-", "PREFIXED", "User:bob", "WRITE")
    }
    assert described(a, topic_filter(None, ResourcePatternType.ANY, "User:carol")) == {
        ("*", "LITERAL", "User:carol", "DESCRIBE")
    }
    deleted = a.delete_acls(
        [
            topic_filter(None, ResourcePatternType.ANY, "User:carol"),
            topic_filter("cf-", ResourcePatternType.PREFIXED),
        ]
    )
    gone = [future.result(timeout=15) for future in deleted.values()]
    assert sorted(len(g) for g in gone) == [1, 1]
    assert described(a, topic_filter("cf-orders", ResourcePatternType.MATCH)) == {
        ("cf-orders", "LITERAL", "User:alice", "READ")
    }


def test_kafka_python_creates_describes_and_deletes(c: AclCluster) -> None:
    a = KafkaAdminClient(**c.kafka_python("admin"), request_timeout_ms=15000)
    try:
        acl = ACL(
            "User:bob",
            "*",
            ACLOperation.WRITE,
            ACLPermissionType.ALLOW,
            ResourcePattern(KpResourceType.TOPIC, "kp-topic", ACLResourcePatternType.LITERAL),
        )
        result = a.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
        query = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KpResourceType.TOPIC, "kp-topic", ACLResourcePatternType.LITERAL),
        )
        found, error = a.describe_acls(query)
        assert error.errno == 0
        assert [(x.principal, x.operation) for x in found] == [("User:bob", ACLOperation.WRITE)]
        ((_, deleted, del_error),) = a.delete_acls([query])
        assert del_error.errno == 0 and len(deleted) == 1
        found, _ = a.describe_acls(query)
        assert found == []
    finally:
        a.close()


def run_tool(*words: str) -> str:
    out = io.StringIO()
    args = build_parser("acls").parse_args(["acls", *words])
    asyncio.run(acls_tool.main(args, out))
    return out.getvalue()


def test_minikafka_acls_add_list_remove(c: AclCluster, tmp_path: Path) -> None:
    config = str(c.command_config(tmp_path, "admin"))
    common = ["--bootstrap-server", c.sasl_bootstrap, "--command-config", config]
    added = run_tool(
        *common,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        "tool-topic",
    )
    pattern = "ResourcePattern(resourceType=TOPIC, name=tool-topic, patternType=LITERAL)"
    assert f"Adding ACLs for resource `{pattern}`: \n" in added
    assert "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in added
    assert f"Current ACLs for resource `{pattern}`: \n" in added
    run_tool(
        *common,
        "--add",
        "--consumer",
        "--allow-principal",
        "User:bob",
        "--topic",
        "tool-",
        "--group",
        "tool-group",
        "--resource-pattern-type",
        "prefixed",
    )
    listed = run_tool(
        *common, "--list", "--topic", "tool-topic", "--resource-pattern-type", "match"
    )
    assert "name=tool-, patternType=PREFIXED" in listed
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in listed
    group = run_tool(
        *common, "--list", "--group", "tool-group", "--resource-pattern-type", "prefixed"
    )
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in group
    run_tool(*common, "--remove", "--force", "--topic", "tool-topic")
    assert "tool-topic" not in run_tool(*common, "--list", "--topic", "tool-topic")
    # the prefixed ones were left alone
    assert "User:bob" in run_tool(*common, "--list", "--resource-pattern-type", "prefixed")


def broker_holds(c: AclCluster, broker: int, name: str) -> int:
    """How many ACLs on the literal topic ``name`` broker ``broker`` itself describes
    (asked on its PLAINTEXT listener, whose principal is a super user here)."""
    request = DescribeAclsRequest(
        resource_type_filter=pa.ResourceType.TOPIC,
        resource_name_filter=name,
        pattern_type_filter=pa.PatternType.LITERAL,
        principal_filter=None,
        host_filter=None,
        operation=pa.AclOperation.ANY,
        permission_type=pa.AclPermissionType.ANY,
    )
    answer = c.request(broker, ApiKey.DESCRIBE_ACLS, 1, request)
    return sum(len(r.acls) for r in answer.resources)


def test_a_change_through_one_broker_is_in_force_on_the_other(c: AclCluster) -> None:
    first, second = admin(c, broker=0), admin(c, broker=1)
    (future,) = first.create_acls([binding("spread", "User:carol")]).values()
    assert future.result(timeout=15) is None
    wait_until(
        lambda: broker_holds(c, 0, "spread") == 1 and broker_holds(c, 1, "spread") == 1,
        timeout=1.5,
        what="both brokers hold the new ACL",
    )
    (deleted,) = second.delete_acls([topic_filter("spread", ResourcePatternType.LITERAL)]).values()
    assert len(deleted.result(timeout=15)) == 1
    wait_until(
        lambda: broker_holds(c, 0, "spread") == 0 and broker_holds(c, 1, "spread") == 0,
        timeout=1.5,
        what="both brokers forgot the deleted ACL",
    )


def alice_describes(c: AclCluster) -> int:
    """The error code alice's DescribeAcls gets (0: allowed), through our client."""

    async def scenario() -> int:
        async with KafkaClient(c.sasl_bootstrap, c.client_config("alice")) as client:
            try:
                await describe_acls(client, pa.MATCH_ALL)
            except KafkaError as exc:
                return exc.error_code
            return 0

    return asyncio.run(scenario())


def test_only_cluster_alter_and_describe_manage_acls(c: AclCluster) -> None:
    alice = admin(c, "alice")
    (future,) = alice.create_acls([binding("alices-own")]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=15)
    assert refused.value.args[0].code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert alice_describes(c) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    kp = KafkaAdminClient(**c.kafka_python("alice"), request_timeout_ms=15000)
    try:
        query = ACLFilter(
            None,
            None,
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        with pytest.raises(Exception, match="ClusterAuthorizationFailed"):
            kp.describe_acls(query)
    finally:
        kp.close()
    assert not described(admin(c), topic_filter("alices-own", ResourcePatternType.ANY))
    # DESCRIBE on the cluster lets alice describe, not create
    cluster = AclBinding(
        ResourceType.BROKER,
        "kafka-cluster",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.ALLOW,
    )
    root = admin(c)
    (granted,) = root.create_acls([cluster]).values()
    assert granted.result(timeout=15) is None
    wait_until(lambda: alice_describes(c) == 0, timeout=5.0, what="alice may describe ACLs")
    (future,) = alice.create_acls([binding("alices-own")]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(timeout=15)
    assert refused.value.args[0].code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    (removed,) = root.delete_acls(
        [
            AclBindingFilter(
                ResourceType.BROKER,
                "kafka-cluster",
                ResourcePatternType.LITERAL,
                "User:alice",
                ANY,
                AclOperation.ANY,
                AclPermissionType.ANY,
            )
        ]
    ).values()
    assert len(removed.result(timeout=15)) == 1


BAD = [
    pa.AclBinding(
        pa.ResourcePattern(pa.ResourceType.TOPIC, "bad-1", pa.PatternType.LITERAL),
        pa.AccessControlEntry("alice", "*", pa.AclOperation.READ, pa.AclPermissionType.ALLOW),
    ),
    pa.AclBinding(
        pa.ResourcePattern(pa.ResourceType.TOPIC, "bad-2", pa.PatternType.MATCH),
        pa.AccessControlEntry("User:alice", "*", pa.AclOperation.READ, pa.AclPermissionType.ALLOW),
    ),
    pa.AclBinding(
        pa.ResourcePattern(pa.ResourceType.TOPIC, "", pa.PatternType.LITERAL),
        pa.AccessControlEntry("User:alice", "*", pa.AclOperation.READ, pa.AclPermissionType.ALLOW),
    ),
    pa.AclBinding(
        pa.ResourcePattern(pa.ResourceType.TOPIC, "bad/4", pa.PatternType.LITERAL),
        pa.AccessControlEntry("User:alice", "*", pa.AclOperation.READ, pa.AclPermissionType.ALLOW),
    ),
    pa.AclBinding(
        pa.ResourcePattern(pa.ResourceType.CLUSTER, "other", pa.PatternType.LITERAL),
        pa.AccessControlEntry("User:alice", "*", pa.AclOperation.ALTER, pa.AclPermissionType.ALLOW),
    ),
    pa.AclBinding(
        pa.ResourcePattern(pa.ResourceType.UNKNOWN, "bad-6", pa.PatternType.LITERAL),
        pa.AccessControlEntry("User:alice", "*", pa.AclOperation.READ, pa.AclPermissionType.ALLOW),
    ),
]


def test_bad_input_is_refused_and_changes_nothing(c: AclCluster) -> None:
    good = pa.AclBinding(
        pa.ResourcePattern(pa.ResourceType.TOPIC, "good-one", pa.PatternType.LITERAL),
        pa.AccessControlEntry("User:alice", "*", pa.AclOperation.READ, pa.AclPermissionType.ALLOW),
    )

    async def scenario() -> tuple[list[object], list[pa.AclBinding]]:
        async with KafkaClient(c.sasl_bootstrap, c.client_config("admin")) as client:
            results = await create_acls(client, [*BAD, good])
            everything = await describe_acls(client, pa.MATCH_ALL)
            return list(results), everything

    results, everything = asyncio.run(scenario())
    codes = [getattr(r, "error_code", None) for r in results]
    assert codes == [ErrorCode.INVALID_REQUEST] * len(BAD) + [None]
    names = {b.pattern.name for b in everything}
    assert "good-one" in names
    assert not names & {"bad-1", "bad-2", "", "bad/4", "other", "bad-6"}
