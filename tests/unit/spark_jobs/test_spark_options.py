"""Spark's Kafka source options and the offset planning built on them (pure)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from protocol.values import TopicPartition
from spark_jobs.options import (
    EARLIEST,
    LATEST,
    OffsetSpec,
    OptionError,
    offsets_json,
    parse_offsets_json,
    parse_options,
)
from spark_jobs.planning import Bounds, DataLoss, OffsetRange, cut, limit, plan, resolve, split
from tools.main import build_parser
from tools.spark import source_options

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
PATH = {"path": "/logs"}


def no_lookup(tp: TopicPartition, ts: int) -> int | None:
    raise AssertionError("no timestamp was asked for")


def test_subscribe_pattern_and_assign_select_partitions() -> None:
    available = [A0, A1, B0, TopicPartition("ab", 0)]
    for options, chosen in [
        ({"subscribe": "a, b"}, [A0, A1, B0]),
        ({"subscribePattern": "a|b"}, [A0, A1, B0]),  # whole names only: not "ab"
        ({"assign": '{"a": [1], "c": [0]}'}, [A1]),
    ]:
        parsed = parse_options({**PATH, **options}, streaming=False)
        assert parsed.subscription.select(available) == chosen


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"subscribe": "a", "assign": '{"a": [0]}'},
        {"subscribe": "a", "startingOffsets": "{bad"},
        {"subscribe": "a", "startingOffsets": '{"a": {"0": -3}}'},
        {"subscribe": "a", "minPartitions": "0"},
        {"subscribe": "a", "failOnDataLoss": "maybe"},
        {"subscribePattern": "("},
    ],
)
def test_bad_options_are_refused_with_a_reason(options: dict[str, str]) -> None:
    with pytest.raises(OptionError):
        parse_options({**PATH, **options}, streaming=False)


def test_exactly_one_way_in() -> None:
    with pytest.raises(OptionError):
        parse_options({"subscribe": "a"}, streaming=False)
    with pytest.raises(OptionError):
        parse_options({**PATH, "kafka.bootstrap.servers": "h:1", "subscribe": "a"}, streaming=False)


def test_offsets_defaults_and_names_are_spark_s() -> None:
    batch = parse_options({**PATH, "SUBSCRIBE": "a", "includeheaders": "TRUE"}, streaming=False)
    assert (batch.starting.default, batch.ending.default) == (EARLIEST, LATEST)
    assert batch.include_headers and batch.fail_on_data_loss
    stream = parse_options({**PATH, "subscribe": "a"}, streaming=True)
    assert stream.starting.default == LATEST
    json_start = parse_options(
        {**PATH, "subscribe": "a", "startingOffsets": '{"a": {"0": 5, "1": -2}}'},
        streaming=False,
    )
    assert json_start.starting.offsets == {A0: 5, A1: EARLIEST}


def test_kafka_json_offsets_round_trip() -> None:
    offsets = {A1: 7, A0: 3, B0: 0}
    assert offsets_json(offsets) == '{"a":{"0":3,"1":7},"b":{"0":0}}'
    assert parse_offsets_json(offsets_json(offsets)) == offsets


def test_resolve_earliest_latest_explicit_and_timestamps() -> None:
    b = Bounds(10, 50)
    assert resolve(OffsetSpec(default=EARLIEST), A0, b, no_lookup) == 10
    assert resolve(OffsetSpec(default=LATEST), A0, b, no_lookup) == 50
    assert resolve(OffsetSpec(offsets={A0: 20}), A0, b, no_lookup) == 20
    assert resolve(OffsetSpec(offsets={A0: 99}), A0, b, no_lookup) == 50
    with pytest.raises(DataLoss):
        resolve(OffsetSpec(offsets={A0: 3}), A0, b, no_lookup)
    assert resolve(OffsetSpec(offsets={A0: 3}), A0, b, no_lookup, fail_on_data_loss=False) == 10
    found = {(A0, 1000): 17}

    def lookup(tp: TopicPartition, ts: int) -> int | None:
        return found.get((tp, ts))

    assert resolve(OffsetSpec(timestamp=1000), A0, b, lookup) == 17
    assert resolve(OffsetSpec(timestamps={A0: 1000}), A0, b, lookup) == 17
    assert resolve(OffsetSpec(timestamp=2000), A0, b, lookup, timestamp_strategy="latest") == 50
    with pytest.raises(OptionError):
        resolve(OffsetSpec(timestamp=2000), A0, b, lookup)


def test_plan_drops_empty_ranges() -> None:
    bounds = {A0: Bounds(0, 10), A1: Bounds(5, 5)}
    ranges = plan([A0, A1], bounds, OffsetSpec(offsets={A0: 4}), OffsetSpec(LATEST), no_lookup)
    assert ranges == [OffsetRange(A0, 4, 10)]


def test_split_gives_large_ranges_proportionally_more_pieces() -> None:
    ranges = [OffsetRange(A0, 0, 90), OffsetRange(A1, 0, 10)]
    assert split(ranges, None) == ranges
    assert split(ranges, 2) == ranges
    pieces = split(ranges, 10)
    assert [p for p in pieces if p.tp == A1] == [OffsetRange(A1, 0, 10)]
    a0 = [p for p in pieces if p.tp == A0]
    assert len(a0) == 9 and a0[0].start == 0 and a0[-1].end == 90
    assert all(x.end == y.start for x, y in itertools.pairwise(a0))


def test_limit_shares_the_cap_in_proportion_and_exactly() -> None:
    start = {A0: 0, A1: 100}
    latest = {A0: 300, A1: 200, B0: 10}  # B0 is new: read from its start
    assert limit(start, latest, None) == latest
    capped = limit({**start, B0: 0}, latest, 41)
    assert sum(capped[tp] - s for tp, s in {**start, B0: 0}.items()) == 41
    assert capped[A0] > capped[A1] - 100
    assert limit(start, {A0: 5, A1: 100}, 1000) == {A0: 5, A1: 100}


def test_cut_at_the_points_inside_each_range() -> None:
    ranges = [OffsetRange(A0, 5, 50), OffsetRange(A1, 0, 10)]
    assert cut(ranges, {A0: [0, 5, 20, 40, 50, 60]}) == [
        OffsetRange(A0, 5, 20),
        OffsetRange(A0, 20, 40),
        OffsetRange(A0, 40, 50),
        OffsetRange(A1, 0, 10),
    ]


def test_kafka_prefixed_options_are_the_clients_properties(tmp_path: Path) -> None:
    """As Spark hands ``kafka.*`` options to its consumer: every one but the bootstrap
    servers, without the prefix; ``minikafka spark --command-config`` fills them."""
    parsed = parse_options(
        {
            "kafka.bootstrap.servers": "h:1",
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": 'x required username="u" password="P";',
            "subscribe": "a",
        },
        streaming=False,
    )
    assert parsed.client_properties == (
        ("sasl.jaas.config", 'x required username="u" password="P";'),
        ("sasl.mechanism", "PLAIN"),
        ("security.protocol", "SASL_PLAINTEXT"),
    )
    assert parse_options({**PATH, "subscribe": "a"}, streaming=False).client_properties == ()
    props = tmp_path / "client.properties"
    props.write_text("bootstrap.servers=ignored:1\nsecurity.protocol=SSL\n")
    argv = ["spark", "consumer-lag", "--bootstrap-server", "h:1", "--command-config", str(props)]
    options = source_options(build_parser().parse_args(argv))
    assert options["kafka.bootstrap.servers"] == "h:1"
    assert options["kafka.security.protocol"] == "SSL"
