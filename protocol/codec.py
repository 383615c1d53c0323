"""The one table-driven codec: schema data in, per-version decode/encode plans out.

For every struct of every message (``protocol.schema.specs``) this module makes one msgspec
Struct class covering all versions (snake_case fields in declaration order, Kafka's
defaults, plus ``unknown_tags`` for messages with flexible versions). For each
(struct, version) it compiles, lazily and once, a decode plan and an encode plan: lists of
small steps, where adjacent fixed-width fields are merged into one ``struct.Struct`` so a
run of ints costs one call.

Decoding builds the field values positionally in class order: fields absent from the
version and tagged fields take their defaults; tagged fields found in the tagged section
then replace their defaults. Unknown tags are kept as ``(tag, raw bytes)`` so that
decoding then encoding gives back the same bytes. ``records`` fields decode to a
memoryview slice of the input (zero copy); on encode they accept any bytes-like or, for
the broker's sendfile path, any object with ``len()`` (see ``Writer``).

Readers never allocate more than their input: every length and count is checked against
the bytes left (see protocol.primitives). Low-level slips on malformed input
(struct.error on truncation, ...) are turned into ProtocolError by ``decode_struct``.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Callable
from operator import attrgetter
from typing import Any, Final

import msgspec

from protocol import primitives as p
from protocol.errors import ErrorCode, ProtocolError
from protocol.schema.model import F, M, S, Versions, parse_versions
from protocol.schema.specs import MESSAGES

Buffer = p.Buffer
Reader = Callable[[Any, int], tuple[Any, int]]
Writer = Callable[[bytearray, "Parts", Any], None]
Parts = list[Any]
DecodeStep = Callable[[Any, int, list[Any]], int]
EncodeStep = Callable[[Any, bytearray, "Parts"], None]
#: (tag, getter, default, writer) of one known tagged field
TagWriter = tuple[int, Callable[[Any], Any], Any, Writer]

#: Name of the field that keeps unknown tagged fields: list of (tag, data) or None.
UNKNOWN_TAGS: Final = "unknown_tags"

#: records values at least this large are not copied into the output buffer but kept
#: as their own piece (joined once at the end, or handed to the caller as is).
LARGE_RECORDS: Final = 4096

# struct format code and Python type of each fixed-width primitive.
_FIXED: Final[dict[str, tuple[str, type]]] = {
    "int8": ("b", int),
    "int16": ("h", int),
    "int32": ("i", int),
    "int64": ("q", int),
    "uint16": ("H", int),
    "uint32": ("I", int),
    "float64": ("d", float),
    "bool": ("?", bool),
}

#: Python attribute names that the mechanical snake_case conversion gets wrong or that the
#: project's API fixes (CONTRACTS.md: ``header.api_key``), keyed by (struct, field).
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


def _malformed(message: str) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_REQUEST, message)


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

    def is_fixed(self) -> bool:
        """A single fixed-width scalar that can join a merged ``struct.Struct`` run."""
        return not self.spec.is_array and self.spec.type in _FIXED

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
    spec = fi.spec
    if fi.struct is not None:
        base: Any = fi.struct.cls
    elif spec.element_type in _FIXED:
        base = _FIXED[spec.element_type][1]
    else:
        base = {"string": str, "bytes": bytes, "uuid": uuid.UUID, "records": Any}[spec.element_type]
    if spec.is_array:
        base = list[base]
    if not fi.nullable.empty or (fi.default is None and fi.factory is None):
        return base | None if base is not Any else Any
    return base


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
        self._decoders: dict[int, Callable[[Any, int], tuple[Any, int]]] = {}
        self._encoders: dict[int, Callable[[Any, bytearray, Parts], None]] = {}

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

    def decoder(self, version: int) -> Callable[[Any, int], tuple[Any, int]]:
        dec = self._decoders.get(version)
        if dec is None:
            dec = self._decoders[version] = _compile_decoder(self, version)
        return dec

    def encoder(self, version: int) -> Callable[[Any, bytearray, Parts], None]:
        enc = self._encoders.get(version)
        if enc is None:
            enc = self._encoders[version] = _compile_encoder(self, version)
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


# --- value readers and writers ---------------------------------------------------------


def _is_compact(fi: FieldInfo, version: int, flexible: bool) -> bool:
    if fi.flexible_override is not None:
        return fi.flexible_override.has(version)
    return flexible


def _scalar_reader(fi: FieldInfo, version: int, flexible: bool) -> Reader:
    """Reader of one value of the field's element type."""
    t = fi.element
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    if fi.struct is not None:
        return fi.struct.decoder(version)
    if t in _FIXED:
        s = struct.Struct(">" + _FIXED[t][0])
        unpack, size = s.unpack_from, s.size

        def read_fixed(buf: Any, pos: int) -> tuple[Any, int]:
            return unpack(buf, pos)[0], pos + size

        return read_fixed
    if t == "uuid":
        return p.read_uuid
    table: dict[str, tuple[Reader, Reader, Reader, Reader]] = {
        # (plain, nullable, compact, compact nullable)
        "string": (
            p.read_string,
            p.read_nullable_string,
            p.read_compact_string,
            p.read_compact_nullable_string,
        ),
        "bytes": (
            p.read_bytes,
            p.read_nullable_bytes,
            p.read_compact_bytes,
            p.read_compact_nullable_bytes,
        ),
        "records": (p.read_records, p.read_records, p.read_compact_records, p.read_compact_records),
    }
    return table[t][2 * compact + nullable]


