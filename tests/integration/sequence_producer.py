"""The producer of the failover tests and the replication bench, and the checks of what it
wrote, judged from the outside as a user would (none of it pytest-specific):

- :class:`SequenceProducer`: one idempotent confluent-kafka producer in a thread of its own,
  writing the values ``b"0", b"1", ...`` round robin over a topic's partitions at a steady
  rate for as long as a test runs, and remembering what it sent where, what was
  acknowledged at which offset, and when.
- :func:`consume_all`: every record of a topic read back with a confluent-kafka consumer.
- :func:`delivery_problems` (pure): what a consumed log says about those writes -- lost
  acknowledged records, duplicates, reordering, gaps, records nobody sent.

A write's acknowledgement time is what a failover is measured by: after a leader dies, the
first record *enqueued after the death* that is acknowledged can only have been accepted
by a new leader (:meth:`SequenceProducer.first_ack_after`).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.polling import wait_until

# --- a producer that runs throughout -------------------------------------------------------------


@dataclass
class Ack:
    sequence: int
    #: -1 when the delivery report named no offset. librdkafka does that for an
    #: "implicit" acknowledgement: a request of the record failed with an uncertain
    #: outcome (REQUEST_TIMED_OUT, a lost connection) and a later batch of the same
    #: producer was acknowledged before the retry was. The broker answers every
    #: acknowledged write, retried duplicates too, with its offset, so this only happens
    #: when a write waited longer than the producer's request timeout: a failover that
    #: hung. ``delivery_problems`` reports it.
    offset: int
    enqueued: float  # time.monotonic() when produce() was called
    acknowledged: float  # time.monotonic() when the delivery report arrived


@dataclass
class Failure:
    sequence: int
    partition: int
    error: str


@dataclass
class _Book:
    sent: dict[int, list[int]] = field(default_factory=dict)
    acked: dict[int, list[Ack]] = field(default_factory=dict)
    failed: list[Failure] = field(default_factory=list)
    fatal: list[str] = field(default_factory=list)


class SequenceProducer:
    """An idempotent acks=all confluent-kafka producer writing ``b"<n>"`` for n = 0, 1, ...
    to partition ``n % partitions`` at ``rate`` records/s, in a thread, until stopped.

    ``message.timeout.ms`` is long (a minute) and retries unbounded, as a producer that
    must not lose data is configured: a failover then shows as a pause, never as a
    failed delivery, unless the cluster answers with a non-retriable error.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        *,
        rate: float = 500.0,
        value_size: int = 0,
        config: Mapping[str, object] | None = None,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.value_size = value_size
        self._config: dict[str, object] = {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 1000,
            "log_level": 0,
            "error_cb": self._on_error,
            **(config or {}),
        }
        self._lock = threading.Lock()
        self._book = _Book()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sequence-producer", daemon=True)
        self._error: BaseException | None = None
        self.next_sequence = 0

    def __enter__(self) -> SequenceProducer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self, flush_timeout: float = 90.0) -> None:
        """Stop producing and wait for every outstanding delivery report."""
        self._stop.set()
        self._thread.join(flush_timeout + 10)
        if self._thread.is_alive():
            raise AssertionError("the producer thread did not finish flushing")
        self.check()

    def _on_error(self, err: Any) -> None:
        """librdkafka's client-level errors: a broker going away is expected here and
        retried; a fatal one (the idempotent producer gave up) ends the producer."""
        if err.fatal():
            with self._lock:
                self._book.fatal.append(str(err))

    def check(self) -> None:
        """Raise if the producer hit a fatal error or its thread died."""
        with self._lock:
            fatal = list(self._book.fatal)
        if fatal:
            raise AssertionError(f"the producer hit a fatal error: {fatal[0]}")
        if self._error is not None:
            raise AssertionError(f"the producer thread failed: {self._error!r}")

    def _value(self, n: int) -> bytes:
        text = str(n).encode()
        return text.ljust(self.value_size, b".") if self.value_size else text

    def _run(self) -> None:
        from confluent_kafka import Producer

        try:
            producer = Producer(self._config)
            start = time.monotonic()
            while not self._stop.is_set() and not self._book.fatal:
                n = self.next_sequence
                ahead = n / self.rate - (time.monotonic() - start)
                if ahead > 0:
                    producer.poll(min(ahead, 0.01))  # pacing: serves delivery reports meanwhile
                    continue
                partition = n % self.partitions
                enqueued = time.monotonic()
                try:
                    producer.produce(
                        self.topic,
                        self._value(n),
                        partition=partition,
                        on_delivery=self._reporter(n, partition, enqueued),
                    )
                except BufferError:
                    producer.poll(0.01)
                    continue
                with self._lock:
                    self._book.sent.setdefault(partition, []).append(n)
                self.next_sequence = n + 1
                producer.poll(0)
            left = producer.flush(60)
            if left:
                raise AssertionError(f"{left} records still undelivered after a minute's flush")
        except BaseException as exc:  # reported by stop()
            self._error = exc

    def _reporter(self, n: int, partition: int, enqueued: float) -> Any:
        def report(err: Any, msg: Any) -> None:
            now = time.monotonic()
            with self._lock:
                if err is not None:
                    self._book.failed.append(Failure(n, partition, str(err)))
                else:
                    offset = msg.offset()
                    ack = Ack(n, -1 if offset is None or offset < 0 else offset, enqueued, now)
                    self._book.acked.setdefault(partition, []).append(ack)

        return report

    # -- what happened --------------------------------------------------------------------

    def sent(self) -> dict[int, list[int]]:
        with self._lock:
            return {p: list(v) for p, v in self._book.sent.items()}

    def acked(self) -> dict[int, list[Ack]]:
        with self._lock:
            return {p: list(v) for p, v in self._book.acked.items()}

    def failed(self) -> list[Failure]:
        with self._lock:
            return list(self._book.failed)

    def acked_count(self, partition: int) -> int:
        self.check()
        with self._lock:
            return len(self._book.acked.get(partition, ()))

    def first_ack_after(self, partitions: Iterable[int], since: float) -> Ack | None:
        """The first acknowledgement (by arrival) of a record enqueued at or after
        ``since`` on any of ``partitions``; None while there is none. Raises once the
        producer has failed (a wait on it then reports why)."""
        self.check()
        wanted = set(partitions)
        with self._lock:
            found = [
                a
                for p, acks in self._book.acked.items()
                if p in wanted
                for a in acks
                if a.enqueued >= since
            ]
        return min(found, key=lambda a: a.acknowledged) if found else None


