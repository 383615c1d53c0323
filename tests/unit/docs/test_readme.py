"""The README stays true: it documents every configuration key and every subcommand."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.config import BROKER_CONFIG_DEFS
from broker.config.docs import config_tables
from config.log_keys import TOPIC_KEYS as TOPIC_CONFIG_DEFS
from tools.main import build_parser

README = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("key", sorted(BROKER_CONFIG_DEFS))
def test_every_broker_key_is_documented(key: str) -> None:
    assert f"| `{key}` |" in README


@pytest.mark.parametrize("key", sorted(TOPIC_CONFIG_DEFS))
def test_every_topic_key_is_documented(key: str) -> None:
    definition = TOPIC_CONFIG_DEFS[key]
    if definition.synonym is None:  # no broker key supplies it: its own default is shown
        shown = definition.default or '""'
        assert f"| `{key}` | (none: `{shown}`) |" in README
    else:
        assert f"| `{key}` | `{definition.synonym}` |" in README


def test_the_configuration_tables_are_the_generated_ones() -> None:
    assert config_tables() in README, "run python -m broker.config.docs and paste its output"


def test_every_subcommand_is_documented() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    commands = sorted(sub.choices)  # type: ignore[arg-type]
    assert commands, "the parser has no subcommands"
    missing = [c for c in commands if f"`minikafka {c}" not in README]
    assert missing == []


def test_the_two_setup_commands_are_documented() -> None:
    assert "make run" in README and "make test" in README