def _value_reader(fi: FieldInfo, version: int, flexible: bool) -> Reader:
    """Reader of the field's whole value (an array reads its count then its elements)."""
    if not fi.spec.is_array:
        return _scalar_reader(fi, version, flexible)
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    read_count = p.read_compact_array_length if compact else p.read_array_length
    name = fi.spec.name
    t = fi.element
    if t in _FIXED:
        code, size = _FIXED[t][0], struct.calcsize(">" + _FIXED[t][0])

        def read_fixed_array(buf: Any, pos: int) -> tuple[Any, int]:
            n, pos = read_count(buf, pos)
            if n < 0:
                if not nullable:
                    raise _malformed(f"null array in non-nullable field {name}")
                return None, pos
            return list(struct.unpack_from(f">{n}{code}", buf, pos)), pos + n * size

        return read_fixed_array
    element = _scalar_reader(fi, version, flexible)

    def read_array(buf: Any, pos: int) -> tuple[Any, int]:
        n, pos = read_count(buf, pos)
        if n < 0:
            if not nullable:
                raise _malformed(f"null array in non-nullable field {name}")
            return None, pos
        items: list[Any] = []
        append = items.append
        for _ in range(n):
            item, pos = element(buf, pos)
            append(item)
        return items, pos

    return read_array


def _not_null(name: str) -> ValueError:
    return ValueError(f"field {name} is not nullable in this version")


def _scalar_writer(fi: FieldInfo, version: int, flexible: bool) -> Writer:
    t = fi.element
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    name = fi.spec.name
    if fi.struct is not None:
        encode = fi.struct.encoder(version)

        def write_struct(out: bytearray, parts: Parts, value: Any) -> None:
            if value is None:
                raise _not_null(name)
            encode(value, out, parts)

        return write_struct
    if t in _FIXED:
        pack = struct.Struct(">" + _FIXED[t][0]).pack

        def write_fixed(out: bytearray, parts: Parts, value: Any) -> None:
            out += pack(value)

        return write_fixed
    if t == "uuid":

        def write_uuid(out: bytearray, parts: Parts, value: Any) -> None:
            out += value.bytes

        return write_uuid
    if t == "records":
        return _records_writer(compact)
    raw = p.write_compact_string if compact else p.write_string
    if t == "bytes":
        raw = p.write_compact_bytes if compact else p.write_bytes  # type: ignore[assignment]

    def write_var(out: bytearray, parts: Parts, value: Any) -> None:
        if value is None and not nullable:
            raise _not_null(name)
        raw(out, value)

    return write_var


def _records_writer(compact: bool) -> Writer:
    """records: length then the data; large or external values become their own piece."""

    def write_records(out: bytearray, parts: Parts, value: Any) -> None:
        if value is None:
            if compact:
                out.append(0)
            else:
                out += b"\xff\xff\xff\xff"
            return
        size = len(value)
        if compact:
            p.write_uvarint(out, size + 1)
        else:
            out += p.INT32.pack(size)
        if size < LARGE_RECORDS and isinstance(value, bytes | bytearray | memoryview):
            out += value
        else:
            parts.append(bytes(out))
            out.clear()
            parts.append(value)

    return write_records


