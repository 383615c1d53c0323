"""The README stays true: it documents every configuration key and every subcommand."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from broker.config import BROKER_CONFIG_DEFS
from broker.config.docs import config_tables
from config.log_keys import TOPIC_KEYS as TOPIC_CONFIG_DEFS
from tools.main import SUBCOMMANDS, build_parser

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


def _options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of a parser and of its subparsers (perf produce, cluster up,
    transactions describe, ...)."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= _options(child)
    return found


def _subcommand_options(name: str) -> set[str]:
    parser = build_parser(only=name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return _options(sub.choices[name])


def _command_rows() -> list[tuple[str, str]]:
    """(subcommand, row text) of each row of the README's table of commands."""
    section = README.split("\n## Commands\n", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `minikafka ([a-z-]+)[^\n]*", section, flags=re.MULTILINE)
    lines = [ln for ln in section.splitlines() if ln.startswith("| `minikafka ")]
    assert len(rows) == len(lines) and rows, "the table of commands was not found"
    return list(zip(rows, lines, strict=True))


@pytest.mark.parametrize(("command", "row"), _command_rows(), ids=lambda v: v[:30])
def test_every_flag_the_commands_table_names_exists(command: str, row: str) -> None:
    """A flag in a command's row is one of its flags, or one of another command that the
    row names in backquotes (the console's row tells of `cluster up`'s --console-port)."""
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9.-]*[a-z0-9]", row))
    assert named, f"the row of minikafka {command} names no flag"
    known = _subcommand_options(command)
    for other in set(re.findall(r"`(?:minikafka )?([a-z-]+)[ `]", row)) & set(SUBCOMMANDS):
        known |= _subcommand_options(other)
    assert sorted(named - known) == []


def test_every_command_the_client_properties_table_names_takes_the_flag() -> None:
    section = README.split("### Client properties", 1)[1].split("\nThe keys,", 1)[0]
    checked = 0
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`--"):
            continue
        flags = re.findall(r"`(--[a-z][a-z0-9.-]*)", cells[0])
        commands = re.sub(r"\([^)]*\)", "", cells[1]).replace(";", ",")
        for command in (c.strip() for c in commands.split(",") if c.strip()):
            options = _subcommand_options(command.split()[0])
            for flag in flags:
                assert flag in options, f"minikafka {command} has no {flag}"
                checked += 1
    assert checked >= 15, "the client properties table was not found"
