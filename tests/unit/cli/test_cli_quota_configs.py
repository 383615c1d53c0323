"""``minikafka configs`` for client quotas, the parts without a broker: how repeated
--entity-type / --entity-name / --entity-default pair up, Kafka's describe lines, and
the values refused before anything is sent."""

from __future__ import annotations

import pytest

from tools.command import CommandError
from tools.main import build_parser
from tools.quota_configs import describe_line, parse_values, quota_entity


def parse(*argv: str) -> object:
    return build_parser().parse_args(["configs", "--bootstrap-server", "h:1", *argv])


def test_entity_types_and_names_pair_in_order() -> None:
    args = parse(
        "--describe",
        "--entity-type", "users", "--entity-default",
        "--entity-type", "clients", "--entity-name", "c1",
    )  # fmt: skip
    assert args.entity_types == ["users", "clients"]  # type: ignore[attr-defined]
    assert args.entity_names == [None, "c1"]  # type: ignore[attr-defined]
    # the first pair stays where the topics and brokers paths read it
    assert args.entity_type == "users" and args.entity_default  # type: ignore[attr-defined]
    assert quota_entity(["users", "clients"], [None, "c1"]) == {"user": None, "client-id": "c1"}


def test_a_single_topic_entity_reads_as_before() -> None:
    args = parse("--describe", "--entity-type", "topics", "--entity-name", "t")
    assert args.entity_type == "topics" and args.entity_name == "t"  # type: ignore[attr-defined]
    assert not args.entity_default  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("types", "names", "message"),
    [
        (["clients"], [], "needs its --entity-name"),
        (["clients", "clients"], ["a", "b"], "given twice"),
        (["topics", "clients"], ["t", "c"], "cannot be combined"),
    ],
)
def test_bad_entities_are_refused(types: list[str], names: list[str | None], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        quota_entity(types, names)


def test_describe_lines_are_kafkas() -> None:
    assert describe_line([("client-id", "c1")], {"producer_byte_rate": 1024.0}) == (
        "Quota configs for client-id 'c1' are producer_byte_rate=1024.0"
    )
    assert describe_line(
        [("client-id", None), ("user", None)],
        {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0},
    ) == (
        "Quota configs for the default user-principal, the default client-id are "
        "consumer_byte_rate=2.0, producer_byte_rate=1.0"
    )


def test_a_value_that_is_not_a_number_is_refused_by_the_tool() -> None:
    assert parse_values({"producer_byte_rate": "1024"}) == {"producer_byte_rate": 1024.0}
    with pytest.raises(CommandError, match="Cannot parse quota configuration value"):
        parse_values({"producer_byte_rate": "fast"})
