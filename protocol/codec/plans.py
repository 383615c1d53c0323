"""Per-(struct, version) decode and encode plans, compiled to straight-line functions.

A plan says what one struct looks like on the wire at one version, in order:

- a *run* of adjacent fixed-width fields, read or written with one ``struct.Struct``;
- a *value*: any other field, through the reader/writer chosen for it (codec.values);
- then, in flexible versions, the tagged section.

Fields that are not inline (absent from this version, or tagged) take their defaults when
decoding and are skipped when encoding (tagged ones go to the tagged section). The plan is
rendered as Python source and compiled once, the way ``dataclasses`` makes ``__init__``:
the result is a plain function with no per-field interpretation left, e.g. for
MetadataResponsePartition v12::

    def decode(buf, pos):
        v0, v1, v2, v3 = _run0(buf, pos)
        pos += 14
        v4, pos = _read4(buf, pos)
        v5, pos = _read5(buf, pos)
        v6, pos = _read6(buf, pos)
        if buf[pos]:
            pos, unknown, found = _read_tags(buf, pos, _known)
        else:
            pos += 1
            unknown = found = None
        obj = _cls(v0, v1, v2, v3, v4, v5, v6, unknown)
        return obj, pos

Each compiled function keeps its source in ``.plan_source`` (see ``plan_source()``).
Bounds are not checked here: a read past the end raises struct.error or IndexError,
which ``decode_struct`` reports as ProtocolError; lengths and counts are checked by
the readers before anything is allocated.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from protocol import primitives as p
from protocol.codec.structs import FIXED, UNKNOWN_TAGS, FieldInfo, StructInfo
from protocol.codec.values import Parts, Reader, Writer, malformed, value_reader, value_writer

Decoder = Callable[[Any, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray, Parts], None]
#: (tag, getter, default, writer) of one known tagged field
TagWriter = tuple[int, Callable[[Any], Any], Any, Writer]


def _layout(info: StructInfo, version: int) -> tuple[list[tuple[int, FieldInfo, bool]], bool]:
    """Every class field with whether it is inline on the wire at ``version``."""
    flexible = info.message.is_flexible(version)
    rows = []
    for idx, fi in enumerate(info.fields):
        tagged = flexible and fi.tagged.has(version)
        rows.append((idx, fi, fi.versions.has(version) and not tagged))
    return rows, flexible


def _tagged_fields(info: StructInfo, version: int) -> list[FieldInfo]:
    if not info.message.is_flexible(version):
        return []
    found = [fi for fi in info.fields if fi.versions.has(version) and fi.tagged.has(version)]
    return sorted(found, key=lambda fi: fi.spec.tag or 0)


def _run_struct(run: list[FieldInfo]) -> struct.Struct:
    return struct.Struct(">" + "".join(FIXED[fi.spec.type][0] for fi in run))


def _compile(source: str, namespace: dict[str, Any], name: str) -> Any:
    exec(compile(source, f"<protocol plan {name}>", "exec"), namespace)
    fn = namespace["_plan"]
    fn.plan_source = source
    return fn


def compile_decoder(info: StructInfo, version: int) -> Decoder:
    layout, flexible = _layout(info, version)
    ns: dict[str, Any] = {"_cls": info.cls, "_read_tags": _read_tags}
    lines = ["def _plan(buf, pos):"]
    run: list[tuple[int, FieldInfo]] = []

    def flush_run() -> None:
        if run:
            s = _run_struct([fi for _, fi in run])
            ns[f"_run{run[0][0]}"] = s.unpack_from
            names = ", ".join(f"v{idx}" for idx, _ in run)
            lines.append(f"    {names}{',' if len(run) == 1 else ''} = _run{run[0][0]}(buf, pos)")
            lines.append(f"    pos += {s.size}")
            run.clear()

    for idx, fi, inline in layout:
        if inline and fi.is_fixed():
            run.append((idx, fi))
            continue
        flush_run()
        if inline:
            ns[f"_read{idx}"] = value_reader(fi, version, flexible)
            lines.append(f"    v{idx}, pos = _read{idx}(buf, pos)")
        elif fi.factory is not None:
            ns[f"_new{idx}"] = fi.factory
            lines.append(f"    v{idx} = _new{idx}()")
        else:
            ns[f"_default{idx}"] = fi.default
            lines.append(f"    v{idx} = _default{idx}")
    flush_run()

    args = [f"v{idx}" for idx, _, _ in layout]
    tagged = _tagged_fields(info, version)
    if flexible:
        ns["_known"] = {fi.spec.tag: (fi.attr, value_reader(fi, version, True)) for fi in tagged}
        lines += [
            "    if buf[pos]:",
            "        pos, unknown, found = _read_tags(buf, pos, _known)",
            "    else:",
            "        pos += 1",
            "        unknown = found = None",
        ]
        args.append("unknown")
    elif info.keeps_unknown_tags:
        args.append("None")
    lines.append(f"    obj = _cls({', '.join(args)})")
    if tagged:
        lines += ["    if found:", "        for attr, value in found.items():"]
        lines.append("            setattr(obj, attr, value)")
    lines.append("    return obj, pos")
    return _compile("\n".join(lines) + "\n", ns, f"{info.name} v{version} decode")  # type: ignore[no-any-return]


def compile_encoder(info: StructInfo, version: int) -> Encoder:
    layout, flexible = _layout(info, version)
    ns: dict[str, Any] = {"_write_tags": _write_tags}
    lines = ["def _plan(obj, out, parts):"]
    run: list[tuple[int, FieldInfo]] = []

    def flush_run() -> None:
        if run:
            ns[f"_run{run[0][0]}"] = _run_struct([fi for _, fi in run]).pack
            values = ", ".join(f"obj.{fi.attr}" for _, fi in run)
            lines.append(f"    out += _run{run[0][0]}({values})")
            run.clear()

    for idx, fi, inline in layout:
        if not inline:
            continue
        if fi.is_fixed():
            run.append((idx, fi))
            continue
        flush_run()
        ns[f"_write{idx}"] = value_writer(fi, version, flexible)
        lines.append(f"    _write{idx}(out, parts, obj.{fi.attr})")
    flush_run()

    if flexible:
        ns["_tagged"] = tagged = [
            (
                fi.spec.tag or 0,
                attrgetter(fi.attr),
                fi.make_default(),
                value_writer(fi, version, True),
            )
            for fi in _tagged_fields(info, version)
        ]
        if tagged:
            lines.append("    _write_tags(obj, out, parts, _tagged)")
        else:  # most structs: an empty tagged section unless unknown tags were kept
            lines += [
                f"    if obj.{UNKNOWN_TAGS}:",
                "        _write_tags(obj, out, parts, _tagged)",
                "    else:",
                "        out.append(0)",
            ]
    if len(lines) == 1:
        lines.append("    pass")
    return _compile("\n".join(lines) + "\n", ns, f"{info.name} v{version} encode")  # type: ignore[no-any-return]


def _read_tags(
    buf: Any, pos: int, known: dict[int | None, tuple[str, Reader]]
) -> tuple[int, list[tuple[int, bytes]] | None, dict[str, Any] | None]:
    """A non-empty tagged section: ``(new_pos, unknown tags, {attr: value} of known ones)``.
    Tags must increase strictly, and a known tag's value must fill its size exactly."""
    count, pos = p.read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise malformed(f"{count} tagged fields exceed the frame")
    unknown: list[tuple[int, bytes]] | None = None
    found: dict[str, Any] | None = None
    last = -1
    for _ in range(count):
        tag, size, data = p.read_tag_header(buf, pos)
        if tag <= last:
            raise malformed(f"tagged field {tag} out of order (after {last})")
        last = tag
        end = data + size
        entry = known.get(tag)
        if entry is None:
            if unknown is None:
                unknown = []
            unknown.append((tag, bytes(buf[data:end])))
        else:
            attr, read = entry
            value, stop = read(buf, data)
            if stop != end:
                raise malformed(f"tagged field {tag} has {size} bytes, its value {stop - data}")
            if found is None:
                found = {}
            found[attr] = value
        pos = end
    return pos, unknown, found


def _write_tags(obj: Any, out: bytearray, parts: Parts, tagged: list[TagWriter]) -> None:
    """Known tagged fields that differ from their default, merged in tag order with the
    unknown ones kept from decoding."""
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
    p.write_uvarint(out, len(entries))
    for tag, data in entries:
        p.write_uvarint(out, tag)
        p.write_uvarint(out, len(data))
        out += data


def plan_source(info: StructInfo, version: int) -> str:
    """The compiled decode and encode source of a struct at a version (for debugging)."""
    dec: Any = info.decoder(version)
    enc: Any = info.encoder(version)
    return f"{dec.plan_source}\n{enc.plan_source}"
