"""Pre-built load for ``minikafka perf produce`` (pure: no I/O).

A load generator that encodes a record per send measures the client, not the broker
(a Python producer tops out near 0.5-0.7 M records/s on the machines measured). Here every
distinct batch is built once, and every Produce request around it is encoded once per
(batch, partition); a send only stamps a fresh correlation id into the request's first
12 bytes (:class:`client.connection.PrebuiltRequest`). The broker assigns offsets
by rewriting each batch's base offset in its own copy, so one batch can be sent any
number of times.

Payloads are random uppercase letters, as Kafka's producer perf test writes, and each
distinct batch has its own, so compression sees realistic (not repeated) data.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from client.connection import PrebuiltRequest
from client.produce import produce_body
from protocol import ApiKey
from protocol.records import Compression, build_batch
from protocol.records.batch import HEADER_SIZE
from protocol.records.record import SimpleRecord

_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def record_overhead(record_size: int) -> int:
    """Bytes a record of ``record_size`` value bytes adds to a batch besides the value:
    the length varint, attributes, timestamp and offset deltas, a null key, the value
    length varint and a header count (at most 5 + 1 + 1 + 3 + 1 + 5 + 1)."""
    value_len_varint = 1 if record_size < 64 else 2 if record_size < 8192 else 3
    length_varint = 1 if record_size < 50 else 2 if record_size < 8150 else 3
    return length_varint + 1 + 1 + 2 + 1 + value_len_varint + 1


def records_per_batch(
    record_size: int, batch_size: int, throughput: float, linger_ms: float
) -> int:
    """How many records a producer with these settings puts in a batch: as many as fit
    in ``batch_size`` bytes, but, under a throughput cap, only as many as arrive within
    ``linger_ms`` (the batch is sent when linger expires). At least one."""
    fit = (batch_size - HEADER_SIZE) // (record_size + record_overhead(record_size))
    n = max(1, fit)
    if throughput > 0:
        n = min(n, max(1, math.ceil(throughput * linger_ms / 1000)))
    return n


def payloads(record_size: int, count: int, rng: random.Random) -> list[bytes]:
    return [bytes(rng.choices(_LETTERS, k=record_size)) for _ in range(count)]


def build_batches(
    record_size: int,
    per_batch: int,
    distinct: int,
    *,
    compression: Compression = Compression.NONE,
    timestamp_ms: int,
    seed: int = 0,
) -> list[bytes]:
    """``distinct`` batches of ``per_batch`` records of ``record_size`` random bytes."""
    rng = random.Random(seed)
    out = []
    for _ in range(distinct):
        records = [
            SimpleRecord(None, v, (), timestamp_ms) for v in payloads(record_size, per_batch, rng)
        ]
        out.append(bytes(build_batch(records, compression=compression)))
    return out


@dataclass(frozen=True)
class Send:
    """One send of the plan: a pre-built request and what it carries."""

    partition: int
    records: int
    #: record value bytes (what Kafka's tool counts for MB/s)
    payload_bytes: int
    request: PrebuiltRequest


class ProducePlan:
    """The requests of a produce run, built up front, handed out in a fixed order.

    Sends go round robin over the partitions, one batch each, cycling through the
    distinct batches. ``tail`` (when the record count is not a multiple of the batch)
    is the last send's shorter batch."""

    def __init__(
        self,
        topic: str,
        partitions: list[int],
        *,
        record_size: int,
        per_batch: int,
        distinct: int,
        acks: int,
        timeout_ms: int,
        api_version: int,
        timestamp_ms: int,
        compression: Compression = Compression.NONE,
        client_id: str = "minikafka-perf",
        seed: int = 0,
    ) -> None:
        if not partitions:
            raise ValueError(f"topic {topic} has no partitions")
        self.topic = topic
        self.partitions = partitions
        self.record_size = record_size
        self.per_batch = per_batch
        self._acks = acks
        self._timeout_ms = timeout_ms
        self._api_version = api_version
        self._client_id = client_id
        batches = build_batches(
            record_size, per_batch, distinct, compression=compression,
            timestamp_ms=timestamp_ms, seed=seed,
        )  # fmt: skip
        self.batch_bytes = sum(len(b) for b in batches) / len(batches)
        self._requests = [[self._encode(p, b) for p in partitions] for b in batches]
        self._compression = compression
        self._timestamp_ms = timestamp_ms
        self._seed = seed
        self._sent = 0

    def _encode(self, partition: int, batch: bytes) -> PrebuiltRequest:
        body = produce_body(self.topic, partition, batch, self._acks, self._timeout_ms)
        return PrebuiltRequest.encode(ApiKey.PRODUCE, self._api_version, self._client_id, body)

    def next(self, records_left: int | None = None) -> Send:
        """The next send; ``records_left`` below a full batch gets a batch of that size."""
        i = self._sent
        self._sent += 1
        p_index = i % len(self.partitions)
        partition = self.partitions[p_index]
        if records_left is not None and records_left < self.per_batch:
            (batch,) = build_batches(
                self.record_size, records_left, 1, compression=self._compression,
                timestamp_ms=self._timestamp_ms, seed=self._seed + 1,
            )  # fmt: skip
            request = self._encode(partition, batch)
            return Send(partition, records_left, records_left * self.record_size, request)
        request = self._requests[(i // len(self.partitions)) % len(self._requests)][p_index]
        return Send(partition, self.per_batch, self.per_batch * self.record_size, request)
