"""``minikafka configs --entity-type users``: the SCRAM values of --add-config, Kafka's
describe line, the flags' rules, and the request the admin client builds (the password
salted here, never sent)."""

from __future__ import annotations

import argparse

import pytest

from client.scram_admin import ScramCredentialInfo, ScramUpsertion, _upsertion
from protocol.sasl.scram import SCRAM_SHA_512
from tools.command import CommandError
from tools.configs import configure, main, parse_add_config, run
from tools.scram_configs import _changes, describe_line, mask_passwords, parse_scram_value


def test_scram_values_take_iterations_and_a_password() -> None:
    added = parse_add_config(
        "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=p=q]"
    )
    assert parse_scram_value("SCRAM-SHA-256", added["SCRAM-SHA-256"]) == ("alice-secret", 8192)
    # iterations default to Kafka's tool's 4096; a password may contain '='
    assert parse_scram_value("SCRAM-SHA-512", added["SCRAM-SHA-512"]) == ("p=q", 4096)


@pytest.mark.parametrize(
    ("mechanism", "value", "message"),
    [
        ("SCRAM-SHA-1", "password=x", "only SCRAM credentials"),
        ("producer_byte_rate", "1024", "only SCRAM credentials"),
        ("SCRAM-SHA-256", "iterations=4096", "a password is required"),
        ("SCRAM-SHA-256", "iterations=many,password=x", "not a number"),
        ("SCRAM-SHA-256", "salt=abc,password=x", "expected [iterations=N,password=P]"),
    ],
)
def test_bad_scram_values_are_refused(mechanism: str, value: str, message: str) -> None:
    with pytest.raises(CommandError, match=message.replace("[", r"\[")):
        parse_scram_value(mechanism, value)


def test_a_bad_value_does_not_echo_the_password() -> None:
    with pytest.raises(CommandError) as refused:
        parse_scram_value("SCRAM-SHA-256", "iterations=x,password=hunter2")
    assert "hunter2" not in str(refused.value)


def test_describe_line_is_kafkas() -> None:
    infos = [ScramCredentialInfo("SCRAM-SHA-256", 8192), ScramCredentialInfo("SCRAM-SHA-512", 4096)]
    assert describe_line("alice", infos) == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )


def test_alter_needs_a_user_and_a_change() -> None:
    with pytest.raises(CommandError, match="--entity-name"):
        _changes("", {"SCRAM-SHA-256": "password=x"}, [])
    with pytest.raises(CommandError, match="--add-config or --delete-config"):
        _changes("alice", {}, [])
    with pytest.raises(CommandError, match="to delete"):
        _changes("alice", {}, ["PLAIN"])
    upserts, deletions = _changes("alice", {"SCRAM-SHA-256": "password=x"}, ["SCRAM-SHA-512"])
    assert [(u.user, u.mechanism, u.iterations) for u in upserts] == [
        ("alice", "SCRAM-SHA-256", 4096)
    ]
    assert [(d.user, d.mechanism) for d in deletions] == [("alice", "SCRAM-SHA-512")]
    assert "x" not in repr(upserts[0]).replace("alice", "")  # the password is not in reprs


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure(parser)
    return parser.parse_args(argv)


def test_bootstrap_server_and_zookeeper_exclude_each_other() -> None:
    with pytest.raises(SystemExit):
        parse("--bootstrap-server", "h:1", "--zookeeper", "h:2", "--entity-type", "users",
              "--describe")  # fmt: skip
    with pytest.raises(SystemExit):
        parse("--entity-type", "users", "--describe")
    args = parse("--zookeeper", "h:2/k", "--entity-type", "users", "--describe")
    assert args.zookeeper == "h:2/k" and args.entity_name is None


async def test_zookeeper_serves_users_only() -> None:
    args = parse("--zookeeper", "127.0.0.1:1", "--entity-type", "topics", "--entity-name", "t",
                 "--describe")  # fmt: skip
    with pytest.raises(CommandError, match="only supported for users"):
        await main(args)


def test_the_client_sends_a_salt_and_salted_password_not_the_password() -> None:
    upsertion = _upsertion(ScramUpsertion("alice", "SCRAM-SHA-512", "alice-secret", 5000))
    assert upsertion.mechanism == SCRAM_SHA_512.wire_type
    assert upsertion.iterations == 5000
    assert len(upsertion.salt) == 32
    assert upsertion.salted_password == SCRAM_SHA_512.salted_password(
        "alice-secret", upsertion.salt, 5000
    )
    assert b"alice-secret" not in upsertion.salted_password
    other = _upsertion(ScramUpsertion("alice", "SCRAM-SHA-512", "alice-secret", 5000))
    assert other.salt != upsertion.salt  # a fresh salt each time
    # an unknown mechanism goes as id 0, for the broker to refuse
    assert _upsertion(ScramUpsertion("alice", "SCRAM-SHA-1", "x")).mechanism == 0


def test_error_reports_hide_passwords() -> None:
    line = "--add-config SCRAM-SHA-256=[iterations=8192,password=s3cr=t],SCRAM-SHA-512=[password=x]"
    assert mask_passwords(line) == (
        "--add-config SCRAM-SHA-256=[iterations=8192,password=[hidden]],"
        "SCRAM-SHA-512=[password=[hidden]]"
    )


def test_the_error_report_echoes_the_command_without_passwords(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--zookeeper", "127.0.0.1:1", "--entity-type", "topics", "--entity-name", "t",
            "--alter", "--add-config", "SCRAM-SHA-256=[password=hunter2]"]  # fmt: skip
    assert run(parse(*argv), argv) == 1
    err = capsys.readouterr().err
    assert "Error while executing config command with args" in err
    assert "password=[hidden]" in err and "hunter2" not in err
