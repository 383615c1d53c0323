"""AlterConfigs and IncrementalAlterConfigs decisions: the new dynamic set, refusals with
Kafka's codes and messages, and the purge rule of /config/changes notifications."""

from __future__ import annotations

import pytest

from broker.change_notifications import obsolete
from broker.config.alter import (
    AlterOp,
    AlterRefused,
    ResourceType,
    incremental,
    replaced,
    resource_label,
    validate_broker,
    validate_topic,
)
from config.definitions import ConfigType
from protocol import ErrorCode

KINDS = {"cleanup.policy": ConfigType.LIST, "retention.ms": ConfigType.LONG}
DEFAULTS = {"cleanup.policy": "delete"}


def edit(current: dict[str, str], *ops: tuple[str, int, str | None]) -> dict[str, str]:
    return incremental(current, ops, KINDS.get, DEFAULTS.get)


def test_alter_configs_replaces_the_whole_set_and_drops_nulls() -> None:
    assert replaced([("retention.ms", "10"), ("segment.bytes", None)]) == {"retention.ms": "10"}


def test_incremental_set_delete_append_subtract() -> None:
    current = {"retention.ms": "10", "segment.bytes": "4096"}
    assert edit(
        current, ("retention.ms", AlterOp.SET, "20"), ("segment.bytes", AlterOp.DELETE, None)
    ) == {"retention.ms": "20"}
    # APPEND on an unset list key starts from its default; no duplicates
    appended = edit({}, ("cleanup.policy", AlterOp.APPEND, "compact,delete"))
    assert appended == {"cleanup.policy": "delete,compact"}
    assert edit(appended, ("cleanup.policy", AlterOp.SUBTRACT, "delete")) == {
        "cleanup.policy": "compact"
    }
    assert current == {"retention.ms": "10", "segment.bytes": "4096"}  # not edited in place


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        (
            [("retention.ms", AlterOp.APPEND, "1")],
            "Config value append is not allowed for config key: retention.ms",
        ),
        (
            [("retention.ms", AlterOp.SUBTRACT, "1")],
            "Config value subtract is not allowed for config key: retention.ms",
        ),
        (
            [("retention.ms", AlterOp.SET, "1"), ("retention.ms", AlterOp.DELETE, None)],
            "Error due to duplicate config keys",
        ),
        ([("retention.ms", 9, "1")], "Unknown alter config operation 9"),
    ],
)
def test_incremental_refusals(ops: list[tuple[str, int, str | None]], message: str) -> None:
    with pytest.raises(AlterRefused) as refused:
        edit({}, *ops)
    assert (refused.value.error_code, refused.value.message) == (ErrorCode.INVALID_REQUEST, message)


def test_a_topic_with_a_bad_value_is_refused_whole_naming_the_key() -> None:
    validate_topic("t", {"retention.ms": "1000", "cleanup.policy": "compact"})
    with pytest.raises(AlterRefused) as refused:
        validate_topic("t", {"retention.ms": "1000", "segment.bytes": "ten"})
    assert refused.value.error_code == ErrorCode.INVALID_REQUEST
    assert refused.value.message.startswith(
        "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): "
    )
    assert "segment.bytes" in refused.value.message
    with pytest.raises(AlterRefused) as unknown:
        validate_topic("t", {"log.retention.ms": "1"})
    assert (unknown.value.error_code, unknown.value.message) == (
        ErrorCode.INVALID_CONFIG,
        "Unknown topic config name: log.retention.ms",
    )


def test_a_broker_refuses_keys_that_need_a_restart() -> None:
    validate_broker("1", {"log.retention.ms": "1000", "custom.key": "x"})
    with pytest.raises(AlterRefused) as refused:
        validate_broker("", {"queued.max.requests": "4", "log.dirs": "/x", "log.retention.ms": "1"})
    assert refused.value.message == (
        "Invalid config value for resource ConfigResource(type=BROKER, name=''): "
        "Cannot update these configs dynamically: Set(log.dirs, queued.max.requests)"
    )
    with pytest.raises(AlterRefused, match=r"message\.max\.bytes"):
        validate_broker("1", {"message.max.bytes": "-5"})


def test_resource_label_is_kafkas() -> None:
    assert resource_label(ResourceType.BROKER, "2") == "ConfigResource(type=BROKER, name='2')"


def test_notifications_older_than_the_expiration_are_purged() -> None:
    created = {"config_change_0000000001": 1_000, "config_change_0000000002": 50_000}
    assert obsolete(created, now_ms=61_000, expiration_ms=60_000) == []  # exactly expired: kept
    assert obsolete(created, now_ms=61_001, expiration_ms=60_000) == ["config_change_0000000001"]
    assert obsolete(created, now_ms=200_000, expiration_ms=60_000) == sorted(created)
