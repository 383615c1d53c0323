"""What the broker's scrape-time metric collectors read, as small stand-ins: a storage Log
and the group coordinator's store (the metric tests wire them into a BrokerMetrics)."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.values import TopicPartition


@dataclass
class LogDouble:
    """What the log and LSO collectors read of a storage Log."""

    tp: TopicPartition
    directory: str
    size_in_bytes: int = 100
    log_start_offset: int = 0
    log_end_offset: int = 7
    high_watermark: int = 7
    last_stable_offset: int = 5  # an open transaction from offset 5
    segments: list[object] = field(default_factory=lambda: [object()])


class GroupStoreDouble:
    """What the group metrics read of the coordinator's store: one commit, 5 messages
    behind."""

    offsets_expired = 1
    offsets_removed = 1

    def committed_offset_count(self) -> int:
        return 1

    def lags(self) -> dict[tuple[str, str], int]:
        return {("g", "t"): 5}
