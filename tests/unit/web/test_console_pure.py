"""The console's pure parts: record renderings, reset plans, metrics figures and rates,
the users file, CSRF tokens and basic authentication, request parameters."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from client.fetch import ConsumedRecord
from client.offset_reset import ResetError, ResetTarget, plan
from protocol.values import TopicPartition
from web.decoding import record_json, render, shown
from web.errors import InputError, problem_of
from web.metrics import Sample, figures, parse_target, rates
from web.reset import parse_spec, parse_timestamp
from web.safety import Csrf, UsersFileError, basic_user, read_users
from web.views import Params


def test_renderings_of_text_json_and_binary() -> None:
    text = render(b"plain")
    assert text is not None and (text.text, text.json, text.hex) == (
        "plain",
        None,
        "70 6c 61 69 6e",
    )
    assert text.shown("auto") == "plain" and text.shown("json") == text.hex
    obj = render(b'{"a":[1,2]}')
    assert obj is not None and obj.shown("auto") == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert obj.shown("text") == '{"a":[1,2]}'
    binary = render(b"\x00\xff")
    assert binary is not None and binary.text is None and binary.shown("auto") == "00 ff"
    assert binary.shown("text") == "00 ff"  # no mojibake: hex instead
    assert render(None) is None


def test_a_record_as_the_api_gives_it_and_as_a_page_shows_it() -> None:
    record = ConsumedRecord("t", 0, 7, 1000, False, None, b"<b>", [("h", b"v"), ("n", None)])
    out = record_json(record)
    assert out["key"] is None and out["offset"] == 7 and out["timestamp_type"] == "CreateTime"
    assert out["value"] == {"size": 3, "text": "<b>", "json": None, "hex": "3c 62 3e"}
    assert out["headers"][1] == {"name": "n", "value": None}
    assert shown(out["value"], "auto") == "<b>"  # escaping is the template's
    long_binary = render(b"\xff" * 5000)
    assert long_binary is not None
    cut = shown(long_binary.to_json(), "hex")
    assert cut is not None and cut.endswith(" …") and len(cut) < 3 * 4096 + 3


TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
EARLIEST = {TP0: 10, TP1: 0}
LATEST = {TP0: 100, TP1: 50}


@pytest.mark.parametrize(
    ("kind", "value", "expected"),
    [
        ("earliest", "", {TP0: 10, TP1: 0}),
        ("latest", "", {TP0: 100, TP1: 50}),
        ("offset", "60", {TP0: 60, TP1: 50}),  # clamped to the log end
        ("offset", "5", {TP0: 10, TP1: 5}),  # clamped to the log start
        ("shift", "-30", {TP0: 10, TP1: 10}),
        ("shift", "+5", {TP0: 45, TP1: 45}),
    ],
)
def test_a_reset_plan(kind: str, value: str, expected: dict[TopicPartition, int]) -> None:
    spec = parse_spec(kind, value)
    committed = {TP0: 40, TP1: 40}
    assert plan(spec, [TP1, TP0], earliest=EARLIEST, latest=LATEST, committed=committed) == expected


def test_a_reset_by_timestamp_and_its_refusals() -> None:
    spec = ResetTarget("timestamp", 5)
    by_time = {TP0: 20, TP1: -1}  # no record that recent in partition 1: the log end
    new = plan(spec, [TP0, TP1], earliest=EARLIEST, latest=LATEST, committed={}, by_time=by_time)
    assert new == {TP0: 20, TP1: 50}
    with pytest.raises(ResetError, match="no current committed offset"):
        plan(ResetTarget("shift", 1), [TP0], earliest=EARLIEST, latest=LATEST, committed={})
    with pytest.raises(ResetError, match="not one of"):
        parse_spec("sideways", "")
    with pytest.raises(ResetError, match="whole number"):
        parse_spec("offset", "ten")
    assert parse_timestamp("1700000000000") == 1_700_000_000_000
    assert parse_timestamp("2024-01-01T00:00") == 1_704_067_200_000  # UTC without a zone
    assert parse_timestamp("2024-01-01T01:00+01:00") == 1_704_067_200_000
    with pytest.raises(ResetError):
        parse_timestamp("yesterday")


SCRAPE = """\
# TYPE minikafka_topic_bytes_in counter
minikafka_topic_bytes_in_total{topic="a"} 100.0
minikafka_topic_bytes_in_total{topic="b"} 50.0
# TYPE minikafka_requests counter
minikafka_requests_total{api="Produce",listener="PLAINTEXT"} 10.0
minikafka_requests_total{api="Fetch",listener="PLAINTEXT"} 4.0
# TYPE minikafka_request_duration_seconds histogram
minikafka_request_duration_seconds_sum{api="Produce"} 0.5
minikafka_request_duration_seconds_count{api="Produce"} 10.0
# TYPE minikafka_log_dir_logs_bytes gauge
minikafka_log_dir_logs_bytes{log_dir="/d"} 4096.0
"""


def test_figures_and_rates_of_two_scrapes() -> None:
    first = figures(SCRAPE)
    assert first["bytes_in"] == 150 and first["produce_requests"] == 10
    assert first["fetch_requests"] == 4 and first["disk_bytes"] == 4096
    later = dict(
        first, bytes_in=450.0, produce_requests=20.0, produce_seconds=1.5, produce_count=20.0
    )
    out = rates(Sample(0, first), Sample(2000, later))
    assert out["bytes_in"] == 150.0 and out["produce_requests"] == 5.0
    assert out["produce_latency_ms"] == 100.0  # one second over ten requests
    assert out["fetch_latency_ms"] is None  # no Fetch duration scraped
    restarted = dict(first, bytes_in=10.0)
    assert rates(Sample(0, first), Sample(1000, restarted))["bytes_in"] is None


def test_metrics_targets() -> None:
    assert parse_target("2=http://h:9602/metrics") == (2, "http://h:9602/metrics")
    assert parse_target("http://h:9602/metrics") == (None, "http://h:9602/metrics")
    with pytest.raises(ValueError, match="metrics-url"):
        parse_target("h:9602")


def test_users_file_and_basic_authentication(tmp_path: Path) -> None:
    path = tmp_path / "users"
    path.write_text("# operators\nalice:s3cret:with:colons\n\nbob:pw\n")
    users = read_users(path)
    assert users == {"alice": "s3cret:with:colons", "bob": "pw"}

    def header(text: str) -> str:
        return "Basic " + base64.b64encode(text.encode()).decode()

    assert basic_user(header("alice:s3cret:with:colons"), users) == "alice"
    assert basic_user(header("alice:wrong"), users) is None
    assert basic_user(header("carol:pw"), users) is None
    assert basic_user("Basic !!!", users) is None
    assert basic_user(None, users) is None
    path.write_text("nobody\n")
    with pytest.raises(UsersFileError, match=":1: expected name:password"):
        read_users(path)


def test_csrf_tokens_are_per_user_and_per_process() -> None:
    csrf = Csrf(b"k" * 32)
    assert csrf.valid("alice", csrf.token("alice"))
    assert not csrf.valid("bob", csrf.token("alice"))
    assert not csrf.valid("alice", None)
    assert not Csrf().valid("alice", csrf.token("alice"))


def test_parameters_name_the_field_they_refuse() -> None:
    params = Params({"n": "12", "bad": "x", "flag": "on", "configs": "a=1\n\nb = 2"}, {})
    assert params.integer("n", 0, 0, 100) == 12
    assert params.integer("absent", 5, 0, 100) == 5
    assert params.optional_integer("absent", 0, 9) is None
    assert params.flag("flag") and not params.flag("absent")
    assert params.pairs("configs") == {"a": "1", "b": "2"}
    with pytest.raises(InputError, match="bad must be a whole number"):
        params.integer("bad", 0, 0, 1)
    with pytest.raises(InputError, match="n must be between 0 and 10"):
        params.integer("n", 0, 0, 10)
    with pytest.raises(InputError, match="is required"):
        params.required("absent")
    with pytest.raises(InputError, match="KEY=VALUE"):
        Params({"c": "novalue"}, {}).pairs("c")


def test_problems_never_carry_a_traceback() -> None:
    from client.errors import ConnectionLost, KafkaError

    assert problem_of(KafkaError(36, "exists"), "b:1").kafka_error == "TOPIC_ALREADY_EXISTS"
    assert problem_of(KafkaError(3), "b:1").status == 404
    lost = problem_of(ConnectionLost("refused"), "b:1")
    assert lost.status == 503 and "b:1" in lost.detail
    from client.errors import AuthenticationFailed

    refused = problem_of(AuthenticationFailed(58, "bad password"), "b:1")
    assert (refused.status, refused.kafka_error) == (502, "SASL_AUTHENTICATION_FAILED")
    bug = problem_of(RuntimeError("secret internals"), "b:1")
    assert bug.status == 500 and "secret" not in bug.detail


def scrape_text(size: int, start: int, end: int, bytes_in: float) -> str:
    return (
        "# TYPE minikafka_log_size_bytes gauge\n"
        f'minikafka_log_size_bytes{{topic="t",partition="0"}} {size}\n'
        "# TYPE minikafka_log_start_offset gauge\n"
        f'minikafka_log_start_offset{{topic="t",partition="0"}} {start}\n'
        "# TYPE minikafka_log_end_offset gauge\n"
        f'minikafka_log_end_offset{{topic="t",partition="0"}} {end}\n'
        "# TYPE minikafka_topic_bytes_in counter\n"
        f'minikafka_topic_bytes_in_total{{topic="t"}} {bytes_in}\n'
    )


def test_per_topic_figures_over_the_brokers_scraped() -> None:
    from timer.clock import MockClock
    from web.metrics import MetricsSampler, parse

    sampler = MetricsSampler(["0=http://a/metrics", "1=http://b/metrics"], MockClock(), 5, 10)
    leader, follower = sampler.endpoints
    # the leader: 100 bytes appended in the 2 s between its two scrapes
    for time_ms, text in (
        (0, scrape_text(900, 5, 40, 1000)),
        (2000, scrape_text(1000, 5, 45, 1100)),
    ):
        scrape = parse(text)
        leader.samples.append(Sample(time_ms, scrape.totals))
        leader.previous, leader.latest = leader.latest, scrape
    follower.latest = parse(scrape_text(950, 5, 44, 0))  # one scrape: no rate of its own
    follower.samples.append(Sample(2000, follower.latest.totals))
    figures = sampler.topics()["t"]
    assert figures == {"size_bytes": 1950.0, "messages": 40.0, "bytes_in_per_s": 50.0}
    assert sampler.partition_sizes("t") == {0: 1950.0}
    assert sampler.partition_sizes("other") == {}


def test_lag_history_keeps_the_window_and_spaces_its_points() -> None:
    from web.lag_history import LagHistory

    history = LagHistory(window_ms=10_000, min_gap_ms=1_000)
    history.record("g", 0, {"t": 5})
    history.record("g", 500, {"t": 6})  # within the gap: replaces the point before
    history.record("g", 2_000, {"t": 4, "u": 1})
    assert [(p.time_ms, p.total) for p in history.points("g", 2_000)] == [(500, 6), (2_000, 5)]
    history.record("g", 11_000, {"t": 0})  # the point at 500 ms leaves the window
    assert [p.time_ms for p in history.points("g", 11_000)] == [2_000, 11_000]
    assert [p.time_ms for p in history.points("g", 12_500)] == [11_000]
    history.forget("g")
    assert history.points("g", 12_500) == []


def test_the_templates_filters() -> None:
    from web.app import human_size, utc_time

    assert utc_time(1_704_067_200_123) == "2024-01-01 00:00:00.123 UTC"
    assert utc_time(-1) == utc_time(None) == "-"
    assert [human_size(v) for v in (None, 512, 2048, 3 * 1024**2, 5 * 1024**3)] == [
        "-",
        "512 B",
        "2.0 KiB",
        "3.0 MiB",
        "5.0 GiB",
    ]
