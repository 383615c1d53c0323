"""Kafka's inline JAAS syntax (broker.security.jaas) and a listener's SASL settings."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.security.jaas import PLAIN_LOGIN_MODULE, JaasError, parse_jaas_config
from broker.security.sasl_listener import listener_settings, sasl_authenticators
from config.errors import ConfigError
from tests.unit.broker.memory_scram_credentials import MemoryScramCredentials

PLAIN_JAAS = (
    f"{PLAIN_LOGIN_MODULE} required\n"
    '  username="admin" password="admin-secret"\n'
    '  user_admin="admin-secret" user_alice="alice-secret";'
)


def test_parses_kafkas_plain_example() -> None:
    entry = parse_jaas_config(PLAIN_JAAS)
    assert entry.login_module == PLAIN_LOGIN_MODULE
    assert entry.flag == "required"
    assert entry.options["username"] == "admin"
    assert entry.plain_users() == {"admin": "admin-secret", "alice": "alice-secret"}
    assert "secret" not in repr(entry)  # options may hold passwords


def test_quotes_escapes_comments_and_bare_words() -> None:
    entry = parse_jaas_config(
        'a.b.C optional /* note */ user_x="p\\"q\\\\r;s" // tail\nuser_y=bare-word_1.$ ;'
    )
    assert entry.flag == "optional"
    assert entry.plain_users() == {"x": 'p"q\\r;s', "y": "bare-word_1.$"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no login module"),
        ('a.B required user_a="x"', "end of the text"),  # no semicolon
        ("a.B mandatory;", "control flag"),
        ('a.B required user_a="x', "unterminated quoted"),
        ("a.B required user_a;", "expected ="),
        ("a.B required user_a=;", "expected word or string"),
        ("a.B required; c.D required;", "only one login module"),
        ("a.B required /* x", "unterminated comment"),
        ("a.B required user_a=x!;", "unexpected character"),
    ],
)
def test_malformed_text_is_refused_with_a_position(text: str, message: str) -> None:
    with pytest.raises(JaasError, match=message):
        parse_jaas_config(text)


def _config(**extra: str) -> BrokerConfig:
    base = {
        "broker.id": "0",
        "log.dirs": "/tmp/unused-sasl-test",
        "zookeeper.connect": "127.0.0.1:1",
        "listeners": "SASL_PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093",
        "inter.broker.listener.name": "PLAINTEXT",
    }
    return BrokerConfig.from_properties({**base, **extra})


def test_listener_settings_read_the_prefixed_keys() -> None:
    config = _config(
        **{
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "GSSAPI,PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.connections.max.reauth.ms": "60000",
            "connection.failed.authentication.delay.ms": "250",
            "sasl.server.max.receive.size": "4096",
        }
    )
    settings = listener_settings(config.listener_config("SASL_PLAINTEXT"), MemoryScramCredentials())
    assert settings.mechanisms == ["PLAIN", "SCRAM-SHA-512"]  # GSSAPI ignored
    assert settings.reauth_ms == 60000
    assert settings.failure_delay_s == 0.25
    assert settings.max_receive_size == 4096


def test_only_sasl_listeners_get_an_authenticator() -> None:
    config = _config(
        **{
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        }
    )
    listeners = {e.listener_name: config.listener_config(e.listener_name) for e in config.listeners}
    from broker.metrics import BrokerMetrics

    factories = sasl_authenticators(listeners, None, BrokerMetrics())
    assert set(factories) == {"SASL_PLAINTEXT"}


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({}, "sasl.enabled.mechanisms"),  # Kafka's default: GSSAPI only
        (
            {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "OAUTHBEARER"},
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
        ),
        (
            {"sasl.enabled.mechanisms": "PLAIN"},
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": "x.Y required user_a=",
            },
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ),
        ({"sasl.enabled.mechanisms": "SCRAM-SHA-256"}, "sasl.enabled.mechanisms"),  # no store
    ],
)
def test_a_misconfigured_sasl_listener_is_refused_naming_the_key(
    extra: dict[str, str], key: str
) -> None:
    config = _config(**extra)
    with pytest.raises(ConfigError) as refused:
        listener_settings(config.listener_config("SASL_PLAINTEXT"), None)
    assert refused.value.key == key
