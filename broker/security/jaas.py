"""Kafka's inline JAAS configuration (``sasl.jaas.config``), parsed.

The text names one login module, a control flag and options, ended by a semicolon::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret"
        user_admin="admin-secret" user_alice="alice-secret";

Grammar, as Kafka's tokenizer reads it: words (letters, digits and ``_ - . $``), ``=``,
``;``, and double-quoted strings in which a backslash escapes the next character
(``\\"`` a quote, ``\\\\`` a backslash); whitespace and ``//`` or ``/* */`` comments
separate tokens. The flag is one of ``required``, ``requisite``, ``sufficient``,
``optional``. A broker's ``sasl.jaas.config`` holds exactly one module (Kafka refuses
more); an option given twice keeps its last value.

On a broker the PLAIN module's ``user_<name>="<password>"`` options are the users the
listener accepts; ``username``/``password`` are the broker's own login (inter-broker).
This module only parses: it never logs an option's value, which may be a password, and
errors quote positions, not text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

PLAIN_LOGIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
FLAGS: Final = frozenset({"required", "requisite", "sufficient", "optional"})
#: the prefix of a PLAIN user's option: user_<name>="<password>"
USER_PREFIX: Final = "user_"

_WORD_EXTRA: Final = frozenset("_-.$")


class JaasError(ValueError):
    """The text is not a JAAS configuration of one login module."""


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: Mapping[str, str] = field(repr=False)  # may hold passwords: never printed

    def plain_users(self) -> dict[str, str]:
        """PLAIN's users: ``user_<name>`` option -> {name: password}."""
        return {
            key[len(USER_PREFIX) :]: value
            for key, value in self.options.items()
            if key.startswith(USER_PREFIX) and len(key) > len(USER_PREFIX)
        }


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch in _WORD_EXTRA


def _tokens(text: str) -> Iterator[tuple[str, str, int]]:
    """(kind, value, position): kind is "word", "string" or the punctuation itself."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JaasError(f"unterminated comment at position {i}")
            i = end + 2
        elif ch in "=;":
            yield ch, ch, i
            i += 1
        elif ch == '"':
            start, i = i, i + 1
            out: list[str] = []
            while True:
                if i >= n:
                    raise JaasError(f"unterminated quoted value at position {start}")
                c = text[i]
                if c == "\\" and i + 1 < n:
                    out.append(text[i + 1])
                    i += 2
                elif c == '"':
                    i += 1
                    break
                else:
                    out.append(c)
                    i += 1
            yield "string", "".join(out), start
        elif _is_word_char(ch):
            start = i
            while i < n and _is_word_char(text[i]):
                i += 1
            yield "word", text[start:i], start
        else:
            raise JaasError(f"unexpected character at position {i}")


def parse_jaas_config(text: str) -> JaasEntry:
    """The one login module of ``text``; JaasError says what is wrong and where."""
    tokens = list(_tokens(text))
    if not tokens:
        raise JaasError("no login module given")
    pos = 0

    def take(*kinds: str) -> tuple[str, str, int]:
        nonlocal pos
        if pos >= len(tokens):
            raise JaasError(f"expected {' or '.join(kinds)} at the end of the text")
        token = tokens[pos]
        if token[0] not in kinds:
            raise JaasError(f"expected {' or '.join(kinds)} at position {token[2]}")
        pos += 1
        return token

    module = take("word")[1]
    flag_token = take("word")
    flag = flag_token[1].lower()
    if flag not in FLAGS:
        raise JaasError(
            f"login module control flag at position {flag_token[2]} is not one of "
            f"{', '.join(sorted(FLAGS))}"
        )
    options: dict[str, str] = {}
    while True:
        kind, value, _ = take("word", ";")
        if kind == ";":
            break
        take("=")
        options[value] = take("word", "string")[1]
    if pos != len(tokens):
        raise JaasError(
            f"only one login module may be given: more text at position {tokens[pos][2]}"
        )
    return JaasEntry(module, flag, options)
