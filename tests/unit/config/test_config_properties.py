"""Java .properties text: separators, comments, continuation lines, escapes, round trips.

The broker reads server.properties with these rules (``BrokerConfig.load``); the cases
below are java.util.Properties' own behaviour, so a file Kafka reads reads the same here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from config.errors import ConfigError
from config.properties import format_properties, parse_properties, read_properties

# --- separators -------------------------------------------------------------------------------


def test_properties_separators_and_whitespace() -> None:
    text = "a=1\nb : 2\nc 3\n  d=  spaced value  \ne\n\tf\t=\tx"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "spaced value  ",
        "e": "",
        "f": "x",
    }


def test_only_the_first_separator_ends_the_key() -> None:
    assert parse_properties("a=b=c\nx:y:z\nurl = PLAINTEXT://h:9092") == {
        "a": "b=c",
        "x": "y:z",
        "url": "PLAINTEXT://h:9092",
    }


def test_a_blank_then_a_separator_is_one_separator() -> None:
    assert parse_properties("k  =  v\nj :: w") == {"k": "v", "j": ": w"}


# --- comments ---------------------------------------------------------------------------------


def test_properties_comments_and_blank_lines_are_skipped() -> None:
    text = "# comment\n! also a comment\n\n   \n  # indented comment\nkey=value # not a comment"
    assert parse_properties(text) == {"key": "value # not a comment"}


def test_a_comment_line_does_not_continue() -> None:
    assert parse_properties("# a comment \\\nk=v") == {"k": "v"}


# --- continuation lines -------------------------------------------------------------------------


def test_properties_line_continuation_drops_leading_whitespace() -> None:
    text = "listeners=PLAINTEXT://a:1,\\\n          PLAINTEXT2://b:2\nnext=1"
    assert parse_properties(text)["listeners"] == "PLAINTEXT://a:1,PLAINTEXT2://b:2"
    assert parse_properties(text)["next"] == "1"


def test_properties_even_backslashes_do_not_continue() -> None:
    text = "path=C:\\\\dir\\\\\nother=2"
    assert parse_properties(text) == {"path": "C:\\dir\\", "other": "2"}


def test_properties_comment_marker_inside_continuation_is_text() -> None:
    assert parse_properties("k=a\\\n  # b") == {"k": "a# b"}


def test_a_continuation_at_the_end_of_the_text_ends_the_value() -> None:
    assert parse_properties("k=a,\\\n") == {"k": "a,"}


def test_a_key_may_continue_too() -> None:
    assert parse_properties("log.\\\n  dirs=/x") == {"log.dirs": "/x"}


# --- escapes --------------------------------------------------------------------------------------


def test_properties_escapes_in_keys_and_values() -> None:
    text = "key\\=with\\:seps=tab\\there\\nnl \\u0041\\q"
    assert parse_properties(text) == {"key=with:seps": "tab\there\nnl Aq"}


def test_an_escaped_blank_belongs_to_the_key() -> None:
    assert parse_properties("a\\ b=c\nv=\\ lead") == {"a b": "c", "v": " lead"}


def test_properties_crlf_and_last_key_wins() -> None:
    assert parse_properties("a=1\r\nb=2\ra=3\n") == {"a": "3", "b": "2"}


def test_properties_malformed_unicode_escape_is_refused() -> None:
    with pytest.raises(ConfigError, match="uxxxx"):
        parse_properties("a=\\u12")


def test_unicode_escapes_combine_surrogate_pairs() -> None:
    assert parse_properties("k=\\ud83d\\ude00 \\u00e9") == {"k": "\U0001f600 \u00e9"}


# --- files and writing ----------------------------------------------------------------------------


def test_a_file_is_utf8_else_latin1(tmp_path: Path) -> None:
    utf8 = tmp_path / "utf8.properties"
    utf8.write_bytes("rack=ü\n".encode())
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes("rack=ü\n".encode("latin-1"))
    assert read_properties(utf8) == read_properties(latin1) == {"rack": "ü"}


def test_writing_gives_one_line_per_key_without_a_timestamp() -> None:
    assert format_properties({"b": "1", "a": "x=y"}) == "b=1\na=x\\=y\n"


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=12), st.text(max_size=20), max_size=6))
def test_format_then_parse_round_trips(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props)) == props
