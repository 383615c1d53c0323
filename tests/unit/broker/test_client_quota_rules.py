"""Client quotas, the pure parts: entity paths and their znode config, the precedence
that picks a client's quota, the sampled rate and Kafka's throttle time with an injected
clock, and the validation AlterClientQuotas / DescribeClientQuotas apply."""

from __future__ import annotations

import pytest

from broker.admin.client_quotas import Failure, QuotaOp, check_ops, describe, parse_entity
from broker.client_quotas.manager import ClientQuotas
from broker.client_quotas.rate import SampledRate, throttle_ms
from protocol import ErrorCode
from tests.unit.broker.quota_doubles import RecordingObserver
from zk.codec import decode_config_change, encode_config_change
from zk.quota_entities import (
    client_entity,
    entity_path,
    parse_entity_path,
    precedence,
    quotas_from_config,
    resolve,
    updated_quota_config,
    user_client_entity,
    user_entity,
)

P = "producer_byte_rate"
C = "consumer_byte_rate"


@pytest.mark.parametrize(
    ("entity", "path"),
    [
        (user_entity("alice"), "users/alice"),
        (user_entity(None), "users/<default>"),
        (client_entity("c 1/x"), "clients/c%201%2Fx"),
        (client_entity(None), "clients/<default>"),
        (user_client_entity("alice", "c1"), "users/alice/clients/c1"),
        (user_client_entity(None, None), "users/<default>/clients/<default>"),
    ],
)
def test_entity_paths_round_trip_through_notifications(entity: object, path: str) -> None:
    assert entity_path(entity) == path  # type: ignore[arg-type]
    entity_type, name = decode_config_change(encode_config_change(path))
    assert parse_entity_path(entity_type, name) == entity


def test_paths_that_name_no_quota_entity() -> None:
    assert parse_entity_path("topics", "t") is None
    assert parse_entity_path("users", "a/b") is None
    assert parse_entity_path("clients", "a/clients/b") is None


def test_quota_keys_live_beside_scram_credentials() -> None:
    config = {"SCRAM-SHA-256": "salt=x,stored_key=y,server_key=z,iterations=4096", P: "1024"}
    assert quotas_from_config(config) == {P: 1024.0}
    updated = updated_quota_config(config, {C: 2048.0}, {P})
    assert updated == {"SCRAM-SHA-256": config["SCRAM-SHA-256"], C: "2048"}
    # a value that is not a positive number is not a quota
    assert quotas_from_config({P: "abc", C: "-1"}) == {}


def test_precedence_is_kafkas_order() -> None:
    assert [entity_path(e) for e in precedence("u", "c")] == [
        "users/u/clients/c",
        "users/u/clients/<default>",
        "users/u",
        "users/<default>/clients/c",
        "users/<default>/clients/<default>",
        "users/<default>",
        "clients/c",
        "clients/<default>",
    ]


def test_resolve_takes_the_first_entity_with_the_key_and_its_tags() -> None:
    table = {
        client_entity(None): {P: 100.0, C: 100.0},
        client_entity("c"): {P: 200.0},
        user_entity("u"): {C: 300.0},
    }
    assert resolve(table, P, "u", "c") == (200.0, ("", "c"))
    assert resolve(table, C, "u", "c") == (300.0, ("u", ""))
    # a default client-id quota is each client's own: tagged with the actual client id
    assert resolve(table, P, "ANONYMOUS", "other") == (100.0, ("", "other"))
    assert resolve({}, P, "u", "c") is None


def test_a_rate_spans_at_least_all_but_one_window() -> None:
    rate = SampledRate(11, 1000)
    rate.record(10_000, 0)
    # first bytes measured over 10 s, not over the milliseconds since they came
    assert rate.span_ms(5) == 10_000
    assert rate.measure(5) == pytest.approx(1000.0)
    rate.record(10_000, 15_000)  # the first sample fell out of the 11 s span
    assert rate.measure(15_000) == pytest.approx(1000.0)


def test_samples_roll_every_window() -> None:
    rate = SampledRate(3, 1000)
    for t in range(0, 5000, 500):
        rate.record(100, t)
    # at 4500 the span holds the samples started at 2000, 3000 (2 records each) and
    # 4000 (2 records): 600 bytes over max(2500, 2000) ms
    assert rate.measure(4500) == pytest.approx(600 / 2.5)


