"""The README's configuration tables, generated from the key tables.

``python -m broker.config.docs`` prints them; ``tests/unit/docs`` checks that the README
holds exactly this text, so the README changes with the tables. Defaults appear in
Kafka's text form (``null``, ``""`` for the empty string).
"""

from __future__ import annotations

from broker.config.keys import BROKER_CONFIG_DEFS
from config.definitions import TopicConfigDef, format_value
from config.log_keys import TOPIC_KEYS


def _default(value: object) -> str:
    text = format_value(value)
    return "null" if text is None else text or '""'


def _topic_default(d: TopicConfigDef) -> str:
    """The broker key a topic key's default comes from, or its own default."""
    return f"`{d.synonym}`" if d.synonym else f"(none: `{_default(d.default)}`)"


def config_tables() -> str:
    """The broker-key and topic-key tables, each folded in a ``<details>`` block."""
    broker = [
        f"| `{d.name}` | `{_default(d.default)}` | {d.doc} |" for d in BROKER_CONFIG_DEFS.values()
    ]
    topic = [f"| `{d.name}` | {_topic_default(d)} | {d.doc} |" for d in TOPIC_KEYS.values()]
    return "\n".join(
        [
            "<details><summary>Broker keys</summary>",
            "",
            "| key | default | meaning |",
            "| --- | --- | --- |",
            *broker,
            "",
            "</details>",
            "",
            "<details><summary>Topic keys</summary>",
            "",
            "| topic key | default from broker key | meaning |",
            "| --- | --- | --- |",
            *topic,
            "",
            "</details>",
            "",
        ]
    )


if __name__ == "__main__":
    print(config_tables(), end="")
