"""Hypothesis strategies for protocol messages, derived from the schema data.

``message_strategy(info, version)`` draws an instance of a message's Struct holding, for
that version, arbitrary valid values in every field on the wire (and defaults elsewhere),
including unknown tagged fields in flexible versions.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st

from protocol.codec import FieldInfo, MessageInfo, StructInfo

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

_text = st.text(max_size=8)
_blob = st.binary(max_size=24)


def _element(fi: FieldInfo, version: int, unknown_tags: bool) -> st.SearchStrategy[Any]:
    t = fi.element
    if fi.struct is not None:
        return struct_strategy(fi.struct, version, unknown_tags)
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return st.integers(lo, hi)
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "uuid":
        return st.uuids()
    if t == "string":
        return _text
    if t in ("bytes", "records"):
        return _blob
    raise AssertionError(t)


def field_strategy(fi: FieldInfo, version: int, unknown_tags: bool) -> st.SearchStrategy[Any]:
    value = _element(fi, version, unknown_tags)
    if fi.spec.is_array:
        value = st.lists(value, max_size=3)
    if fi.nullable.has(version):
        value = st.none() | value
    return value


def _unknown_tags(info: StructInfo, version: int) -> st.SearchStrategy[Any]:
    known = {fi.spec.tag for fi in info.fields if fi.tagged.has(version)}
    tags = st.sets(st.integers(0, 300).filter(lambda t: t not in known), min_size=1, max_size=3)
    entries = tags.flatmap(
        lambda ts: st.tuples(*(st.tuples(st.just(t), _blob) for t in sorted(ts))).map(list)
    )
    return st.none() | entries


@cache
def struct_strategy(
    info: StructInfo, version: int, unknown_tags: bool = True
) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {
        fi.attr: field_strategy(fi, version, unknown_tags)
        for fi in info.fields
        if fi.versions.has(version)
    }
    if unknown_tags and info.message.is_flexible(version):
        kwargs["unknown_tags"] = _unknown_tags(info, version)
    return st.builds(info.cls, **kwargs)


def message_strategy(
    info: MessageInfo, version: int, unknown_tags: bool = True
) -> st.SearchStrategy[Any]:
    """Instances of the message at ``version``; ``unknown_tags=False`` leaves them out
    (for comparing with codecs that drop unknown tags)."""
    return struct_strategy(info.root, version, unknown_tags)
