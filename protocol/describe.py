"""Print a message's classes and fields, with the versions each field is on the wire.

    python -m protocol.describe FetchResponse [--version 12]

A reading aid for code that builds or reads messages: attribute names (snake_case),
types, defaults, nullable and tagged versions, and the nested struct classes
(``FetchResponse.PartitionData``).
"""

from __future__ import annotations

import argparse
import sys

from protocol.codec import MESSAGE_INFO, StructInfo


def _describe_struct(info: StructInfo, version: int | None, indent: str, out: list[str]) -> None:
    for fi in info.fields:
        if version is not None and not fi.versions.has(version):
            continue
        spec = fi.spec
        notes = [f"v{spec.versions}"]
        if spec.nullable:
            notes.append(f"nullable v{spec.nullable}")
        if spec.tag is not None:
            notes.append(f"tag {spec.tag} v{spec.tagged}")
        default = "[]" if fi.factory is list else fi.default
        if fi.struct is None and fi.factory is None:
            notes.append(f"default {default!r}")
        out.append(f"{indent}{fi.attr}: {spec.type}  ({', '.join(notes)})")
        if fi.struct is not None:
            out.append(f"{indent}  {info.message.name}.{fi.struct.name}:")
            _describe_struct(fi.struct, version, indent + "    ", out)


def describe(name: str, version: int | None = None) -> str:
    info = MESSAGE_INFO[name]
    flexible = info.spec.flexible
    head = f"{name} (valid v{info.spec.valid}, flexible v{flexible})"
    if version is not None:
        head += f" at v{version}{' (flexible)' if info.is_flexible(version) else ''}"
    out = [head]
    _describe_struct(info.root, version, "  ", out)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Describe a message's fields.")
    parser.add_argument("name", help="message name, e.g. ProduceRequest")
    parser.add_argument("--version", type=int, default=None, help="only fields on the wire")
    args = parser.parse_args(argv)
    if args.name not in MESSAGE_INFO:
        print(f"unknown message {args.name}; known: {', '.join(sorted(MESSAGE_INFO))}")
        return 2
    print(describe(args.name, args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
