"""``minikafka dump-log FILE...``: print segment files, like kafka-dump-log.sh.

- ``.log``: one line per batch (base and last offset, record count, position, size,
  CRC and whether it is valid, codec, timestamps, producer id, epoch and sequences);
  with ``--print-data-log`` each batch's records follow, prefixed with ``|``. A file that
  ends in a torn or corrupt batch says where the valid part ends. Messages of magic 0
  and 1 (a log Kafka wrote before RecordBatch v2, or a captured message set) are read
  too, one line per message (a compressed wrapper's inner messages as its records), in
  the same file as v2 batches if need be (:mod:`tools.dump_legacy`).
- ``.index`` / ``.timeindex``: their entries (offsets made absolute with the base offset
  from the file name; an active segment's reserved, still zero, tail is not shown); with
  ``--verify-index-only`` nothing is printed but the entries that disagree with the .log
  beside them.
- ``.snapshot``: the producer state it holds.
- ``.txnindex``: the aborted transactions it lists; a control batch's record is printed
  as its marker (``endTxnMarker: ABORT coordinatorEpoch: 3``).
- ``cleaner-offset-checkpoint``: how far the log cleaner cleaned each partition. A
  ``.log`` of a partition in it says so too, and the gaps compaction left between
  batches are printed where they are (offsets no record holds any more).

Exit status 1 when a file cannot be read or verification finds a mismatch.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from typing import TextIO

from protocol.records.batch import (
    DELETE_HORIZON_MASK,
    BatchHeader,
    Compression,
    InvalidBatch,
    read_header,
    validate,
)
from protocol.records.control import ControlType, parse_control_record
from protocol.records.record import Record
from storage.checkpoint import CheckpointError, read_offset_checkpoint
from storage.cleaner_manager import CLEANER_CHECKPOINT
from storage.errors import StorageError
from storage.names import parse_partition_dir
from storage.reader import Damage, iter_file_batches
from storage.txn_index import decode_entries
from tools.dump_legacy import dump_legacy, legacy_at

_OFFSET_ENTRY = struct.Struct(">II")
_TIME_ENTRY = struct.Struct(">qI")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help=".log, .index, .timeindex or .snapshot files"
    )
    parser.add_argument(
        "--print-data-log", action="store_true", help="print the records of each batch"
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="check .index/.timeindex entries against their .log; print only mismatches",
    )


def run(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        status |= dump_file(path, sys.stdout, args.print_data_log, args.verify_index_only)
    return status


def dump_file(path: str, out: TextIO, print_data: bool = False, verify_only: bool = False) -> int:
    """Print one file; returns 0, or 1 when it cannot be read or does not verify."""
    print(f"Dumping {path}", file=out)
    base = _base_offset(path)
    try:
        if path.endswith(".log"):
            return _dump_log(path, out, print_data)
        if path.endswith(".index") or path.endswith(".timeindex"):
            if base is None:
                print(f"{path}: the file name is not a 20-digit offset", file=out)
                return 1
            if verify_only:
                return _verify_index(path, base, out)
            return _dump_index(path, base, out)
        if path.endswith(".snapshot"):
            return _dump_snapshot(path, out)
        if path.endswith(".txnindex"):
            return _dump_txn_index(path, out)
        if os.path.basename(path) == CLEANER_CHECKPOINT:
            return _dump_cleaner_checkpoint(path, out)
    except (OSError, StorageError) as exc:
        print(f"{path}: {exc}", file=out)
        return 1
    print(f"{path}: not a .log, index, .snapshot or checkpoint file", file=out)
    return 1


def _base_offset(path: str) -> int | None:
    stem = os.path.basename(path).split(".")[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


# -- .log ------------------------------------------------------------------------------------


def _dump_log(path: str, out: TextIO, print_data: bool) -> int:
    base = _base_offset(path)
    if base is not None:
        print(f"Log starting offset: {base}", file=out)
    cleaned = _cleaned_below(path)
    if cleaned is not None:
        print(f"Cleaner checkpoint: cleaned below offset {cleaned}", file=out)
    size = os.path.getsize(path)
    expected = base
    for item in iter_file_batches(path):
        if isinstance(item, Damage) and legacy_at(path, item.position):
            return dump_legacy(path, item.position, out, print_data, _print_batch)
        if isinstance(item, Damage):
            print(
                f"Found {size - item.position} invalid bytes at position {item.position}: "
                f"{item.reason}",
                file=out,
            )
            return 1
        if expected is not None and item.header.base_offset > expected:
            gap = (
                f"{expected}"
                if item.header.base_offset == expected + 1
                else (f"{expected} to {item.header.base_offset - 1}")
            )
            print(f"Offset gap: {gap} (removed by compaction)", file=out)
        expected = item.header.next_offset
        _print_batch(item.position, item.data, out, print_data)
    return 0


def _print_batch(pos: int, data: bytes, out: TextIO, print_data: bool) -> None:
    """One v2 batch's line (and its records with ``print_data``)."""
    header = read_header(data)
    valid, reason = True, ""
    try:
        validate(data)
    except InvalidBatch as exc:
        valid, reason = False, f" ({exc})"
    print(_batch_line(header, pos, valid) + reason, file=out)
    if print_data:
        _print_records(data, header, out)


