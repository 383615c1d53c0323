"""Java ``.properties`` text: parsing (java.util.Properties.load rules) and writing.

A logical line is ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` start
comment lines; a line ending in an odd number of backslashes continues on the next one;
``\\uXXXX`` escapes are UTF-16 code units. Files are UTF-8, or ISO-8859-1 as Java reads
them when they are not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from storage.config_def import ConfigError

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Join natural lines into logical ones.

    A line ending in an odd number of backslashes continues on the next line, whose leading
    whitespace is dropped. Blank lines and comment lines (first non-blank character ``#``
    or ``!``) are skipped, but only where a logical line starts: inside a continuation a
    ``#`` is ordinary text.
    """
    pending: list[str] | None = None
    for natural in text.splitlines():
        line = natural.lstrip(_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = [*(pending or []), line[:-1]]
            continue
        yield "".join([*(pending or []), line])
        pending = None
    if pending is not None:
        yield "".join(pending)


def _unescape(raw: str, line: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "\\" or i + 1 == len(raw):
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError("<properties>", f"malformed \\uxxxx escape in line {line!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    text = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        # \uXXXX escapes are UTF-16 units: join surrogate pairs into their characters
        text = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")
    return text


def _split_key_value(line: str) -> tuple[str, str]:
    """Key ends at the first unescaped ``=``, ``:`` or whitespace; one separator is eaten."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WHITESPACE:
            break
        i += 1
    key_end = min(i, len(line))
    j = key_end
    while j < len(line) and line[j] in _WHITESPACE:
        j += 1
    if j < len(line) and line[j] in "=:":
        j += 1
        while j < len(line) and line[j] in _WHITESPACE:
            j += 1
    return _unescape(line[:key_end], line), _unescape(line[j:], line)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (java.util.Properties.load rules); last key wins."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        props[key] = value
    return props


def _escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch in "=:#!" or (ch == " " and (is_key or i == 0)):
            out.append("\\" + ch)
        elif not " " <= ch <= "~":
            out.extend(f"\\u{unit:04x}" for unit in _utf16_units(ch))
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def format_properties(props: Mapping[str, str]) -> str:
    """Java ``.properties`` text that ``parse_properties`` (and Java) reads back as ``props``."""
    return "".join(f"{_escape(k, True)}={_escape(v, False)}\n" for k, v in props.items())


def read_properties(path: str | Path) -> dict[str, str]:
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # Java reads .properties as ISO-8859-1
        text = data.decode("latin-1")
    return parse_properties(text)
