"""Names on disk: topic-name rules, partition directories, segment file names.

Layout (docs/architecture.md, "On disk")::

    <topic>-<partition>/                      a partition's log directory
    <topic>-<partition>.<uuid hex>-delete/    a deleted log waiting for the delete-logs task
    00000000000000368769.log|.index|.timeindex|.txnindex|.snapshot   named by an offset
    00000000000000368769.log.cleaned|.swap|.deleted                  with a state suffix

Topic names are checked before any path is built from them: 1 to 249 characters of
``[a-zA-Z0-9._-]``, and neither ``.`` nor ``..`` (Kafka's rules), so a name can never
escape the log directory.
"""

from __future__ import annotations

import re

from protocol.values import TopicPartition
from storage.errors import InvalidTopicError

MAX_TOPIC_NAME_LENGTH = 249
_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]+")

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SNAPSHOT_SUFFIX = ".snapshot"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"
#: the log cleaner's new segments: written as .cleaned, renamed .swap once complete
#: (the commit point), then renamed to the plain names in place of the old segments
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TEMP_SUFFIX = ".tmp"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"


def validate_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopicError` unless ``name`` is a legal Kafka topic name."""
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name is {len(name)} characters, the limit is {MAX_TOPIC_NAME_LENGTH}"
        )
    if _TOPIC_RE.fullmatch(name) is None:
        raise InvalidTopicError(
            f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_', '-'"
        )


def partition_dir_name(tp: TopicPartition) -> str:
    validate_topic_name(tp.topic)
    if tp.partition < 0:
        raise InvalidTopicError(f"partition {tp.partition} is negative")
    return f"{tp.topic}-{tp.partition}"


def parse_partition_dir(name: str) -> TopicPartition | None:
    """The partition a live log directory belongs to, or None for anything else
    (deleted or future logs, stray files, names that are not legal)."""
    if name.endswith(DELETE_DIR_SUFFIX) or name.endswith(FUTURE_DIR_SUFFIX):
        return None
    topic, sep, part = name.rpartition("-")
    if not sep or not part.isdigit() or not part.isascii():
        return None
    try:
        validate_topic_name(topic)
    except InvalidTopicError:
        return None
    return TopicPartition(topic, int(part))


def delete_dir_name(tp: TopicPartition, uuid_hex: str) -> str:
    return f"{tp.topic}-{tp.partition}.{uuid_hex}{DELETE_DIR_SUFFIX}"


def offset_file_name(offset: int, suffix: str) -> str:
    """``00000000000000368769.log``: the offset as 20 zero-padded digits."""
    return f"{offset:020d}{suffix}"


def parse_offset_file_name(name: str, suffix: str) -> int | None:
    if not name.endswith(suffix):
        return None
    stem = name[: -len(suffix)]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)
