"""ACL znode paths and payloads in Kafka's layout."""

from __future__ import annotations

import json

import pytest

from protocol.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from zk.acl_codec import (
    EXTENDED_CHANGES,
    LITERAL_CHANGES,
    acl_path,
    change_sequence,
    decode_acls,
    decode_change,
    encode_acls,
    encode_change,
)
from zk.codec import ZkDataError

ALICE_READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
BOB_DENY = AccessControlEntry(
    "User:bob", "10.0.0.1", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY
)


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        (ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL), "/kafka-acl/Topic/t"),
        (
            ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", PatternType.PREFIXED),
            "/kafka-acl-extended/prefixed/TransactionalId/tx",
        ),
        (
            ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
            "/kafka-acl/Cluster/kafka-cluster",
        ),
        (
            ResourcePattern(ResourceType.DELEGATION_TOKEN, "d", PatternType.LITERAL),
            "/kafka-acl/DelegationToken/d",
        ),
    ],
)
def test_paths(pattern: ResourcePattern, path: str) -> None:
    assert acl_path(pattern) == path


def test_a_name_with_a_slash_has_no_path() -> None:
    with pytest.raises(ValueError, match="znode"):
        acl_path(ResourcePattern(ResourceType.TOPIC, "a/b", PatternType.LITERAL))


def test_acl_payload_is_kafkas_version_1_json() -> None:
    data = encode_acls([ALICE_READ, BOB_DENY])
    assert json.loads(data) == {
        "version": 1,
        "acls": [
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Read",
                "host": "*",
            },
            {
                "principal": "User:bob",
                "permissionType": "Deny",
                "operation": "DescribeConfigs",
                "host": "10.0.0.1",
            },
        ],
    }
    assert decode_acls("/p", data) == {ALICE_READ, BOB_DENY}


def test_kafka_written_payload_decodes() -> None:
    kafka = (
        b'{"version":1,"acls":[{"principal":"User:*","permissionType":"Allow",'
        b'"operation":"IdempotentWrite","host":"*"}]}'
    )
    (entry,) = decode_acls("/p", kafka)
    assert entry.operation is AclOperation.IDEMPOTENT_WRITE
    assert decode_acls("/p", b"") == frozenset()


@pytest.mark.parametrize(
    "data",
    [
        b"nope",
        b'{"version":1}',
        b'{"version":1,"acls":[{"principal":"User:a"}]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe",'
        b'"operation":"Read","host":"*"}]}',
    ],
)
def test_malformed_payloads_name_the_path(data: bytes) -> None:
    with pytest.raises(ZkDataError, match="/kafka-acl/Topic/t"):
        decode_acls("/kafka-acl/Topic/t", data)


def test_change_notifications() -> None:
    literal = ResourcePattern(ResourceType.GROUP, "g:1", PatternType.LITERAL)
    assert encode_change(literal) == b"Group:g:1"
    assert decode_change(LITERAL_CHANGES, b"Group:g:1") == literal
    prefixed = ResourcePattern(ResourceType.TOPIC, "pay", PatternType.PREFIXED)
    assert json.loads(encode_change(prefixed)) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "pay",
        "patternType": "PREFIXED",
    }
    assert decode_change(EXTENDED_CHANGES, encode_change(prefixed)) == prefixed
    mixed_case = b'{"version":1,"resourceType":"Topic","name":"pay","patternType":"Prefixed"}'
    assert decode_change(EXTENDED_CHANGES, mixed_case) == prefixed
    with pytest.raises(ZkDataError):
        decode_change(LITERAL_CHANGES, b"no-colon")
    assert change_sequence("acl_changes_0000000012") == 12
    assert change_sequence("other") == -1
