"""The console tools' text formats (pure): reading records from lines, writing them out.

Properties follow Kafka's console tools (``--property key=value``).

Reading a line (console-producer), with ``parse.headers`` and ``parse.key`` set::

    h1:v1,h2:v2<TAB>key<TAB>value
    ^ headers.separator "," between headers, headers.key.separator ":" inside one,
      headers.delimiter (TAB) after them; key.separator (TAB) between key and value

A header without its key separator has a null value (with ``ignore.error``); a field
equal to ``null.marker`` (when set) is null. A line lacking a required separator is an
error naming the line number, unless ``ignore.error=true``: then the whole remainder is
the value.

Writing a record (console-consumer): the enabled columns in this order, joined by
``key.separator`` (TAB), ended by ``line.separator`` (newline)::

    CreateTime:<ms>  Partition:<p>  Offset:<o>  h1:v1,h2:v2  key  value
    (print.timestamp) (print.partition) (print.offset) (print.headers) (print.key) (print.value)

Missing keys and values print as ``null.literal`` ("null"), no headers as ``NO_HEADERS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from client.fetch import ConsumedRecord
from protocol.records.record import Header

_TRUE = {"true", "yes", "1"}


def parse_properties(items: Iterable[str], option: str = "--property") -> dict[str, str]:
    """``["k=v", ...]`` to a dict; ValueError naming the item without ``=``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} {item!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    return default if value is None else value.strip().lower() in _TRUE


def _unescape(text: str) -> str:
    """Separators given on a command line may spell a tab or newline as \\t or \\n."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


class LineError(ValueError):
    """A line that does not have the shape the properties ask for."""


@dataclass(frozen=True)
class LineFormat:
    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    ignore_error: bool = False
    null_marker: str | None = None

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> LineFormat:
        known = {
            "parse.key", "key.separator", "parse.headers", "headers.delimiter",
            "headers.separator", "headers.key.separator", "ignore.error", "null.marker",
        }  # fmt: skip
        unknown = sorted(set(props) - known)
        if unknown:
            raise ValueError(f"unknown --property {', '.join(unknown)}")
        fmt = LineFormat(
            parse_key=_flag(props, "parse.key", False),
            key_separator=_unescape(props.get("key.separator", "\t")),
            parse_headers=_flag(props, "parse.headers", False),
            headers_delimiter=_unescape(props.get("headers.delimiter", "\t")),
            headers_separator=_unescape(props.get("headers.separator", ",")),
            headers_key_separator=_unescape(props.get("headers.key.separator", ":")),
            ignore_error=_flag(props, "ignore.error", False),
            null_marker=props.get("null.marker") or None,
        )
        for name in ("key_separator", "headers_delimiter", "headers_separator",
                     "headers_key_separator"):  # fmt: skip
            if not getattr(fmt, name):
                raise ValueError(f"{name.replace('_', '.')} must not be empty")
        return fmt

    def _nullable(self, text: str) -> bytes | None:
        if self.null_marker is not None and text == self.null_marker:
            return None
        return text.encode("utf-8", "surrogateescape")

    def parse(self, line: str, line_number: int) -> tuple[bytes | None, bytes | None, list[Header]]:
        """(key, value, headers) of one line (without its line ending)."""
        rest = line
        headers: list[Header] = []
        if self.parse_headers:
            head, sep, tail = rest.partition(self.headers_delimiter)
            if sep:
                headers = self._headers(head, line_number)
                rest = tail
            elif not self.ignore_error:
                raise LineError(
                    f"No headers delimiter found on line number {line_number}: {line!r}"
                )
        key: bytes | None = None
        if self.parse_key:
            k, sep, v = rest.partition(self.key_separator)
            if sep:
                key = self._nullable(k)
                rest = v
            elif not self.ignore_error:
                raise LineError(f"No key separator found on line number {line_number}: {line!r}")
        return key, self._nullable(rest), headers

    def _headers(self, text: str, line_number: int) -> list[Header]:
        out: list[Header] = []
        if not text:
            return out
        for pair in text.split(self.headers_separator):
            name, sep, value = pair.partition(self.headers_key_separator)
            if self.null_marker is not None and name == self.null_marker:
                raise LineError(
                    f"Header key cannot match null marker {self.null_marker!r} "
                    f"on line number {line_number}"
                )
            if not sep:
                if not self.ignore_error:
                    raise LineError(
                        f"No header key separator found in pair {pair!r} "
                        f"on line number {line_number}"
                    )
                out.append((name, None))
                continue
            out.append((name, self._nullable(value)))
        return out


@dataclass(frozen=True)
class RecordFormat:
    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = b"null"

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> RecordFormat:
        known = {
            "print.timestamp", "print.partition", "print.offset", "print.headers",
            "print.key", "print.value", "key.separator", "line.separator",
            "headers.separator", "headers.key.separator", "null.literal",
            "key.deserializer", "value.deserializer", "headers.deserializer",
        }  # fmt: skip
        unknown = sorted(set(props) - known)
        if unknown:
            raise ValueError(f"unknown --property {', '.join(unknown)}")

        def sep(key: str, default: str) -> bytes:
            return _unescape(props.get(key, default)).encode("utf-8")

        return RecordFormat(
            print_timestamp=_flag(props, "print.timestamp", False),
            print_partition=_flag(props, "print.partition", False),
            print_offset=_flag(props, "print.offset", False),
            print_headers=_flag(props, "print.headers", False),
            print_key=_flag(props, "print.key", False),
            print_value=_flag(props, "print.value", True),
            key_separator=sep("key.separator", "\t"),
            line_separator=sep("line.separator", "\n"),
            headers_separator=sep("headers.separator", ","),
            headers_key_separator=sep("headers.key.separator", ":"),
            null_literal=sep("null.literal", "null"),
        )

    def format(self, record: ConsumedRecord) -> bytes:
        columns: list[bytes] = []
        if self.print_timestamp:
            kind = "LogAppendTime" if record.log_append_time else "CreateTime"
            columns.append(f"{kind}:{record.timestamp}".encode())
        if self.print_partition:
            columns.append(b"Partition:%d" % record.partition)
        if self.print_offset:
            columns.append(b"Offset:%d" % record.offset)
        if self.print_headers:
            if record.headers:
                columns.append(
                    self.headers_separator.join(
                        name.encode("utf-8")
                        + self.headers_key_separator
                        + (self.null_literal if value is None else value)
                        for name, value in record.headers
                    )
                )
            else:
                columns.append(b"NO_HEADERS")
        if self.print_key:
            columns.append(self.null_literal if record.key is None else record.key)
        if self.print_value:
            columns.append(self.null_literal if record.value is None else record.value)
        if not columns:
            return b""
        return self.key_separator.join(columns) + self.line_separator
