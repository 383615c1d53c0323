"""Schema structs resolved for the codec: versions parsed, struct types linked, and one
msgspec Struct class per struct covering all versions.

Classes have the spec's fields in declaration order under snake_case names, with
Kafka's defaults: the spec's ``default`` or the type's natural one (0, false, "", b"",
an empty list, a struct of defaults; null where the spec says "null"), plus
``unknown_tags`` in messages that have flexible versions. Nested struct classes are
attributes of their message's class (``FetchResponse.PartitionData``).

Classes are made with ``gc=False`` (msgspec): decoding creates many small objects and
the cycle collector need not track them. Messages never form reference cycles; code
that makes one (a struct stored inside its own list) would leak it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import msgspec

from protocol import primitives as p
from protocol.schema.model import F, M, S, parse_versions

if TYPE_CHECKING:
    from protocol.codec.plans import Decoder, Encoder

#: Name of the field that keeps unknown tagged fields: list of (tag, data) or None.
UNKNOWN_TAGS: Final = "unknown_tags"

#: struct format code and Python type of each fixed-width primitive.
FIXED: Final[dict[str, tuple[str, type]]] = {
    "int8": ("b", int),
    "int16": ("h", int),
    "int32": ("i", int),
    "int64": ("q", int),
    "uint16": ("H", int),
    "uint32": ("I", int),
    "float64": ("d", float),
    "bool": ("?", bool),
}

#: Python type of each element type but structs and records (``records`` values are not
#: one type: see protocol.codec.values.Records).
SCALAR_TYPES: Final[dict[str, type]] = {
    **{name: python for name, (_code, python) in FIXED.items()},
    "string": str,
    "bytes": bytes,
    "uuid": uuid.UUID,
}

#: Python attribute names that the mechanical snake_case conversion gets wrong or that the
#: project's API fixes (``header.api_key``, as the broker and the client read it), keyed by
#: (struct, field).
_ATTR_OVERRIDES: Final[dict[tuple[str, str], str]] = {
    ("RequestHeader", "RequestApiKey"): "api_key",
    ("RequestHeader", "RequestApiVersion"): "api_version",
    ("*", "isKRaftController"): "is_kraft_controller",
}


def snake_case(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _attr_name(struct_name: str, field_name: str) -> str:
    return (
        _ATTR_OVERRIDES.get((struct_name, field_name))
        or _ATTR_OVERRIDES.get(("*", field_name))
        or snake_case(field_name)
    )


class FieldInfo:
    """A schema field resolved for the codec: versions parsed, struct type linked."""

    __slots__ = (
        "attr",
        "default",
        "factory",
        "flexible_override",
        "nullable",
        "spec",
        "struct",
        "tagged",
        "versions",
    )

    def __init__(self, spec: F, attr: str, struct: StructInfo | None) -> None:
        self.spec = spec
        self.attr = attr
        self.struct = struct
        self.versions = parse_versions(spec.versions)
        self.nullable = parse_versions(spec.nullable)
        self.tagged = parse_versions(spec.tagged)
        self.flexible_override = parse_versions(spec.flexible) if spec.flexible else None
        self.default, self.factory = _default_of(spec, struct)

    @property
    def element(self) -> str:
        return self.spec.element_type

    @property
    def optional(self) -> bool:
        """Whether the value may be None: nullable in some version, or null by default."""
        return not self.nullable.empty or (self.default is None and self.factory is None)

    def is_fixed(self) -> bool:
        """A single fixed-width scalar that can join a merged ``struct.Struct`` run."""
        return not self.spec.is_array and self.spec.type in FIXED

    def make_default(self) -> Any:
        return self.factory() if self.factory is not None else self.default


def _default_of(spec: F, struct: StructInfo | None) -> tuple[Any, Callable[[], Any] | None]:
    """Kafka's default for a field: the spec's ``default`` or the type's natural one."""
    d = spec.default
    if spec.is_array:
        return (None, None) if d == "null" else (None, list)
    t = spec.type
    if struct is not None:
        return (None, None) if d == "null" else (None, struct.cls)
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return (int(d, 0) if isinstance(d, str) else int(d or 0)), None
    if t == "float64":
        return float(d or 0), None
    if t == "bool":
        return (d is True or (isinstance(d, str) and d.lower() == "true")), None
    if t == "string":
        if d == "null":
            return None, None
        return ("" if d is None else str(d)), None
    if t == "bytes":
        return (None if d == "null" else b""), None
    if t == "records":
        return None, None
    if t == "uuid":
        return p.ZERO_UUID, None
    raise ValueError(f"unknown field type {t!r} of {spec.name}")