def test_throttle_time_is_the_time_to_fall_back_to_the_quota() -> None:
    assert throttle_ms(100.0, 100.0, 10_000, 11_000) == 0
    assert throttle_ms(150.0, 100.0, 10_000, 11_000) == 5000
    assert throttle_ms(1e9, 100.0, 10_000, 11_000) == 11_000  # bounded


def test_client_quotas_throttle_over_the_quota_only() -> None:
    observer = RecordingObserver()
    quotas = ClientQuotas(11, 1000, observer)
    quotas.set_entity(client_entity("slow"), {P: 1000.0})
    assert quotas.record("produce", "ANONYMOUS", "fast", 10**9, 0) == 0  # no quota
    assert quotas.record("produce", "ANONYMOUS", "slow", 5000, 0) == 0  # 500 B/s
    delay = quotas.record("produce", "ANONYMOUS", "slow", 10_000, 100)  # 1500 B/s
    assert delay == round((1500 - 1000) / 1000 * 10_000)
    assert observer.throttles == [("produce", delay)]
    quota_type, tags, rate = observer.rates[-1]
    assert (quota_type, tags) == ("produce", ("", "slow"))
    assert rate == pytest.approx(1500.0)
    # fetch is its own quota type: no consumer_byte_rate set
    assert quotas.record("fetch", "ANONYMOUS", "slow", 10**9, 100) == 0
    # removed: no longer throttled
    quotas.apply_entity_config("clients", "slow", {})
    assert quotas.record("produce", "ANONYMOUS", "slow", 10**9, 200) == 0


def test_a_throttled_fetch_takes_its_bytes_back() -> None:
    quotas = ClientQuotas(11, 1000, RecordingObserver())
    quotas.apply_entity_config("users", "<default>", {C: "1000"})
    assert quotas.record("fetch", "bob", "c", 20_000, 0) > 0
    quotas.unrecord("fetch", "bob", "c", 20_000, 0)
    assert quotas.record("fetch", "bob", "c", 5_000, 10) == 0


def test_alter_validation_is_kafkas() -> None:
    assert parse_entity([("user", "u"), ("client-id", None)]) == user_client_entity("u", None)
    for bad in (
        [],
        [("group", "g")],
        [("user", "a"), ("user", "b")],
        [("ip", "1.2.3.4"), ("user", "u")],
    ):
        refused = parse_entity(bad)
        assert isinstance(refused, Failure) and refused.code == ErrorCode.INVALID_REQUEST
    assert check_ops([QuotaOp(P, 1024.0, False), QuotaOp(C, 0.0, True)]) == ({P: 1024.0}, {C})
    for op, message in (
        (QuotaOp("producer_byte_rat", 1.0, False), "Invalid configuration key"),
        (QuotaOp("request_percentage", 50.0, False), "Invalid configuration key"),
        (QuotaOp(P, 0.0, False), "at least 1"),
        (QuotaOp(P, -5.0, False), "at least 1"),
        (QuotaOp(P, 10.5, False), "must be a Long value"),
        (QuotaOp(P, float("nan"), False), "must be a Long value"),
    ):
        bad_op = check_ops([op])
        assert isinstance(bad_op, Failure), op
        assert bad_op.code == ErrorCode.INVALID_REQUEST and message in bad_op.message


def test_describe_filters() -> None:
    table = {
        client_entity("c"): {P: 1.0},
        client_entity(None): {P: 2.0},
        user_client_entity("u", "c"): {C: 3.0},
    }
    exact = describe(table, [("client-id", 0, "c")], strict=False)
    assert [e for e, _ in exact] == [  # type: ignore[union-attr]
        client_entity("c"),
        user_client_entity("u", "c"),
    ]
    strict = describe(table, [("client-id", 2, None)], strict=True)
    assert sorted(map(repr, (e for e, _ in strict))) == sorted(  # type: ignore[union-attr]
        map(repr, (client_entity("c"), client_entity(None)))
    )
    default = describe(table, [("client-id", 1, None)], strict=True)
    assert default == [(client_entity(None), {P: 2.0})]
    refused = describe(table, [("client-id", 0, "a"), ("client-id", 0, "b")], strict=False)
    assert isinstance(refused, Failure) and refused.code == ErrorCode.INVALID_REQUEST
