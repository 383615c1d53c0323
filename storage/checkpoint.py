"""Checkpoint files, in Kafka's text formats, written atomically.

Offset checkpoints (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
replication-offset-checkpoint)::

    0                  version
    2                  number of entries
    orders 0 1200      topic partition offset, one entry a line
    orders 1 877

leader-epoch-checkpoint: the same with ``epoch start_offset`` entries.

partition.metadata::

    version: 0
    topic_id: <22-character base64 uuid>

Every write goes to ``<name>.tmp``, is fsynced, renamed over the old file, and the
directory is fsynced, so a crash leaves the old file or the new one, never a mix. A
checkpoint that cannot be parsed raises :class:`CheckpointError`; the LogManager treats
that like a missing file (full recovery), never as a reason to stop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from protocol.values import TopicPartition
from storage.errors import StorageError
from storage.names import TEMP_SUFFIX, validate_topic_name

CHECKPOINT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"


class CheckpointError(ValueError):
    """A checkpoint file exists but its content is not a valid checkpoint."""


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str, data: bytes, sync: bool = True) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, rename, directory fsync.
    ``sync=False`` skips both fsyncs (the caller syncs later with :func:`fsync_file`):
    readers still see the old file or the new one, and after a power loss the file may
    be empty or missing, which every reader here treats as absent."""
    tmp = path + TEMP_SUFFIX
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if sync:
            fsync_dir(os.path.dirname(os.path.abspath(path)))
    except OSError as exc:
        raise StorageError(f"writing {path}: {exc}") from exc


def fsync_file(path: str) -> None:
    """fsync a file written with ``sync=False`` and its directory; a file deleted in
    the meantime is not an error."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"opening {path}: {exc}") from exc
    try:
        os.fsync(fd)
        fsync_dir(os.path.dirname(os.path.abspath(path)))
    except OSError as exc:
        raise StorageError(f"syncing {path}: {exc}") from exc
    finally:
        os.close(fd)


def _read_lines(path: str) -> list[str] | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: {exc}") from exc


def _entries(path: str, lines: list[str], width: int) -> list[list[str]]:
    if len(lines) < 2:
        raise CheckpointError(f"{path}: missing version or count line")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointError(f"{path}: unknown version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: bad count line {lines[1]!r}") from None
    body = [ln.split() for ln in lines[2:] if ln.strip()]
    if count != len(body):
        raise CheckpointError(f"{path}: count says {count}, found {len(body)} entries")
    for fields in body:
        if len(fields) != width:
            raise CheckpointError(f"{path}: malformed entry {' '.join(fields)!r}")
    return body


def _format(entries: Iterable[str]) -> bytes:
    items = list(entries)
    text = f"{CHECKPOINT_VERSION}\n{len(items)}\n" + "".join(e + "\n" for e in items)
    return text.encode()


def read_offset_checkpoint(path: str) -> dict[TopicPartition, int]:
    """Entries of an offset checkpoint; empty when the file does not exist."""
    lines = _read_lines(path)
    if lines is None:
        return {}
    result: dict[TopicPartition, int] = {}
    for topic, part, off in _entries(path, lines, 3):
        try:
            validate_topic_name(topic)
            result[TopicPartition(topic, int(part))] = int(off)
        except ValueError as exc:
            raise CheckpointError(f"{path}: bad entry {topic} {part} {off}: {exc}") from None
    return result


def write_offset_checkpoint(path: str, offsets: Mapping[TopicPartition, int]) -> None:
    entries = (f"{tp.topic} {tp.partition} {off}" for tp, off in sorted(offsets.items()))
    write_atomically(path, _format(entries))


def read_epoch_checkpoint(path: str) -> list[tuple[int, int]]:
    """(epoch, start_offset) entries of a leader-epoch-checkpoint, in file order."""
    lines = _read_lines(path)
    if lines is None:
        return []
    try:
        return [(int(e), int(o)) for e, o in _entries(path, lines, 2)]
    except ValueError:
        raise CheckpointError(f"{path}: non-numeric entry") from None


def write_epoch_checkpoint(
    path: str, entries: Iterable[tuple[int, int]], sync: bool = True
) -> None:
    write_atomically(path, _format(f"{e} {o}" for e, o in entries), sync)


def read_partition_metadata(path: str) -> str | None:
    """The topic id stored in partition.metadata, or None when there is none."""
    lines = _read_lines(path)
    if lines is None:
        return None
    fields = dict(ln.split(":", 1) for ln in lines if ":" in ln)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise CheckpointError(f"{path}: not a version 0 partition.metadata")
    return fields["topic_id"]


def write_partition_metadata(path: str, topic_id: str, sync: bool = True) -> None:
    write_atomically(path, f"version: 0\ntopic_id: {topic_id}\n".encode(), sync)
