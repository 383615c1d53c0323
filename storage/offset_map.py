"""OffsetMap: the log cleaner's map from a record key to the last offset it was written at.

Kafka's cleaner keeps a 16-byte MD5 of each key in a fixed buffer
(``log.cleaner.dedupe.buffer.size`` shared by the cleaner threads). Here the keys are
16-byte BLAKE2b digests in a dict: two keys collide with probability about
``n**2 / 2**129``, negligible for any log, and a key of any length costs the same.

Memory: a Python dict entry with a 16-byte ``bytes`` key and an int offset costs about
:data:`BYTES_PER_ENTRY` bytes (``tests/bench/bench_cleaner.py`` measures it), so a
buffer of ``B`` bytes holds ``B * load_factor / BYTES_PER_ENTRY`` keys. A pass whose
dirty section has more distinct keys than that cleans as far as the map reaches and
leaves the rest to the next pass.
"""

from __future__ import annotations

from hashlib import blake2b

#: Measured size of one entry (dict slot, 16-byte bytes object, int), rounded up.
BYTES_PER_ENTRY = 160
#: Kafka's log.cleaner.io.buffer.load.factor: the share of slots a map fills.
LOAD_FACTOR = 0.9
DIGEST_SIZE = 16


def key_digest(key: bytes) -> bytes:
    return blake2b(key, digest_size=DIGEST_SIZE).digest()


class OffsetMap:
    """Key digest -> the largest offset put for it. Not safe across threads: each
    cleaner thread has its own."""

    def __init__(self, memory_bytes: int) -> None:
        self.slots = max(1, int(memory_bytes * LOAD_FACTOR) // BYTES_PER_ENTRY)
        self._map: dict[bytes, int] = {}
        #: the largest offset put since the last clear, -1 when none
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.slots

    def put(self, key: bytes, offset: int) -> None:
        """Remember ``offset`` as the latest of ``key`` (offsets are put in log order)."""
        self._map[key_digest(key)] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset put for ``key``, -1 when it was never put."""
        return self._map.get(key_digest(key), -1)

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1
