"""The schema model: how a Kafka message is declared as data.

A message (``M``) has fields (``F``); a field whose type names a struct (``Foo`` or
``[]Foo``) either declares that struct inline (``fields``) or refers to one of the
message's common structs (``S``). Version ranges are kept as Kafka writes them
("0+", "3-7", "none") and parsed once into ``Versions``.

Semantics (KIP-482 for the flexible parts):
- ``versions``: the versions in which the field is on the wire.
- ``nullable``: versions in which the field may be null.
- ``default``: the value a field takes when absent (Kafka's spelling: "null", "-1",
  "0x7fffffff", "false", ...); None means the type's natural default.
- ``tag``/``tagged``: a tagged field (only written when not equal to its default) with
  its tag number and the versions in which it is tagged.
- ``flexible``: overrides the message's flexible versions for this field ("none" keeps
  a string non-compact, as the request header's client id is).
- ``ignorable``: Kafka drops an ignorable field silently when the target version lacks it.
"""

from __future__ import annotations

from typing import NamedTuple

MAX_VERSION = 0x7FFF


class Versions(NamedTuple):
    """Inclusive version range; empty when ``lo > hi`` (Kafka's "none")."""

    lo: int
    hi: int

    def has(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi


NO_VERSIONS = Versions(1, 0)


def parse_versions(text: str | None) -> Versions:
    """Parse "N", "N+", "N-M" or "none" (None is "none")."""
    if text is None or text == "none":
        return NO_VERSIONS
    if text.endswith("+"):
        return Versions(int(text[:-1]), MAX_VERSION)
    lo, sep, hi = text.partition("-")
    return Versions(int(lo), int(hi) if sep else int(lo))


class F(NamedTuple):
    """One field of a struct."""

    name: str
    type: str
    versions: str
    nullable: str | None = None
    default: str | int | None = None
    tag: int | None = None
    tagged: str | None = None
    flexible: str | None = None
    ignorable: bool = False
    fields: tuple[F, ...] = ()

    @property
    def element_type(self) -> str:
        """The type without its array marker: "int32" for "[]int32"."""
        return self.type[2:] if self.type.startswith("[]") else self.type

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def is_struct(self) -> bool:
        """Whether the (element) type is a struct: struct names start with a capital."""
        return self.element_type[:1].isupper()


class S(NamedTuple):
    """A common struct, shared by several fields of one message."""

    name: str
    versions: str
    fields: tuple[F, ...]


class M(NamedTuple):
    """One message: a request, a response, a header or a data record."""

    name: str
    kind: str  # "request" | "response" | "header" | "data"
    api_key: int | None
    valid: str
    flexible: str
    fields: tuple[F, ...]
    common: tuple[S, ...] = ()
