"""Keyed writes in small batches, for the log-compaction tests.

``produce_small_batches`` sends (key, value) records to partition 0 of a topic with
confluent-kafka, five records a batch, so that a topic with 1 KiB segments rolls many
times and the cleaner has segments to compact; it returns each delivery's error (None
when acknowledged), in delivery order.
"""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import KafkaError, Message, Producer

from tests.integration.cluster import TestCluster


def produce_small_batches(
    c: TestCluster, topic: str, records: Sequence[tuple[bytes | None, bytes | None]]
) -> list[KafkaError | None]:
    producer = Producer(
        {"bootstrap.servers": c.layout.bootstrap_servers, "linger.ms": 5, "batch.num.messages": 5}
    )
    errors: list[KafkaError | None] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        errors.append(err)

    for key, value in records:
        producer.produce(topic, value=value, key=key, partition=0, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    return errors