def _value_writer(fi: FieldInfo, version: int, flexible: bool) -> Writer:
    if not fi.spec.is_array:
        return _scalar_writer(fi, version, flexible)
    compact = _is_compact(fi, version, flexible)
    nullable = fi.nullable.has(version)
    name = fi.spec.name
    t = fi.element

    def write_count(out: bytearray, value: Any) -> bool:
        if value is None:
            if not nullable:
                raise _not_null(name)
            if compact:
                out.append(0)
            else:
                out += b"\xff\xff\xff\xff"
            return False
        if compact:
            p.write_uvarint(out, len(value) + 1)
        else:
            out += p.INT32.pack(len(value))
        return True

    if t in _FIXED:
        code = _FIXED[t][0]

        def write_fixed_array(out: bytearray, parts: Parts, value: Any) -> None:
            if write_count(out, value):
                out += struct.pack(f">{len(value)}{code}", *value)

        return write_fixed_array
    element = _scalar_writer(fi, version, flexible)

    def write_array(out: bytearray, parts: Parts, value: Any) -> None:
        if write_count(out, value):
            for item in value:
                element(out, parts, item)

    return write_array


# --- struct plans ----------------------------------------------------------------------


def _inline_fields(info: StructInfo, version: int) -> list[tuple[int, FieldInfo, bool]]:
    """(index, field, on_wire_inline) for every class field; tagged/absent ones are not."""
    flexible = info.message.is_flexible(version)
    rows = []
    for idx, fi in enumerate(info.fields):
        present = fi.versions.has(version)
        tagged = flexible and fi.tagged.has(version)
        rows.append((idx, fi, present and not tagged))
    return rows


def _tagged_fields(info: StructInfo, version: int) -> list[FieldInfo]:
    if not info.message.is_flexible(version):
        return []
    found = [fi for fi in info.fields if fi.versions.has(version) and fi.tagged.has(version)]
    return sorted(found, key=lambda fi: fi.spec.tag or 0)


def _compile_decoder(info: StructInfo, version: int) -> Callable[[Any, int], tuple[Any, int]]:
    flexible = info.message.is_flexible(version)
    steps: list[DecodeStep] = []
    run: list[FieldInfo] = []

    def flush_run() -> None:
        if run:
            s = struct.Struct(">" + "".join(_FIXED[fi.spec.type][0] for fi in run))
            unpack, size = s.unpack_from, s.size

            def read_run(buf: Any, pos: int, values: list[Any]) -> int:
                values.extend(unpack(buf, pos))
                return pos + size

            steps.append(read_run)
            run.clear()

    for _idx, fi, inline in _inline_fields(info, version):
        if inline and fi.is_fixed():
            run.append(fi)
            continue
        flush_run()
        if inline:
            steps.append(_read_step(_value_reader(fi, version, flexible)))
        elif fi.factory is not None:
            steps.append(_factory_step(fi.factory))
        else:
            steps.append(_const_step(fi.default))
    flush_run()

    known = {
        fi.spec.tag: (info.fields.index(fi), _value_reader(fi, version, flexible))
        for fi in _tagged_fields(info, version)
    }
    cls = info.cls
    keeps_unknown = info.keeps_unknown_tags

    def decode(buf: Any, pos: int) -> tuple[Any, int]:
        values: list[Any] = []
        for step in steps:
            pos = step(buf, pos, values)
        if flexible:
            pos, unknown = _read_tags(buf, pos, values, known)
            values.append(unknown)
        elif keeps_unknown:
            values.append(None)
        return cls(*values), pos

    return decode


def _read_step(read: Reader) -> DecodeStep:
    def step(buf: Any, pos: int, values: list[Any]) -> int:
        value, pos = read(buf, pos)
        values.append(value)
        return pos

    return step


def _const_step(value: Any) -> DecodeStep:
    def step(buf: Any, pos: int, values: list[Any]) -> int:
        values.append(value)
        return pos

    return step


def _factory_step(factory: Callable[[], Any]) -> DecodeStep:
    def step(buf: Any, pos: int, values: list[Any]) -> int:
        values.append(factory())
        return pos

    return step


def _read_tags(
    buf: Any, pos: int, values: list[Any], known: dict[int | None, tuple[int, Reader]]
) -> tuple[int, list[tuple[int, bytes]] | None]:
    """The tagged section: known tags replace their field's default in ``values``."""
    count, pos = p.read_uvarint(buf, pos)
    if count == 0:
        return pos, None
    if count > len(buf) - pos:
        raise _malformed(f"{count} tagged fields exceed the frame")
    unknown: list[tuple[int, bytes]] | None = None
    last = -1
    for _ in range(count):
        tag, size, data = p.read_tag_header(buf, pos)
        if tag <= last:
            raise _malformed(f"tagged field {tag} out of order (after {last})")
        last = tag
        end = data + size
        entry = known.get(tag)
        if entry is None:
            if unknown is None:
                unknown = []
            unknown.append((tag, bytes(buf[data:end])))
        else:
            index, read = entry
            value, stop = read(buf, data)
            if stop != end:
                raise _malformed(f"tagged field {tag} has {size} bytes, its value {stop - data}")
            values[index] = value
        pos = end
    return pos, unknown


