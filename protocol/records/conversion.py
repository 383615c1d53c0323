"""Between the legacy message formats (magic 0/1) and RecordBatch v2, both ways, as Kafka converts.

**Up** (:func:`up_convert`): a Produce v0-2 request's message set becomes one v2 batch of
base offset 0, which the log then appends like any produced batch (offsets assigned from
the log end, LogAppendTime stamped when the topic asks for it). The rules, in Kafka's
order:

- every top-level message whole and its CRC-32 right (CORRUPT_MESSAGE); a message cut
  short at the end of the set is left out, as Kafka trims a set's partial tail;
- every message of the first one's magic (INVALID_RECORD);
- each wrapper's inner messages: CRC-32 (CORRUPT_MESSAGE), the wrapper's magic, not
  compressed themselves (INVALID_RECORD);
- a codec of magic 0/1 (zstd: UNSUPPORTED_COMPRESSION_TYPE).

The batch holds every message of the set (a wrapper's inner messages in its place),
compressed with the codec of the last compressed message (none if none was: the codec
Kafka takes for compression.type=producer). Timestamps: magic 0 messages have none
(NO_TIMESTAMP, -1, which CreateTime keeps); magic 1 messages keep theirs; a LogAppendTime
topic overwrites them all on append. No producer id, no sequence: legacy producers are
neither idempotent nor transactional.

**Down** (:class:`DownConverter`): a Fetch v0-3 reads the v2 batches of the log as
messages of the magic it knows (v0-1: magic 0, v2-3: magic 1). Fed the bytes of whole
batches as they are read, it converts batch by batch:

- control batches (transaction markers) are left out; aborted transactional records are
  not (Fetch below v4 is READ_UNCOMMITTED, so an old consumer gets what Kafka gives it);
- an uncompressed batch becomes one message per record, from the fetch offset on (the
  records before it in the batch holding it are dropped); a compressed one becomes one
  wrapper of the same codec holding all its records (a wrapper is indivisible);
- offsets and timestamps are the records' (LogAppendTime: the batch's max timestamp);
  headers are dropped, as they have no place in magic 0/1;
- zstd has no legacy form: a zstd batch first in line raises
  :class:`UnsupportedCompression` (the partition's UNSUPPORTED_COMPRESSION_TYPE), one
  after converted data ends the conversion there.

The converter stops once its output reaches ``budget`` bytes; the first converted batch
is always kept whole, so a consumer makes progress, as Kafka sizes its lazy conversion
by the larger of the read and the first converted batch. Memory stays within the
``budget`` plus one batch, whatever the log holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from protocol.records.batch import (
    HEADER_SIZE,
    NO_TIMESTAMP,
    BatchHeader,
    Compression,
    InvalidBatch,
    TimestampType,
    iter_batches,
    read_header,
)
from protocol.records.builder import BatchBuilder
from protocol.records.compression import (
    DEFAULT_MAX_UNCOMPRESSED,
    UnsupportedCompression,
    decompress,
)
from protocol.records.legacy import (
    MAGIC_V0,
    LegacyMessage,
    LegacyRecord,
    deep_messages,
    iter_messages,
    write_message_set,
)
from protocol.records.legacy_compression import legacy_codec
from protocol.records.record import decode_records

Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True, slots=True)
class UpConverted:
    """A message set as one v2 batch (base offset 0, CreateTime): ``batch`` its bytes,
    ``header`` its parsed header, ``records`` how many messages were converted."""

    batch: bytearray
    header: BatchHeader
    records: int


def up_convert(
    message_set: Buffer, *, max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED
) -> UpConverted:
    """The v2 batch for a Produce v0-2 message set (see the module's rules); raises
    :class:`InvalidBatch` or a subclass (``error_code`` says which answer)."""
    shallow = [message for _, message in iter_messages(message_set)]
    if not shallow:
        raise InvalidBatch("no whole message in the message set")
    magic = shallow[0].magic
    codec = Compression.NONE
    messages: list[LegacyMessage] = []
    for message in shallow:
        if message.magic != magic:
            raise InvalidBatch(f"message of magic {message.magic} in a set of magic {magic}")
        kind = legacy_codec(message.compression)
        if kind is not Compression.NONE:
            codec = kind
        messages.extend(deep_messages(message, max_uncompressed))
    builder = BatchBuilder(compression=codec, timestamp_type=TimestampType.CREATE_TIME)
    for m in messages:
        builder.append(NO_TIMESTAMP if magic == MAGIC_V0 else m.timestamp, m.key, m.value)
    batch = builder.build()
    return UpConverted(batch, read_header(batch), len(messages))


#: messages written between two calls of a converter's ``pause``
PAUSE_EVERY = 64


class DownConverter:
    """Converts v2 batches to a legacy message set, fed as they are read (see the
    module doc). ``first_offset`` is the fetch offset; ``budget`` the output bytes
    after which it stops (the first batch's conversion is kept whatever its size)."""

    def __init__(
        self,
        to_magic: int,
        first_offset: int,
        budget: int,
        *,
        max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
        pause: Callable[[], None] | None = None,
    ) -> None:
        if to_magic not in (0, 1):
            raise ValueError(f"cannot down-convert to magic {to_magic}")
        self.to_magic = to_magic
        self.first_offset = first_offset
        self.budget = budget
        self.max_uncompressed = max_uncompressed
        #: called between pieces of work (every PAUSE_EVERY messages written, and after
        #: each batch): where a caller in a thread lets other threads run
        self.pause = pause
        self.output = bytearray()
        #: records written in the legacy format
        self.records = 0
        #: no more input is wanted (the budget is spent, or a batch cannot be converted)
        self.done = False

    def feed(self, buf: Buffer) -> int:
        """Convert the whole batches at the start of ``buf``; return the bytes consumed
        (a batch cut short at the end is left for the next feed, with more bytes)."""
        consumed = 0
        for pos, header in iter_batches(buf):
            if self.done or not self._convert(buf, pos, header):
                break
            consumed = pos + header.size
        return consumed

    def _convert(self, buf: Buffer, pos: int, header: BatchHeader) -> bool:
        """Convert (or skip) one batch; False when it was left for a later fetch."""
        if header.is_control:
            return True
        if header.compression == Compression.ZSTD:
            if not self.output:
                raise UnsupportedCompression(
                    f"the batch at offset {header.base_offset} is zstd-compressed, which "
                    f"magic {self.to_magic} cannot carry"
                )
            self.done = True
            return False
        stored = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
        if header.compression != Compression.NONE:
            section = decompress(header.compression, stored, self.max_uncompressed)
        else:
            section = bytes(stored)
        log_append = header.is_log_append_time
        base_offset, base_timestamp = header.base_offset, header.base_timestamp
        keep_all = header.compression != Compression.NONE
        records = [
            LegacyRecord(
                base_offset + r.offset_delta,
                header.max_timestamp if log_append else base_timestamp + r.timestamp_delta,
                r.key,
                r.value,
            )
            for r in decode_records(section, header.records_count)
            if keep_all or base_offset + r.offset_delta >= self.first_offset
        ]
        if not records:
            return True
        mark = len(self.output)
        # uncompressed messages stand alone: written in pieces, with pauses between
        step = len(records) if header.compression != Compression.NONE else PAUSE_EVERY
        for start in range(0, len(records), step):
            write_message_set(
                self.output,
                records[start : start + step],
                magic=self.to_magic,
                compression=header.compression,
                timestamp_type=(
                    TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
                ),
                log_append_time=header.max_timestamp if log_append else NO_TIMESTAMP,
            )
            if self.pause is not None:
                self.pause()
        if len(self.output) > self.budget and mark > 0:
            del self.output[mark:]  # over the budget: this batch waits for the next fetch
            self.done = True
            return False
        self.records += len(records)
        if len(self.output) >= self.budget:
            self.done = True
        return True


def down_convert(
    batches: Buffer, to_magic: int, first_offset: int, budget: int = 1 << 62
) -> bytearray:
    """The legacy message set for the whole v2 ``batches`` (one feed of a
    :class:`DownConverter`, by default without a budget)."""
    converter = DownConverter(to_magic, first_offset, budget)
    converter.feed(batches)
    return converter.output