def _cleaned_below(log_path: str) -> int | None:
    """The cleaner checkpoint's offset for the partition ``log_path`` belongs to."""
    partition_dir = os.path.dirname(os.path.abspath(log_path))
    tp = parse_partition_dir(os.path.basename(partition_dir))
    if tp is None:
        return None
    try:
        entries = read_offset_checkpoint(
            os.path.join(os.path.dirname(partition_dir), CLEANER_CHECKPOINT)
        )
    except CheckpointError:
        return None
    return entries.get(tp)


def _dump_cleaner_checkpoint(path: str, out: TextIO) -> int:
    try:
        entries = read_offset_checkpoint(path)
    except CheckpointError as exc:
        print(f"{path}: {exc}", file=out)
        return 1
    for tp, offset in sorted(entries.items()):
        print(f"topic: {tp.topic} partition: {tp.partition} cleanedBelowOffset: {offset}", file=out)
    return 0


def _batch_line(h: BatchHeader, pos: int, valid: bool) -> str:
    try:
        codec = Compression(h.compression).name.lower()
    except ValueError:
        codec = f"unknown({h.compression})"
    ts_type = "LogAppendTime" if h.is_log_append_time else "CreateTime"
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {str(h.is_transactional).lower()} "
        f"isControl: {str(h.is_control).lower()} position: {pos} "
        f"baseTimestamp: {h.base_timestamp} {ts_type}: {h.max_timestamp} size: {h.size} "
        f"magic: {h.magic} compresscodec: {codec} crc: {h.crc} isvalid: {str(valid).lower()}"
        + (f" deleteHorizonMs: {h.base_timestamp}" if h.attributes & DELETE_HORIZON_MASK else "")
    )


def _print_records(data: bytes, header: BatchHeader, out: TextIO) -> None:
    from protocol.records.builder import read_batch

    try:
        _, records = read_batch(data, check_crc=False)
    except InvalidBatch as exc:
        print(f"| cannot read the records: {exc}", file=out)
        return
    seq = header.base_sequence
    for record in records:
        sequence = -1 if seq < 0 else (seq + record.offset_delta) % (1 << 31)
        keys = [k for k, _ in record.headers]
        line = (
            f"| offset: {record.offset(header)} timestamp: {record.timestamp(header)} "
            f"keySize: {_size(record.key)} valueSize: {_size(record.value)} "
            f"sequence: {sequence} headerKeys: {keys}"
        )
        if header.is_control:
            line += _marker_text(record)
        else:
            if record.key is not None:
                line += f" key: {_text(record.key)}"
            line += f" payload: {_text(record.value)}"
        print(line, file=out)


def _size(value: bytes | None) -> int:
    return -1 if value is None else len(value)


def _text(value: bytes | None) -> str:
    return "null" if value is None else value.decode("utf-8", errors="backslashreplace")


# -- indexes ---------------------------------------------------------------------------------


def _read_entries(path: str) -> tuple[list[tuple[int, int]], int]:
    """Entries of an index file and the count of trailing bytes that form no entry.

    The index of a segment still taking records has space reserved past its last entry
    (storage.index grows the file ahead of the writes), which reads as zeros until the
    segment rolls and the file is trimmed. No real entry after the first is all zeros
    (relative offsets increase from the first), so the zero entries at the end are that
    reserved space, not entries: they are left out, as kafka-dump-log stops at them."""
    entry = _TIME_ENTRY if path.endswith(".timeindex") else _OFFSET_ENTRY
    with open(path, "rb") as f:
        data = f.read()
    whole = len(data) - len(data) % entry.size
    entries = [(int(a), int(b)) for a, b in entry.iter_unpack(data[:whole])]
    used = len(entries)
    while used > 1 and entries[used - 1] == (0, 0):
        used -= 1
    return entries[:used], len(data) - whole


