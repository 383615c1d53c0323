"""Down-conversion of one partition's fetched region: read in bounded chunks, convert as read.

A Fetch below v4 gets the same file region from the log as any fetch (the leader's read,
within the partition's and the response's byte limits); instead of handing it to
sendfile, :func:`convert_region` reads it from the segment file chunk by chunk and feeds
a :class:`~protocol.records.conversion.DownConverter`, which stops once its output
reaches the region's length (the first batch kept whole). So what a conversion holds at
once is one chunk (or one batch, when a batch is larger) and its output, never more
than the read allowed: the log is never loaded whole, and a response's conversions
together stay within the response's max bytes plus one batch per partition, as Kafka's
lazy conversion sizes them.

It runs in a worker thread (the handler's ``run_blocking``): reads may miss the page
cache, and the conversion decompresses and compresses. Python code holds the GIL, which
the event loop needs too: the converter pauses every few dozen messages to give it up,
so consumers served beside a conversion wait for one piece of it, not for the
interpreter's 5 ms switch interval at every turn of the loop. The counts it returns are
recorded on the event loop.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from protocol.records.batch import LOG_OVERHEAD, peek_offset_and_length
from protocol.records.conversion import DownConverter
from storage import FileRegion
from storage.errors import StorageError

#: bytes read from the segment at a time (more when one batch is larger)
CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True)
class Converted:
    """A region's conversion: the legacy message set, the records written in it, and
    the seconds it took."""

    records_bytes: bytes
    records: int
    seconds: float


def convert_region(region: FileRegion, to_magic: int, fetch_offset: int) -> Converted:
    """The batches of ``region`` as a message set of ``to_magic`` (see the module doc).
    Raises StorageError when the file cannot be read, InvalidBatch (or
    UnsupportedCompression) when a batch cannot be converted."""
    start = time.perf_counter()
    converter = DownConverter(to_magic, fetch_offset, region.length, pause=_let_others_run)
    pending = bytearray()
    read = 0
    while read < region.length and not converter.done:
        want = CHUNK
        if len(pending) >= LOG_OVERHEAD:
            # a batch larger than what is pending: read the rest of it at once
            _, length = peek_offset_and_length(pending)
            want = max(want, LOG_OVERHEAD + length - len(pending))
        want = min(want, region.length - read)
        data = _pread(region, want, read)
        read += len(data)
        pending += data
        used = converter.feed(pending)
        del pending[:used]
    return Converted(bytes(converter.output), converter.records, time.perf_counter() - start)


def _let_others_run() -> None:
    """Give up the GIL for a moment: the event loop, waiting for it after a poll, takes
    it now rather than at the end of the interpreter's switch interval (5 ms), so a
    conversion delays the loop by one piece of work at most."""
    time.sleep(0)


def _pread(region: FileRegion, size: int, skip: int) -> bytes:
    try:
        data = os.pread(region.fd, size, region.position + skip)
    except OSError as exc:
        raise StorageError(f"reading {size} bytes at {region.position + skip}: {exc}") from exc
    if not data:
        raise StorageError(f"segment file ended {region.length - skip} bytes before its region")
    return data
