"""``ssl.principal.mapping.rules``: a client certificate's distinguished name to a user name.

The rules are Kafka's, comma-separated (whitespace and newlines around the commas are
free) and tried in order; the first that matches gives the name:

    RULE:<pattern>/<replacement>/     the whole DN must match the (Java-style) regular
    RULE:<pattern>/<replacement>/L    expression; the name is the DN with its matches
    RULE:<pattern>/<replacement>/U    replaced (``$1`` ... refer to groups), then lower-
                                      or upper-cased with L or U
    DEFAULT                           the DN itself

Inside a pattern or replacement a backslash escapes the next character, so ``\\/`` is a
slash that does not end it; commas inside a rule are part of it (DNs are full of them),
only a comma after a rule's closing slash (and optional L/U) separates rules, and empty
entries are skipped. A group reference naming no group is kept literally, as Kafka keeps
it. A DN no rule matches has no name (``NoMatchingRule``): the connection is refused, as
Kafka refuses it.

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

from cryptography import x509
from cryptography.x509.oid import NameOID

from config.errors import ConfigError

_KEY: Final = "ssl.principal.mapping.rules"

#: attributes Java's RFC 2253 form names by keyword
_KEYWORDS: Final = frozenset(
    {
        NameOID.COMMON_NAME,
        NameOID.COUNTRY_NAME,
        NameOID.LOCALITY_NAME,
        NameOID.STATE_OR_PROVINCE_NAME,
        NameOID.ORGANIZATION_NAME,
        NameOID.ORGANIZATIONAL_UNIT_NAME,
        NameOID.STREET_ADDRESS,
        NameOID.DOMAIN_COMPONENT,
        NameOID.USER_ID,
    }
)
_UTF8_STRING: Final = 12
#: ASN.1 string tags whose bytes are not UTF-8: BMPString, UniversalString
_ENCODINGS: Final = {30: "utf-16-be", 28: "utf-32-be"}

#: one entry and the comma after it: DEFAULT, RULE:pattern/replacement/ with an optional L
#: or U, or nothing (an empty entry, skipped). Inside a pattern or replacement a
#: backslash escapes the next character (``\/`` is a slash that does not end it)
_ENTRY: Final = re.compile(
    r"\s*(?:(?P<default>DEFAULT)"
    r"|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?)"
    r"|)\s*(?:,|$)"
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
    """The rules of ``text``; ConfigError naming ``key`` for anything unparsable. An empty
    value is taken as DEFAULT (the key's default)."""
    if not text.strip():
        return (MappingRule(None),)
    rules: list[MappingRule] = []
    position, end = 0, len(text)
    while position < end:
        match = _ENTRY.match(text, position)
        if match is None or match.end() == position:
            raise ConfigError(key, f"invalid rule at {text[position : position + 40]!r}")
        position = match.end()
        if match["default"]:
            rules.append(MappingRule(None))
        elif match["pattern"] is not None:
            pattern = match["pattern"]
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ConfigError(key, f"bad pattern {pattern!r}: {exc}") from None
            replacement = _python_replacement(match["replacement"], compiled, key)
            rules.append(MappingRule(compiled, replacement, match["case"]))
    return tuple(rules)


def map_name(rules: Sequence[MappingRule], dn: str) -> str:
    """The user name of ``dn`` under ``rules``; NoMatchingRule when none applies."""
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMatchingRule(f"no rule of {_KEY} matches {dn!r}")


def subject_name(der: bytes) -> str:
    """The subject of a DER certificate in RFC 2253 form as Java's X500Principal prints it:
    most specific RDN first; CN, C, L, ST, O, OU, STREET, DC and UID by keyword, any other
    attribute (emailAddress ...) as its OID with ``#`` and the hex of its DER value."""
    subject = x509.load_der_x509_certificate(der).subject
    return ",".join("+".join(map(_attribute, rdn)) for rdn in reversed(subject.rdns))


def _attribute(attribute: x509.NameAttribute[str | bytes]) -> str:
    if attribute.oid in _KEYWORDS:
        return attribute.rfc4514_string()
    value = attribute.value
    raw = (
        value
        if isinstance(value, bytes)
        else value.encode(_ENCODINGS.get(_tag(attribute), "utf-8"))
    )
    return f"{attribute.oid.dotted_string}=#{_der(_tag(attribute), raw).hex()}"


def _tag(attribute: x509.NameAttribute[str | bytes]) -> int:
    kind = getattr(attribute, "_type", None)  # the ASN.1 string type it was encoded with
    return int(kind.value) if kind is not None else _UTF8_STRING


def _der(tag: int, value: bytes) -> bytes:
    length = len(value)
    if length < 0x80:
        return bytes([tag, length]) + value
    size = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + value


def _python_replacement(java: str, pattern: re.Pattern[str], key: str) -> str:
    """A Java replacement string as Python's ``re.sub`` takes it.

    Java's rules: a backslash makes the next character literal; ``${name}`` is a named
    group; ``$`` and digits a numbered group, the digits taken while they still name a
    group (``$12`` with one group is group 1 and a literal 2). A number naming no group at
    all is kept literally, as Kafka keeps it; any other ``$`` is an error."""
    out: list[str] = []
    i, groups = 0, pattern.groups
    while i < len(java):
        char = java[i]
        if char == "\\" and i + 1 < len(java):
            out.append(_literal(java[i + 1]))
            i += 2
        elif char == "$" and java[i + 1 : i + 2].isdigit():
            number, i = int(java[i + 1]), i + 2
            if number > groups:
                out.append("$" + java[i - 1])
                continue
            while i < len(java) and java[i].isdigit() and number * 10 + int(java[i]) <= groups:
                number, i = number * 10 + int(java[i]), i + 1
            out.append(f"\\g<{number}>")
        elif char == "$" and java[i + 1 : i + 2] == "{" and "}" in java[i:]:
            name = java[i + 2 : java.index("}", i)]
            if name not in pattern.groupindex:
                raise ConfigError(key, f"replacement {java!r} names no group {name!r}")
            out.append(f"\\g<{name}>")
            i = java.index("}", i) + 1
        elif char == "$":
            raise ConfigError(key, f"bad group reference in replacement {java!r}")
        else:
            out.append(_literal(char))
            i += 1
    return "".join(out)


def _literal(char: str) -> str:
    """``char`` as a literal in a ``re.sub`` template."""
    return "\\\\" if char == "\\" else char
