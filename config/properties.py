"""Java ``.properties`` text, read and written with the ``javaproperties`` library.

The format is java.util.Properties': a logical line is ``key=value``, ``key: value`` or
``key value`` (the key ends at the first unescaped ``=``, ``:`` or blank, and one
separator with the blanks around it is dropped); lines whose first non-blank character is
``#`` or ``!`` are comments; a line ending in an odd number of backslashes continues on
the next one, whose leading blanks are dropped; ``\\t``, ``\\n``, ``\\uXXXX`` (UTF-16 code
units, surrogate pairs joined) and ``\\<char>`` are escapes. The last occurrence of a key
wins. A server.properties is UTF-8, or ISO-8859-1 as Java reads it when it is not.

A malformed ``\\uXXXX`` escape raises ``ConfigError``, so a broker refuses the file at
startup like any other bad value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import javaproperties

from config.errors import ConfigError

#: the key ``ConfigError`` names when the text itself cannot be read
PROPERTIES_TEXT = "<properties>"


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of ``.properties`` text; the last occurrence of a key wins."""
    try:
        props: dict[str, str] = javaproperties.loads(text)
    except javaproperties.InvalidUEscapeError as exc:
        raise ConfigError(PROPERTIES_TEXT, f"malformed \\uxxxx escape: {exc}") from None
    return props


def format_properties(props: Mapping[str, str]) -> str:
    """``.properties`` text that ``parse_properties`` (and Java) reads back as ``props``:
    one ``key=value`` line per key, in the order given, no timestamp comment."""
    text: str = javaproperties.dumps(props, timestamp=None, sort_keys=False)
    return text


def read_properties(path: str | Path) -> dict[str, str]:
    """The properties of the file at ``path`` (UTF-8, else ISO-8859-1)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # Java reads .properties as ISO-8859-1
        text = data.decode("latin-1")
    return parse_properties(text)
