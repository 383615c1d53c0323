"""``minikafka configs``: parsing --add-config and Kafka's describe line."""

from __future__ import annotations

import pytest

from broker.config import ConfigSource
from client.admin import ConfigEntry
from tools.command import CommandError
from tools.configs import format_entry, parse_add_config


def test_add_config_keeps_bracketed_lists_whole() -> None:
    assert parse_add_config("retention.ms=1000, cleanup.policy=[compact,delete],a=b=c") == {
        "retention.ms": "1000",
        "cleanup.policy": "compact,delete",
        "a": "b=c",
    }
    assert parse_add_config("") == {}
    with pytest.raises(CommandError, match="key=val"):
        parse_add_config("retention.ms")


def test_describe_line_is_kafkas() -> None:
    entry = ConfigEntry(
        "retention.ms",
        "1000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        False,
        False,
        (
            ("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
            ("log.retention.ms", None, ConfigSource.DEFAULT_CONFIG),
        ),
    )
    assert format_entry(entry) == (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.ms=null}"
    )