def _compile_encoder(info: StructInfo, version: int) -> Callable[[Any, bytearray, Parts], None]:
    flexible = info.message.is_flexible(version)
    steps: list[EncodeStep] = []
    run: list[FieldInfo] = []

    def flush_run() -> None:
        if not run:
            return
        pack = struct.Struct(">" + "".join(_FIXED[fi.spec.type][0] for fi in run)).pack
        if len(run) == 1:
            get_one = attrgetter(run[0].attr)

            def write_one(obj: Any, out: bytearray, parts: Parts) -> None:
                out += pack(get_one(obj))

            steps.append(write_one)
        else:
            get_many = attrgetter(*(fi.attr for fi in run))

            def write_run(obj: Any, out: bytearray, parts: Parts) -> None:
                out += pack(*get_many(obj))

            steps.append(write_run)
        run.clear()

    for _idx, fi, inline in _inline_fields(info, version):
        if not inline:
            continue
        if fi.is_fixed():
            run.append(fi)
            continue
        flush_run()
        steps.append(_write_step(attrgetter(fi.attr), _value_writer(fi, version, flexible)))
    flush_run()

    tagged: list[TagWriter] = [
        (fi.spec.tag or 0, attrgetter(fi.attr), fi.make_default(), _value_writer(fi, version, True))
        for fi in _tagged_fields(info, version)
    ]

    def encode(obj: Any, out: bytearray, parts: Parts) -> None:
        for step in steps:
            step(obj, out, parts)
        if flexible:
            _write_tags(obj, out, parts, tagged)

    return encode


def _write_step(get: Callable[[Any], Any], write: Writer) -> EncodeStep:
    def step(obj: Any, out: bytearray, parts: Parts) -> None:
        write(out, parts, get(obj))

    return step


def _write_tags(
    obj: Any,
    out: bytearray,
    parts: Parts,
    tagged: list[TagWriter],
) -> None:
    """Known tagged fields that differ from their default, merged with unknown ones."""
    entries: list[tuple[int, bytes | bytearray]] = []
    for tag, get, default, write in tagged:
        value = get(obj)
        if value != default:
            encoded = bytearray()
            write(encoded, parts, value)
            entries.append((tag, encoded))
    unknown = getattr(obj, UNKNOWN_TAGS)
    if unknown:
        entries.extend(unknown)
        entries.sort(key=lambda e: e[0])
    if not entries:
        out.append(0)
        return
    p.write_uvarint(out, len(entries))
    for tag, data in entries:
        p.write_uvarint(out, tag)
        p.write_uvarint(out, len(data))
        out += data


# --- entry points ----------------------------------------------------------------------

#: Low-level exceptions that malformed input can provoke inside the plans; decode_struct
#: reports them as ProtocolError so callers see one error type.
_SLIPS: Final = (
    struct.error,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    MemoryError,
    RecursionError,
)


def decode_struct(info: StructInfo, version: int, buf: Any, pos: int = 0) -> tuple[Any, int]:
    """Decode one struct of ``info`` at ``version`` from ``buf[pos:]``."""
    try:
        return info.decoder(version)(buf, pos)
    except ProtocolError:
        raise
    except _SLIPS as e:
        raise _malformed(f"malformed {info.name} v{version}: {type(e).__name__}: {e}") from None


def encode_struct(info: StructInfo, version: int, obj: Any, out: bytearray, parts: Parts) -> None:
    """Append ``obj`` encoded at ``version`` to ``out`` (large records go to ``parts``)."""
    if not isinstance(obj, info.cls):
        raise ProtocolError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"cannot encode {type(obj).__name__} as {info.name}",
        )
    try:
        info.encoder(version)(obj, out, parts)
    except ProtocolError:
        raise
    except (*_SLIPS, AttributeError) as e:
        raise ProtocolError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"cannot encode {info.name} v{version}: {type(e).__name__}: {e}",
        ) from None


MESSAGE_INFO: Final[dict[str, MessageInfo]] = {m.name: MessageInfo(m) for m in MESSAGES}


def message(name: str) -> MessageInfo:
    return MESSAGE_INFO[name]


def version_range(name: str) -> Versions:
    return MESSAGE_INFO[name].valid
