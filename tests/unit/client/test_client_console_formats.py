"""The console tools' formats: --property parsing, line parsing, record printing."""

from __future__ import annotations

import pytest

from client.console import LineError, LineFormat, RecordFormat, parse_properties
from client.fetch import ConsumedRecord


def test_parse_properties() -> None:
    assert parse_properties(["parse.key=true", "key.separator=="]) == {
        "parse.key": "true",
        "key.separator": "=",
    }
    with pytest.raises(ValueError, match="not KEY=VALUE"):
        parse_properties(["parse.key"])


def test_plain_lines_are_values() -> None:
    fmt = LineFormat.from_properties({})
    assert fmt.parse("hello\tworld", 1) == (None, b"hello\tworld", [])
    assert fmt.parse("", 2) == (None, b"", [])


def test_keys_and_headers() -> None:
    fmt = LineFormat.from_properties(
        {"parse.key": "true", "key.separator": ":", "parse.headers": "true"}
    )
    key, value, headers = fmt.parse("h1:v1,h2:v2\tk:v:with:colons", 1)
    assert key == b"k" and value == b"v:with:colons"
    assert headers == [("h1", b"v1"), ("h2", b"v2")]
    # empty header section
    assert fmt.parse("\tk:v", 2) == (b"k", b"v", [])


def test_missing_separators_are_errors_naming_the_line() -> None:
    fmt = LineFormat.from_properties({"parse.key": "true"})
    with pytest.raises(LineError, match="No key separator found on line number 3"):
        fmt.parse("no-tab-here", 3)
    hdr = LineFormat.from_properties({"parse.headers": "true"})
    with pytest.raises(LineError, match="No headers delimiter"):
        hdr.parse("value only", 1)
    with pytest.raises(LineError, match="No header key separator"):
        hdr.parse("lonely\tvalue", 1)


def test_ignore_error_and_null_marker() -> None:
    fmt = LineFormat.from_properties(
        {
            "parse.key": "true",
            "parse.headers": "true",
            "ignore.error": "true",
            "null.marker": "<null>",
        }
    )
    assert fmt.parse("whole line", 1) == (None, b"whole line", [])
    assert fmt.parse("h\t<null>\t<null>", 2) == (None, None, [("h", None)])
    assert fmt.parse("a:<null>\tk\tv", 3) == (b"k", b"v", [("a", None)])


def test_unknown_properties_and_escaped_separators() -> None:
    with pytest.raises(ValueError, match=r"unknown --property print\.key"):
        LineFormat.from_properties({"print.key": "true"})
    fmt = LineFormat.from_properties({"parse.key": "true", "key.separator": "\\t"})
    assert fmt.key_separator == "\t"


def record(**kw: object) -> ConsumedRecord:
    base: dict[str, object] = dict(
        topic="t", partition=2, offset=41, timestamp=1700000000000, log_append_time=False,
        key=b"k", value=b"v", headers=[("a", b"1"), ("b", None)],
    )  # fmt: skip
    base.update(kw)
    return ConsumedRecord(**base)  # type: ignore[arg-type]


def test_default_output_is_the_value_and_a_newline() -> None:
    assert RecordFormat.from_properties({}).format(record()) == b"v\n"
    assert RecordFormat.from_properties({}).format(record(value=None)) == b"null\n"


def test_every_column_in_kafkas_order() -> None:
    fmt = RecordFormat.from_properties(
        {f"print.{c}": "true" for c in ("timestamp", "partition", "offset", "headers", "key")}
    )
    assert fmt.format(record()) == (
        b"CreateTime:1700000000000\tPartition:2\tOffset:41\ta:1,b:null\tk\tv\n"
    )
    assert fmt.format(record(headers=[], key=None, log_append_time=True)) == (
        b"LogAppendTime:1700000000000\tPartition:2\tOffset:41\tNO_HEADERS\tnull\tv\n"
    )


def test_separators_and_value_off() -> None:
    fmt = RecordFormat.from_properties(
        {"print.key": "true", "print.value": "false", "key.separator": " | ", "line.separator": ";"}
    )
    assert fmt.format(record()) == b"k;"