# --- what the consumers see ----------------------------------------------------------------------


def consume_all(
    bootstrap: str, topic: str, partitions: int, ends: Mapping[int, int], timeout: float = 60
) -> dict[int, list[tuple[int, bytes]]]:
    """Every record (offset, value) of each partition from its start up to ``ends[p]``
    (exclusive; the high watermarks), read with a confluent-kafka consumer."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"chaos-check-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "log_level": 0,
        }
    )
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    position = {p: 0 for p in range(partitions)}
    try:
        consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])

        def caught_up() -> bool:
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                if msg.error() is not None:
                    continue
                p, offset = msg.partition(), msg.offset()
                if p is None or offset is None:
                    continue
                if offset < ends[p]:
                    out[p].append((offset, bytes(msg.value() or b"")))
                position[p] = max(position[p], offset + 1)
            return all(position[p] >= ends[p] for p in range(partitions))

        wait_until(caught_up, timeout, f"a consumer to read {topic} up to {dict(ends)}")
    finally:
        consumer.close()
    return out


def delivery_problems(
    sent: Mapping[int, Sequence[int]],
    acked: Mapping[int, Sequence[Ack]],
    consumed: Mapping[int, Sequence[tuple[int, bytes]]],
) -> list[str]:
    """What is wrong with the consumed log of one producer's writes (empty: nothing). Pure.

    Per partition: every acknowledged record is read back at the offset it was
    acknowledged at (no loss; an acknowledgement without an offset is a problem too: see
    ``Ack.offset``, the record is then only looked for anywhere); no
    value is read twice (no duplicates); values are read in the order they were sent (no
    reordering); the values read are exactly a prefix of those sent (no gaps: a record is
    never missing while a later one is there); and nothing is read that this producer did
    not send. Values are decimal sequence numbers,
    possibly padded with dots.
    """
    problems: list[str] = []
    for p in sorted(set(sent) | set(consumed)):
        order = list(sent.get(p, ()))
        records = list(consumed.get(p, ()))
        values: list[int] = []
        for offset, raw in records:
            text = raw.rstrip(b".")
            if not text.isdigit():
                problems.append(f"partition {p} offset {offset}: a value nobody sent: {raw[:40]!r}")
                continue
            values.append(int(text))
        at_offset = {offset: raw for offset, raw in records}
        read = set(values)
        for ack in acked.get(p, ()):
            if ack.offset < 0:
                problems.append(
                    f"partition {p}: record {ack.sequence} acknowledged without an offset "
                    "(a request of it failed with an uncertain outcome, a timeout?)"
                )
                if ack.sequence not in read:  # no offset to look at: is it there at all?
                    problems.append(f"partition {p}: record {ack.sequence} acknowledged, not read")
                continue
            found = at_offset.get(ack.offset)
            if found is None or found.rstrip(b".") != str(ack.sequence).encode():
                problems.append(
                    f"partition {p}: record {ack.sequence} acknowledged at offset {ack.offset}"
                    f" reads back as {found!r}"
                )
        twice = sorted(v for v, n in Counter(values).items() if n > 1)
        if twice:
            problems.append(f"partition {p}: duplicates {twice[:10]}")
        if values != order[: len(values)]:
            where = next(
                (i for i, (a, b) in enumerate(zip(values, order, strict=False)) if a != b),
                min(len(values), len(order)),
            )
            problems.append(
                f"partition {p}: read {values[where : where + 5]} at position {where} where "
                f"{order[where : where + 5]} was sent (a gap, reorder or stranger)"
            )
    return problems
