"""Normal client flows, run once per Python client against the recording proxy.

Usage: python -m tests.tools.client_flows {confluent,kafka-python,aiokafka} BOOTSTRAP PREFIX

Each flow does what applications do: admin calls (create/describe/alter topics, groups,
cluster), producing with every compression codec and acks 0/1/all (and idempotently),
consuming in a group with commits, offset queries. Every step is bounded in time and a
failing step is reported on stderr and skipped, so one unsupported call cannot hide the
frames of the others. Record payloads are tiny on purpose (the frames are committed).

Topic names: PREFIX-t1 (4 partitions, produced to and consumed from), PREFIX-t2 (2
partitions, grown to 6 by CreatePartitions, then deleted); group PREFIX-g.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# SASL/PLAIN over plaintext: SaslHandshake then SaslAuthenticate, answered by the fake.
SASL_PLAIN = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "golden",
    "sasl_plain_password": "golden",
}
SASL_PLAIN_LIBRDKAFKA = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanisms": "PLAIN",
    "sasl.username": "golden",
    "sasl.password": "golden",
}
STEP_TIMEOUT = 20.0


def step(name: str, fn: Callable[[], Any]) -> Any:
    started = time.monotonic()
    try:
        result = fn()
        print(f"[ok {time.monotonic() - started:.1f}s] {name}", file=sys.stderr)
        return result
    except Exception:
        print(f"[FAILED] {name}: {traceback.format_exc(limit=3)}", file=sys.stderr)
        return None


async def astep(name: str, coro: Any) -> Any:
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(coro, STEP_TIMEOUT)
        print(f"[ok {time.monotonic() - started:.1f}s] {name}", file=sys.stderr)
        return result
    except Exception:
        print(f"[FAILED] {name}: {traceback.format_exc(limit=3)}", file=sys.stderr)
        return None


def payload(i: int) -> bytes:
    # Repetitive, so that every codec actually compresses it (librdkafka and kafka-python
    # send a batch uncompressed when compression would not make it smaller).
    return (f"golden-{i} " * 30).encode()


# -- confluent-kafka (librdkafka bundled) -----------------------------------------------------


def confluent_flow(bootstrap: str, prefix: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
    )

    t1, t2, group = f"{prefix}-t1", f"{prefix}-t2", f"{prefix}-g"
    base = {"bootstrap.servers": bootstrap, "client.id": f"{prefix}-client"}
    admin = AdminClient(dict(base))

    def wait_all(futures: dict[Any, Any]) -> list[Any]:
        return [f.result(timeout=STEP_TIMEOUT) for f in futures.values()]

    step(
        "create_topics",
        lambda: wait_all(
            admin.create_topics([NewTopic(t1, 4, 1), NewTopic(t2, 2, 1)], operation_timeout=10)
        ),
    )
    step("list_topics", lambda: admin.list_topics(timeout=STEP_TIMEOUT))
    step(
        "describe_configs",
        lambda: wait_all(
            admin.describe_configs([ConfigResource("topic", t1), ConfigResource("broker", "1")])
        ),
    )
    step(
        "describe_cluster",
        lambda: admin.describe_cluster(request_timeout=STEP_TIMEOUT).result(timeout=STEP_TIMEOUT),
    )
    step("create_partitions", lambda: wait_all(admin.create_partitions([NewPartitions(t2, 6)])))

    for codec in CODECS:

        def produce(codec: str = codec, acks: str = "all") -> None:
            p = Producer({**base, "compression.codec": codec, "acks": acks, "linger.ms": 5})
            for i in range(3):
                p.produce(t1, value=payload(i), key=f"k{i}".encode(), partition=i % 2)
            left = p.flush(STEP_TIMEOUT)
            assert left == 0, f"{left} messages not delivered"

        step(f"produce {codec} acks=all", produce)

    def produce_acks(acks: str) -> None:
        p = Producer({**base, "acks": acks, "linger.ms": 5})
        p.produce(t1, value=payload(9), partition=2)
        assert p.flush(STEP_TIMEOUT) == 0

    for acks in ("0", "1"):
        step(f"produce acks={acks}", functools.partial(produce_acks, acks))

    def idempotent() -> None:
        p = Producer({**base, "enable.idempotence": True, "linger.ms": 5})
        for i in range(2):
            p.produce(t1, value=payload(i), partition=3)
        assert p.flush(STEP_TIMEOUT) == 0

    step("produce idempotent", idempotent)

    def consume(first: bool, extra: dict[str, Any] | None = None) -> None:
        c = Consumer(
            {
                **base,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 300,
                "fetch.wait.max.ms": 100,
                **(extra or {}),
            }
        )
        c.subscribe([t1])
        got = 0
        hard_deadline = time.monotonic() + STEP_TIMEOUT
        deadline = hard_deadline
        while time.monotonic() < min(deadline, hard_deadline):
            msg = c.poll(0.3)
            if msg is not None and msg.error() is None:
                got += 1
            if deadline == hard_deadline and c.assignment() and (got >= 6 or not first):
                # Assigned: stay long enough for heartbeats and metadata refreshes.
                deadline = time.monotonic() + 2.5
        if first:
            assert got > 0, "nothing consumed"
            c.commit(asynchronous=False)
            c.committed([TopicPartition(t1, 0)], timeout=STEP_TIMEOUT)
            c.get_watermark_offsets(TopicPartition(t1, 0), timeout=STEP_TIMEOUT)
            c.offsets_for_times([TopicPartition(t1, 0, 0)], timeout=STEP_TIMEOUT)
        c.close()

    step("consume in group", lambda: consume(True))
    # A second member life finds the committed offsets (and validates their epochs).
    step("consume again from committed offsets", lambda: consume(False))

    # After a (simulated) leader change: positions are validated (OffsetForLeaderEpoch).
    def produce_more() -> None:
        p = Producer({**base, "linger.ms": 5})
        for i in range(4):
            p.produce(t1, value=payload(i), partition=i)
        assert p.flush(STEP_TIMEOUT) == 0

    # After (simulated) leader changes positions are validated (OffsetForLeaderEpoch).
    step("produce more", produce_more)
    step(
        "consume with leader epochs moving",
        lambda: consume(
            False,
            {"client.id": f"{prefix}-client-epoch", "topic.metadata.refresh.interval.ms": 500},
        ),
    )

    step(
        "list_consumer_groups",
        lambda: admin.list_consumer_groups(request_timeout=STEP_TIMEOUT).result(
            timeout=STEP_TIMEOUT
        ),
    )
    step(
        "describe_consumer_groups",
        lambda: wait_all(admin.describe_consumer_groups([group], request_timeout=STEP_TIMEOUT)),
    )
    step(
        "list_offsets",
        lambda: wait_all(
            admin.list_offsets(
                {
                    TopicPartition(t1, 0): OffsetSpec.latest(),  # type: ignore[no-untyped-call]
                    TopicPartition(t1, 1): OffsetSpec.max_timestamp(),  # type: ignore[no-untyped-call]
                },
                request_timeout=STEP_TIMEOUT,
            )
        ),
    )
    step(
        "delete_records",
        lambda: wait_all(
            admin.delete_records([TopicPartition(t1, 1, 1)], request_timeout=STEP_TIMEOUT)
        ),
    )
    step("delete_topics", lambda: wait_all(admin.delete_topics([t2], operation_timeout=10)))
    step(
        "SASL PLAIN metadata",
        lambda: Producer({**base, **SASL_PLAIN_LIBRDKAFKA}).list_topics(timeout=STEP_TIMEOUT),
    )


# -- kafka-python 3 ---------------------------------------------------------------------------


def kafka_python_flow(bootstrap: str, prefix: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import (
        ConfigResource,
        ConfigResourceType,
        KafkaAdminClient,
        NewPartitions,
        NewTopic,
    )

    t1, t2, group = f"{prefix}-t1", f"{prefix}-t2", f"{prefix}-g"
    base: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "client_id": f"{prefix}-client",
        "request_timeout_ms": 15000,
    }
    admin = step("admin connect", lambda: KafkaAdminClient(**base))
    if admin is not None:
        step("create_topics", lambda: admin.create_topics([NewTopic(t1, 4, 1), NewTopic(t2, 2, 1)]))
        step(
            "describe_configs",
            lambda: admin.describe_configs(
                [
                    ConfigResource(ConfigResourceType.TOPIC, t1),
                    ConfigResource(ConfigResourceType.BROKER, "1"),
                ]
            ),
        )
        step("describe_cluster", lambda: admin.describe_cluster())
        step("create_partitions", lambda: admin.create_partitions({t2: NewPartitions(6)}))

    for codec in [None, "gzip", "snappy", "lz4", "zstd"]:

        def produce(codec: str | None = codec) -> None:
            p = KafkaProducer(**base, compression_type=codec, linger_ms=5)
            for i in range(3):
                p.send(t1, value=payload(i), key=f"k{i}".encode(), partition=i % 2)
            p.flush(timeout=STEP_TIMEOUT)
            p.close(timeout=5)

        step(f"produce idempotent (default) {codec}", produce)

    for acks in (0, 1, "all"):

        def produce_acks(acks: Any = acks) -> None:
            p = KafkaProducer(**base, acks=acks, enable_idempotence=False, linger_ms=5)
            p.send(t1, value=payload(9), partition=2)
            p.flush(timeout=STEP_TIMEOUT)
            p.close(timeout=5)

        step(f"produce acks={acks} not idempotent", produce_acks)

    def consume(
        first: bool, extra: dict[str, Any] | None = None, pause_after_records: bool = False
    ) -> None:
        c = KafkaConsumer(
            t1,
            **{**base, **(extra or {})},
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            fetch_max_wait_ms=100,
            session_timeout_ms=10000,
            heartbeat_interval_ms=300,
        )
        got = 0
        hard_deadline = time.monotonic() + STEP_TIMEOUT
        deadline = hard_deadline
        while time.monotonic() < min(deadline, hard_deadline):
            for records in c.poll(timeout_ms=300).values():
                got += len(records)
            if deadline == hard_deadline and c.assignment() and (got >= 6 or not first):
                # Assigned: stay long enough for heartbeats and metadata refreshes.
                deadline = time.monotonic() + 2.5
            if pause_after_records and got:
                # kafka-python forgets a position's epoch on an empty fetch; paused
                # partitions keep it, so a newer leader epoch makes them validate.
                c.pause(*c.assignment())
        if first:
            assert got > 0, "nothing consumed"
            c.commit()
            tp = TopicPartition(t1, 0)
            c.committed(tp)
            c.end_offsets([tp])
            c.offsets_for_times({tp: 0})
        c.close()

    step("consume in group", lambda: consume(True))
    step("consume again from committed offsets", lambda: consume(False))

    def produce_more() -> None:
        p = KafkaProducer(**base, linger_ms=5)
        for i in range(4):
            p.send(t1, value=payload(i), partition=i)
        p.flush(timeout=STEP_TIMEOUT)
        p.close(timeout=5)

    # After (simulated) leader changes positions are validated (OffsetForLeaderEpoch).
    step("produce more", produce_more)
    step(
        "consume with leader epochs moving",
        lambda: consume(
            False, {"client_id": f"{prefix}-client-epoch", "metadata_max_age_ms": 500}, True
        ),
    )

    if admin is not None:
        step("list_groups", lambda: admin.list_groups())
        step("describe_groups", lambda: admin.describe_groups([group]))
        step("list_group_offsets", lambda: admin.list_group_offsets(group))
        step("delete_records", lambda: admin.delete_records({TopicPartition(t1, 1): 1}))
        step("delete_topics", lambda: admin.delete_topics([t2]))
        step("admin close", admin.close)

    def sasl() -> None:
        p = KafkaProducer(**base, **SASL_PLAIN)
        p.partitions_for(t1)
        p.close(timeout=5)

    step("SASL PLAIN metadata", sasl)


# -- aiokafka ---------------------------------------------------------------------------------


async def aiokafka_flow(bootstrap: str, prefix: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    t1, t2, group = f"{prefix}-t1", f"{prefix}-t2", f"{prefix}-g"
    base: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "client_id": f"{prefix}-client",
        "request_timeout_ms": 15000,
    }
    admin = AIOKafkaAdminClient(**base)
    await astep("admin start", admin.start())
    await astep("create_topics", admin.create_topics([NewTopic(t1, 4, 1), NewTopic(t2, 2, 1)]))
    await astep(
        "describe_configs",
        admin.describe_configs(
            [
                ConfigResource(ConfigResourceType.TOPIC, t1),
                ConfigResource(ConfigResourceType.BROKER, "1"),
            ]
        ),
    )
    await astep("describe_cluster", admin.describe_cluster())
    await astep("create_partitions", admin.create_partitions({t2: NewPartitions(6)}))

    for codec in [None, "gzip", "snappy", "lz4", "zstd"]:

        async def produce(codec: str | None = codec) -> None:
            p = AIOKafkaProducer(**base, compression_type=codec, linger_ms=5)
            await p.start()
            try:
                for i in range(3):
                    await p.send(t1, value=payload(i), key=f"k{i}".encode(), partition=i % 2)
                await p.flush()
            finally:
                await p.stop()

        await astep(f"produce {codec}", produce())

    for acks, idem in ((0, False), (1, False), ("all", True)):

        async def produce_acks(acks: Any = acks, idem: bool = idem) -> None:
            p = AIOKafkaProducer(**base, acks=acks, enable_idempotence=idem)
            await p.start()
            try:
                await p.send_and_wait(t1, value=payload(9), partition=2)
            finally:
                await p.stop()

        await astep(f"produce acks={acks} idempotence={idem}", produce_acks())

    async def consume(first: bool) -> None:
        c = AIOKafkaConsumer(
            t1,
            **base,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            fetch_max_wait_ms=100,
            heartbeat_interval_ms=300,
            session_timeout_ms=6000,
        )
        await c.start()
        try:
            got = 0
            deadline = time.monotonic() + 2.0
            hard_deadline = deadline + STEP_TIMEOUT - 5
            while (
                (got < 6 and first) or time.monotonic() < deadline
            ) and time.monotonic() < hard_deadline:
                batches = await c.getmany(timeout_ms=300)
                got += sum(len(v) for v in batches.values())
            if first:
                assert got > 0, "nothing consumed"
                await c.commit()
                tp = TopicPartition(t1, 0)
                await c.committed(tp)
                await c.end_offsets([tp])
                await c.offsets_for_times({tp: 0})
        finally:
            await c.stop()

    await astep("consume in group", consume(True))
    await astep("consume again from committed offsets", consume(False))

    await astep("list_consumer_groups", admin.list_consumer_groups())
    await astep("describe_consumer_groups", admin.describe_consumer_groups([group]))
    await astep("list_consumer_group_offsets", admin.list_consumer_group_offsets(group))
    await astep(
        "delete_records",
        admin.delete_records({TopicPartition(t1, 1): RecordsToDelete(before_offset=1)}),
    )
    await astep("delete_topics", admin.delete_topics([t2]))
    await astep("admin close", admin.close())

    async def sasl() -> None:
        p = AIOKafkaProducer(**base, **SASL_PLAIN)
        await p.start()
        try:
            await p.partitions_for(t1)
        finally:
            await p.stop()

    await astep("SASL PLAIN metadata", sasl())


def main(argv: list[str]) -> int:
    client, bootstrap, prefix = argv[1:4]
    if os.environ.get("GOLDEN_FLOW_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    if client == "confluent":
        confluent_flow(bootstrap, prefix)
    elif client == "kafka-python":
        kafka_python_flow(bootstrap, prefix)
    elif client == "aiokafka":
        asyncio.run(aiokafka_flow(bootstrap, prefix))
    else:
        print(f"unknown client {client}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