def _dump_index(path: str, base: int, out: TextIO) -> int:
    entries, extra = _read_entries(path)
    for a, b in entries:
        if path.endswith(".timeindex"):
            print(f"timestamp: {a} offset: {base + b}", file=out)
        else:
            print(f"offset: {base + a} position: {b}", file=out)
    if extra:
        print(f"{extra} trailing bytes form no entry", file=out)
        return 1
    return 0


def _verify_index(path: str, base: int, out: TextIO) -> int:
    """Each offset entry must point at a batch start whose last offset is the entry's
    offset; each time entry's offset must be the last offset of a batch whose max
    timestamp is the entry's timestamp; both must increase."""
    log_path = path[: path.rindex(".")] + ".log"
    entries, extra = _read_entries(path)
    batches = {
        item.position: item.header
        for item in iter_file_batches(log_path)
        if not isinstance(item, Damage)
    }
    by_last = {h.last_offset: h for h in batches.values()}
    problems = [f"{extra} trailing bytes form no entry"] if extra else []
    prev: tuple[int, int] | None = None
    for a, b in entries:
        if path.endswith(".timeindex"):
            ts, offset = a, base + b
            h = by_last.get(offset)
            if h is None:
                problems.append(f"timestamp {ts}: no batch ends at offset {offset}")
            elif h.max_timestamp != ts:
                problems.append(
                    f"offset {offset}: index timestamp {ts}, log max timestamp {h.max_timestamp}"
                )
            if prev is not None and (ts <= prev[0] or offset < prev[1]):
                problems.append(f"entry ({ts}, {offset}) does not increase")
            prev = (ts, offset)
        else:
            offset, pos = base + a, b
            found = batches.get(pos)
            if found is None:
                problems.append(f"offset {offset}: no batch starts at position {pos}")
            elif found.last_offset != offset:
                problems.append(
                    f"Index offset: {offset}, log offset: {found.last_offset} (position {pos})"
                )
            if prev is not None and (offset <= prev[0] or pos <= prev[1]):
                problems.append(f"entry ({offset}, {pos}) does not increase")
            prev = (offset, pos)
    if problems:
        print(f"Mismatches in {path}:", file=out)
        for p in problems:
            print(f"  {p}", file=out)
        return 1
    print(f"{len(entries)} entries agree with {log_path}", file=out)
    return 0


# -- producer snapshots ----------------------------------------------------------------------


def _dump_snapshot(path: str, out: TextIO) -> int:
    from storage.producer_state import decode_snapshot

    with open(path, "rb") as f:
        data = f.read()
    try:
        producers = decode_snapshot(data)
    except ValueError as exc:
        print(f"{path}: {exc}", file=out)
        return 1
    for entry in producers.values():
        print(
            f"producerId: {entry.producer_id} producerEpoch: {entry.epoch} "
            f"lastTimestamp: {entry.last_timestamp}",
            file=out,
        )
        for b in entry.batches:
            print(
                f"| firstSequence: {b.first_seq} lastSequence: {b.last_seq} "
                f"firstOffset: {b.first_offset} lastOffset: {b.last_offset} "
                f"timestamp: {b.timestamp}",
                file=out,
            )
    return 0


# -- transactions ----------------------------------------------------------------------------


def _marker_text(record: Record) -> str:
    try:
        marker = parse_control_record(record)
    except InvalidBatch as exc:
        return f" unreadable control record: {exc}"
    kind = marker.type.name if isinstance(marker.type, ControlType) else str(marker.type)
    return f" endTxnMarker: {kind} coordinatorEpoch: {marker.coordinator_epoch}"


def _dump_txn_index(path: str, out: TextIO) -> int:
    with open(path, "rb") as f:
        data = f.read()
    try:
        entries = decode_entries(data)
    except ValueError as exc:
        print(f"{path}: {exc}", file=out)
        return 1
    for e in entries:
        print(
            f"version: 0 producerId: {e.producer_id} firstOffset: {e.first_offset} "
            f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}",
            file=out,
        )
    return 0
