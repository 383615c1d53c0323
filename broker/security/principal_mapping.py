"""``ssl.principal.mapping.rules``: a client certificate's distinguished name to a user name.

The rules are Kafka's, comma- (or newline-) separated and tried in order; the first that
matches gives the name:

    RULE:<pattern>/<replacement>/     the whole DN must match the (Java-style) regular
    RULE:<pattern>/<replacement>/L    expression; the name is the DN with the match
    RULE:<pattern>/<replacement>/U    replaced (``$1`` ... refer to groups), then lower-
                                      or upper-cased with L or U
    DEFAULT                           the DN itself

A slash inside a pattern or replacement is written ``\\/``; commas inside a rule are
part of it (DNs are full of them), only a comma after a rule's closing slash (and
optional L/U) separates rules. A DN no rule matches has no name (``NoMatchingRule``):
the connection is refused, as Kafka refuses it.

The DN is the certificate subject in RFC 2253 form, most specific attribute first, as
Java's X500Principal prints it: ``CN=alice,OU=eng,O=acme``. ``subject_name`` makes it
from a DER certificate.

Everything here is pure: ``parse_rules`` once per configuration, ``map_name`` per
handshake.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from config.errors import ConfigError

_KEY: Final = "ssl.principal.mapping.rules"

#: one rule and the separator after it (Kafka's grammar): DEFAULT, or
#: RULE:pattern/replacement/ with an optional L or U; escaped slashes allowed inside
_RULE: Final = re.compile(
    r"\s*(?:(?P<default>DEFAULT)"
    r"|RULE:(?P<pattern>(?:\\/|[^/])*)/(?P<replacement>(?:\\/|[^/])*)/(?P<case>[LU]?))"
    r"\s*(?:[,\n]|$)"
)


class NoMatchingRule(ValueError):
    """No rule maps the distinguished name."""


@dataclass(frozen=True, slots=True)
class MappingRule:
    """One rule; ``pattern`` None is DEFAULT."""

    pattern: re.Pattern[str] | None
    replacement: str = ""
    case: str = ""  # "", "L" or "U"

    def apply(self, dn: str) -> str | None:
        """The name this rule gives ``dn``, or None when it does not match."""
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        name = self.pattern.sub(self.replacement, dn)
        if self.case == "L":
            return name.lower()
        if self.case == "U":
            return name.upper()
        return name


def parse_rules(text: str, key: str = _KEY) -> tuple[MappingRule, ...]:
    """The rules of ``text``; ConfigError naming ``key`` for anything unparsable."""
    rules: list[MappingRule] = []
    position, end = 0, len(text.rstrip())
    if not text.strip():
        return (MappingRule(None),)  # an empty value behaves as DEFAULT
    while position < end:
        match = _RULE.match(text, position)
        if match is None or match.end() == position:
            raise ConfigError(key, f"cannot parse rule at {text[position : position + 40]!r}")
        if match["default"]:
            rules.append(MappingRule(None))
        else:
            pattern = match["pattern"].replace("\\/", "/")
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ConfigError(key, f"bad pattern {pattern!r}: {exc}") from None
            replacement = _python_replacement(match["replacement"].replace("\\/", "/"), key)
            groups = [int(g) for g in re.findall(r"\\g<(\d+)>", replacement)]
            if groups and max(groups) > compiled.groups:
                raise ConfigError(key, f"{pattern!r} has no group {max(groups)}")
            rules.append(MappingRule(compiled, replacement, match["case"]))
        position = match.end()
    return tuple(rules)


def map_name(rules: Sequence[MappingRule], dn: str) -> str:
    """The user name of ``dn`` under ``rules``; NoMatchingRule when none applies."""
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRule(f"no rule of {_KEY} matches {dn!r}")


def subject_name(der: bytes) -> str:
    """The subject of a DER certificate in RFC 2253 form (most specific first)."""
    from cryptography import x509  # imported when a client certificate is first seen

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _python_replacement(java: str, key: str) -> str:
    """A Java replacement string (``$1``, ``\\$`` for a dollar) as Python's ``re.sub``
    takes it (``\\g<1>``; a backslash doubled)."""
    out: list[str] = []
    i = 0
    while i < len(java):
        char = java[i]
        if char == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
        elif char == "$":
            digits = re.match(r"\d+", java[i + 1 :])
            if digits is None:
                raise ConfigError(key, f"bad group reference in replacement {java!r}")
            out.append(f"\\g<{digits.group()}>")
            i += 1 + len(digits.group())
        else:
            out.append(char)
            i += 1
    return "".join(out)