def _annotation(fi: FieldInfo) -> Any:
    """The field's type for msgspec (``Any`` for records, whatever holds them)."""
    if fi.element == "records":
        return Any
    base: Any = fi.struct.cls if fi.struct is not None else SCALAR_TYPES[fi.element]
    if fi.spec.is_array:
        base = list[base]
    return base | None if fi.optional else base


class StructInfo:
    """One struct of a message (the message itself, an inline struct or a common struct)
    with its class and its compiled per-version plans."""

    def __init__(self, message: MessageInfo, name: str, fields: tuple[F, ...]) -> None:
        self.message = message
        self.name = name
        self.fields: list[FieldInfo] = []
        for f in fields:
            child = message.resolve_struct(f) if f.is_struct else None
            self.fields.append(FieldInfo(f, _attr_name(name, f.name), child))
        self.keeps_unknown_tags = not message.flexible.empty
        self.cls: Any = self._make_class()
        self._decoders: dict[int, Decoder] = {}
        self._encoders: dict[int, Encoder] = {}

    def _make_class(self) -> type[msgspec.Struct]:
        spec_fields: list[tuple[str, Any, Any]] = []
        for fi in self.fields:
            default: Any = msgspec.field(default_factory=fi.factory) if fi.factory else fi.default
            spec_fields.append((fi.attr, _annotation(fi), default))
        if self.keeps_unknown_tags:
            spec_fields.append((UNKNOWN_TAGS, list[tuple[int, bytes]] | None, None))
        return msgspec.defstruct(
            self.name,
            spec_fields,
            module="protocol.messages",
            repr_omit_defaults=True,
            gc=False,
        )

    # -- plans ---------------------------------------------------------------------------

    def decoder(self, version: int) -> Decoder:
        """``decode(buf, pos) -> (struct, new_pos)`` at ``version``, compiled once."""
        dec = self._decoders.get(version)
        if dec is None:
            from protocol.codec.plans import compile_decoder  # plans imports this module

            dec = self._decoders[version] = compile_decoder(self, version)
        return dec

    def encoder(self, version: int) -> Encoder:
        """``encode(struct, out, parts)`` at ``version``, compiled once."""
        enc = self._encoders.get(version)
        if enc is None:
            from protocol.codec.plans import compile_encoder  # plans imports this module

            enc = self._encoders[version] = compile_encoder(self, version)
        return enc


class MessageInfo:
    """A message schema resolved: its root struct, nested structs and version ranges."""

    def __init__(self, spec: M) -> None:
        self.spec = spec
        self.name = spec.name
        self.valid = parse_versions(spec.valid)
        self.flexible = parse_versions(spec.flexible)
        self.structs: dict[str, StructInfo] = {}
        self._common: dict[str, S] = {s.name: s for s in spec.common}
        self.root = StructInfo(self, spec.name, spec.fields)
        for name, info in self.structs.items():
            setattr(self.root.cls, name, info.cls)

    def resolve_struct(self, f: F) -> StructInfo:
        name = f.element_type
        if name in self.structs:
            if f.fields:
                raise ValueError(f"{self.name}: struct {name} declared twice")
            return self.structs[name]
        if f.fields:
            fields = f.fields
        elif name in self._common:
            fields = self._common[name].fields
        else:
            raise ValueError(f"{self.name}: unknown struct type {name}")
        info = StructInfo(self, name, fields)
        self.structs[name] = info
        return info

    def is_flexible(self, version: int) -> bool:
        return self.flexible.has(version)
