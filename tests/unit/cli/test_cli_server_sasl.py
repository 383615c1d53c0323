"""`minikafka server` refuses a misconfigured SASL listener before starting anything,
naming the key, as it does any bad configuration."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tools import server


def _run(tmp_path: Path, *overrides: str) -> int:
    config = tmp_path / "server.properties"
    config.write_text(
        "broker.id=0\n"
        f"log.dirs={tmp_path / 'logs'}\n"
        "zookeeper.connect=127.0.0.1:1\n"
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0\n"
    )
    args = argparse.Namespace(config=str(config), override=list(overrides), log_level="WARNING")
    return server.run(args)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ((), "sasl.enabled.mechanisms"),  # Kafka's default, GSSAPI, is not served
        (("sasl.enabled.mechanisms=PLAIN",), "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
        (
            ("sasl.enabled.mechanisms=PLAIN", 'sasl.jaas.config=x.Y required user_a="b"'),
            "sasl.jaas.config",  # not PLAIN's login module
        ),
    ],
)
def test_a_bad_sasl_listener_is_refused_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], overrides: tuple[str, ...], key: str
) -> None:
    assert _run(tmp_path, *overrides) == 1
    assert f"invalid configuration {key}:" in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()  # nothing started
