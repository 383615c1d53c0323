"""The users and ACLs pages' pure parts: form fields into ACL filters and bindings (and
back), their refusals naming the field, and the sentences added to the refusals a
secured cluster gives."""

from __future__ import annotations

import pytest

from client.errors import KafkaError
from protocol import ErrorCode
from protocol.acls import (
    MATCH_ALL,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from web.errors import InputError, problem_of
from web.pages.acls import binding_filter, binding_json, filter_json, new_binding
from web.pages.users import _mechanism
from web.views import Params


def params(**values: str) -> Params:
    return Params(values, {})


def test_blank_filter_fields_select_every_acl() -> None:
    assert binding_filter(params()) == MATCH_ALL
    assert binding_filter(params(name=" ", principal="", host="")) == MATCH_ALL
    assert binding_filter(params(name=" a b ")).pattern.name == " a b "  # as given


def test_a_filter_takes_either_spelling_and_comes_back_as_its_fields() -> None:
    f = binding_filter(
        params(
            resource_type="transactional-id",
            name="tx-",
            pattern_type="prefixed",
            principal="User:alice",
            operation="DescribeConfigs",
            permission="deny",
        )
    )
    assert f.pattern.resource_type is ResourceType.TRANSACTIONAL_ID
    assert f.pattern.pattern_type is PatternType.PREFIXED
    assert f.entry.operation is AclOperation.DESCRIBE_CONFIGS
    assert f.entry.permission is AclPermissionType.DENY
    assert (f.pattern.name, f.entry.principal, f.entry.host) == ("tx-", "User:alice", None)
    assert binding_filter(params(**filter_json(f))) == f


def test_a_binding_is_its_own_exact_filter() -> None:
    binding = AclBinding(
        ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
        AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )
    f = binding_filter(params(**binding_json(binding)))
    assert f.matches(binding)
    write = AccessControlEntry("User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    other = AclBinding(binding.pattern, write)
    assert not f.matches(other)
    assert new_binding(params(**binding_json(binding))) == binding


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"resource_type": "ANY"}, "resource_type must be one of TOPIC"),
        ({"pattern_type": "MATCH"}, "pattern_type must be one of LITERAL, PREFIXED"),
        ({"operation": "ANY"}, "operation must be one of ALL"),
        ({"operation": ""}, "operation is required"),
        ({"permission": "maybe"}, "permission must be one of ALLOW, DENY"),
        ({"principal": "alice"}, "not of the form Type:name"),
        ({"resource_type": "CLUSTER"}, "kafka-cluster"),
        ({"name": ""}, "name is required"),
    ],
)
def test_a_binding_to_create_is_refused_naming_what_is_wrong(
    fields: dict[str, str], named: str
) -> None:
    good = {"name": "t", "principal": "User:a", "operation": "READ"}
    with pytest.raises(InputError, match=named):
        new_binding(params(**{**good, **fields}))


def test_a_binding_defaults_to_a_literal_topic_allowed_from_any_host() -> None:
    made = new_binding(params(name="t", principal="User:a", operation="write"))
    assert made.pattern == ResourcePattern(ResourceType.TOPIC, "t", PatternType.LITERAL)
    assert made.entry == AccessControlEntry(
        "User:a", "*", AclOperation.WRITE, AclPermissionType.ALLOW
    )


def test_a_filter_refuses_an_unknown_value_by_field() -> None:
    with pytest.raises(InputError, match="pattern_type must be one of ANY, MATCH"):
        binding_filter(params(pattern_type="glob"))


def test_a_mechanism_is_one_of_the_scram_ones() -> None:
    assert _mechanism(params(mechanism="scram-sha-512")) == "SCRAM-SHA-512"
    with pytest.raises(InputError, match="SCRAM-SHA-256, SCRAM-SHA-512"):
        _mechanism(params(mechanism="PLAIN"))


def test_security_refusals_say_what_they_mean() -> None:
    disabled = problem_of(
        KafkaError(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker"),
        "h:1",
    )
    assert (disabled.status, disabled.kafka_error) == (409, "SECURITY_DISABLED")
    assert disabled.detail.startswith("SECURITY_DISABLED: No Authorizer is configured")
    assert "no authorizer" in disabled.detail
    refused = problem_of(KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "h:1")
    assert refused.kafka_error == "CLUSTER_AUTHORIZATION_FAILED"
    assert "super user" in refused.detail
    plain = problem_of(KafkaError(ErrorCode.POLICY_VIOLATION, "no"), "h:1")
    assert plain.detail == "POLICY_VIOLATION: no"
