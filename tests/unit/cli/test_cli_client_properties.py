"""Every client command takes Kafka's client properties under Kafka's flag names, and a
file with an unusable key stops the command, naming the key, before it connects."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tools import console_producer, perf, topics
from tools.command import client_config, client_properties
from tools.console_producer import ProducerSettings
from tools.main import build_parser

ADMIN_COMMANDS = [
    ["topics", "--list"],
    ["configs", "--describe", "--entity-type", "topics", "--entity-name", "t"],
    ["consumer-groups", "--list"],
    ["reassign-partitions", "--list"],
    ["leader-election", "--election-type", "preferred", "--all-topic-partitions"],
    ["delete-records", "--offset-json-file", "f.json"],
    ["log-dirs", "--describe"],
]


@pytest.mark.parametrize("command", ADMIN_COMMANDS, ids=lambda c: c[0])
def test_admin_commands_take_command_config(command: list[str]) -> None:
    name, *rest = command
    argv = [name, "--bootstrap-server", "h:1", "--command-config", "c.properties", *rest]
    assert build_parser().parse_args(argv).command_config == "c.properties"


def test_api_versions_takes_command_config() -> None:
    args = build_parser().parse_args(["api-versions", "--command-config", "c.properties"])
    assert args.command_config == "c.properties"


B = ["--bootstrap-server", "h:1"]


@pytest.mark.parametrize(
    ("argv", "attr"),
    [
        (["console-producer", *B, "--topic", "t", "--producer.config", "p"], "producer_config"),
        (["console-consumer", *B, "--topic", "t", "--consumer.config", "p"], "consumer_config"),
        (["perf", "produce", *B, "--topic", "t", "--num-records", "1", "--producer.config", "p"],
         "producer_config"),
        (["perf", "consume", *B, "--topic", "t", "--messages", "1", "--consumer.config", "p"],
         "consumer_config"),
    ],
)  # fmt: skip
def test_console_and_perf_commands_take_role_config_files(argv: list[str], attr: str) -> None:
    assert getattr(build_parser().parse_args(argv), attr) == "p"


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_single_properties_win_over_the_file(tmp_path: Path) -> None:
    file = write(
        tmp_path / "p.properties",
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=from-file\nsasl.password=pw\nacks=1\n",
    )
    args = build_parser().parse_args(
        [
            "console-producer",
            "--bootstrap-server",
            "h:1",
            "--topic",
            "t",
            "--producer.config",
            file,
            "--producer-property",
            "sasl.username=from-flag",
        ]
    )
    props = client_properties(args, "producer")
    assert props["sasl.username"] == "from-flag" and props["acks"] == "1"
    config = client_config(args, "producer", client_id="x")
    assert config.client_id == "x" and config.security.sasl is not None
    assert config.security.sasl.username == "from-flag"
    settings = ProducerSettings.from_args(args)
    assert settings.acks == 1  # the file's producer keys apply too
    assert settings.warnings == ()  # security keys are known keys


def test_a_refused_key_stops_an_admin_command_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = write(tmp_path / "c.properties", "security.protocol=SSL\nssl.truststore.type=JKS\n"
                 "ssl.truststore.location=/x.jks\n")  # fmt: skip
    args = build_parser().parse_args(
        ["topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", file, "--list"]
    )
    assert topics.run(args) == 1
    err = capsys.readouterr().err
    assert "ssl.truststore.type" in err and "PEM" in err


def test_a_missing_file_is_a_clear_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope.properties")
    args = build_parser().parse_args(
        ["console-producer", "--bootstrap-server", "127.0.0.1:1", "--topic", "t",
         "--producer.config", missing]
    )  # fmt: skip
    assert console_producer.run(args) == 1
    assert f"cannot read {missing}" in capsys.readouterr().err


def test_perf_takes_security_keys_from_producer_props(tmp_path: Path) -> None:
    args = argparse.Namespace(
        producer_config=None,
        producer_props=["acks=all", "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
                        "sasl.username=u", "sasl.password=p"],
    )  # fmt: skip
    config = perf.perf_client_config(args, "producer")
    assert config.security.security_protocol == "SASL_PLAINTEXT"
    assert config.security.sasl is not None and config.security.sasl.username == "u"
