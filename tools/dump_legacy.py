"""``dump-log`` for messages of magic 0 and 1, and for a file that mixes them with v2 batches.

A log Kafka wrote before RecordBatch v2 holds message sets (``protocol.records.legacy``
has the format); after an upgrade v2 batches follow them in the same segment. From the
first legacy message on, the file is walked item by item, each told apart by its magic
byte (position 16 in every format): a legacy message gets a line in the shape of
kafka-dump-log's (its offset as base and last offset, count 1, or the number of inner
messages for a compressed wrapper, with the wrapper's timestamp and codec), and with
``--print-data-log`` its messages (a wrapper's inner ones, offsets made absolute); a v2
batch is printed as the v2 dumper prints it. The walk stops at the first item that is
not whole, saying where.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TextIO

from protocol.records.batch import LOG_OVERHEAD, MAGIC_OFFSET, Compression, InvalidBatch
from protocol.records.legacy import (
    MESSAGE_OVERHEAD_V0,
    LegacyMessage,
    deep_messages,
    read_message,
)

#: prints one v2 batch: (position, its bytes, out, print_data)
PrintBatch = Callable[[int, bytes, TextIO, bool], None]


def legacy_at(path: str, position: int) -> bool:
    """Whether the item at ``position`` of ``path`` looks like a message of magic 0 or 1
    (its magic, and a size that can hold one)."""
    with open(path, "rb") as f:
        f.seek(position)
        head = f.read(MAGIC_OFFSET + 1)
    if len(head) <= MAGIC_OFFSET or head[MAGIC_OFFSET] not in (0, 1):
        return False
    return int.from_bytes(head[8:12], "big", signed=True) >= MESSAGE_OVERHEAD_V0


def dump_legacy(
    path: str, position: int, out: TextIO, print_data: bool, print_batch: PrintBatch
) -> int:
    """Print every item of ``path`` from ``position``; 1 when the file ends in damage."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pos = position
        while pos < size:
            f.seek(pos)
            head = f.read(MAGIC_OFFSET + 1)
            if len(head) <= MAGIC_OFFSET:
                return _damage(out, size, pos, f"{size - pos} trailing bytes are too few")
            length = int.from_bytes(head[8:12], "big", signed=True)
            if length < MESSAGE_OVERHEAD_V0 or pos + LOG_OVERHEAD + length > size:
                return _damage(out, size, pos, f"size {length} is impossible here")
            f.seek(pos)
            data = f.read(LOG_OVERHEAD + length)
            if head[MAGIC_OFFSET] == 2:
                print_batch(pos, data, out, print_data)
            elif head[MAGIC_OFFSET] in (0, 1):
                _print_message(data, pos, out, print_data)
            else:
                return _damage(out, size, pos, f"magic {head[MAGIC_OFFSET]} is unknown")
            pos += len(data)
    return 0


def _damage(out: TextIO, size: int, pos: int, reason: str) -> int:
    print(f"Found {size - pos} invalid bytes at position {pos}: {reason}", file=out)
    return 1


def _codec(value: int) -> str:
    try:
        return Compression(value).name.lower()
    except ValueError:
        return f"unknown({value})"


def _print_message(data: bytes, pos: int, out: TextIO, print_data: bool) -> None:
    try:
        message = read_message(data)
    except InvalidBatch as exc:
        crc = int.from_bytes(data[12:16], "big")
        print(
            f"offset: {int.from_bytes(data[:8], 'big', signed=True)} position: {pos} "
            f"size: {len(data)} magic: {data[MAGIC_OFFSET]} crc: {crc} isvalid: false ({exc})",
            file=out,
        )
        return
    inner: list[LegacyMessage] | None = None
    reason = ""
    try:
        inner = deep_messages(message)
    except InvalidBatch as exc:
        reason = f" (inner messages: {exc})"
    count = len(inner) if inner is not None else "?"
    first = inner[0].offset if inner else message.offset
    print(
        f"baseOffset: {first} lastOffset: {message.offset} count: {count} position: {pos} "
        f"{message.timestamp_type.name.title().replace('_', '')}: {message.timestamp} "
        f"size: {message.size} magic: {message.magic} "
        f"compresscodec: {_codec(message.compression)} crc: {message.crc} "
        f"isvalid: {'false' if reason else 'true'}{reason}",
        file=out,
    )
    if print_data and inner is not None:
        for m in inner:
            key = "" if m.key is None else f" key: {_text(m.key)}"
            print(
                f"| offset: {m.offset} timestamp: {m.timestamp} keySize: {_size(m.key)} "
                f"valueSize: {_size(m.value)} magic: {m.magic} crc: {m.crc}{key} "
                f"payload: {_text(m.value)}",
                file=out,
            )


def _size(value: bytes | None) -> int:
    return -1 if value is None else len(value)


def _text(value: bytes | None) -> str:
    return "null" if value is None else value.decode("utf-8", errors="backslashreplace")
