"""Leader-epoch cache (KIP-101): which leader epoch wrote which range of offsets.

Entries ``(epoch, start_offset)``, both strictly increasing: epoch ``e`` wrote the
offsets from its start offset up to the next entry's start offset (or the log end).
Followers ask the leader for the end offset of their latest epoch (OffsetForLeaderEpoch)
and truncate to it, which is what keeps replicas from diverging after a leader change.

Persisted in ``leader-epoch-checkpoint`` (see :mod:`storage.checkpoint`) whenever the
entries change; new epochs are rare (leader changes), so the fsync is too.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right

from storage.checkpoint import CheckpointError, read_epoch_checkpoint, write_epoch_checkpoint

log = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """Not safe across threads: used by the thread that appends and truncates."""

    def __init__(self, path: str, entries: list[tuple[int, int]] | None = None) -> None:
        self.path = path
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        for epoch, offset in entries or []:
            self._add(epoch, offset)

    @classmethod
    def load(cls, path: str) -> LeaderEpochCache:
        try:
            entries = read_epoch_checkpoint(path)
        except CheckpointError as exc:
            log.warning("ignoring unreadable leader epoch checkpoint: %s", exc)
            entries = []
        return cls(path, entries)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._offsets))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    @property
    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._offsets[0]) if self._epochs else None

    def _add(self, epoch: int, start_offset: int) -> None:
        # An entry that is not above the last ones (epoch or offset) replaces them.
        while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
            self._epochs.pop()
            self._offsets.pop()
        self._epochs.append(epoch)
        self._offsets.append(start_offset)

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` if it is a new epoch.
        Returns whether the cache changed (and was written)."""
        if epoch < 0 or (self._epochs and epoch <= self._epochs[-1]):
            return False
        self._add(epoch, start_offset)
        self.flush()
        return True

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch: the end offset of the largest
        epoch <= ``requested_epoch``, which is the start offset of the next epoch, or
        the log end offset for the latest epoch."""
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            # Older than anything we know: the data is gone, answer with the first start.
            return requested_epoch, self._offsets[0]
        return self._epochs[higher - 1], self._offsets[higher]

    def epoch_for_offset(self, offset: int) -> int:
        i = bisect_right(self._offsets, offset)
        return self._epochs[i - 1] if i else UNDEFINED_EPOCH

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after ``end_offset`` (log truncated to it)."""
        keep = bisect_left(self._offsets, end_offset)
        if keep < len(self._offsets):
            del self._epochs[keep:], self._offsets[keep:]
            self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Log start moved to ``start_offset``: drop the epochs wholly before it and move
        the start of the one that contains it."""
        below = bisect_right(self._offsets, start_offset) - 1
        if below < 0 or (below == 0 and self._offsets[0] == start_offset):
            return
        del self._epochs[:below], self._offsets[:below]
        self._offsets[0] = start_offset
        self.flush()

    def clear(self) -> None:
        self._epochs.clear()
        self._offsets.clear()
        self.flush()

    def flush(self) -> None:
        write_epoch_checkpoint(self.path, self.entries)
