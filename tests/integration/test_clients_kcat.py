"""kcat (librdkafka 2.0, as a subprocess) against a 3-broker minikafka cluster started as
`minikafka cluster up`.

kcat lists metadata (-L -J: brokers, controller id, topics), produces (-P) with acks 0, 1
and all and every codec (-X options), and consumes (-C -J) from the earliest offset, from
the latest (waiting for a record written after it started), and from a timestamp (-o s@ts,
and -Q for the offset lookup), getting back exactly what was produced: keys (null
included), values, headers, offsets, and the producer's timestamps. kcat cannot create
topics; the module makes its topics with a CreateTopics request of our own.

Two broker properties are checked end to end here:
- a fetch waiting in the broker (fetch.wait.max.ms=10000) returns as soon as a record
  arrives;
- fetched record bytes never pass through Python: strace on the partition leader counts
  the bytes it sends with sendfile(2) and with every other write-like system call during
  a large consume; the records must all go out by sendfile. (/proc/PID/io cannot tell:
  the kernel counts sendfile's bytes in rchar and wchar as a read and a write would.)

One cluster per module; every wait is a poll with a deadline.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from protocol import ApiKey, ErrorCode
from protocol.messages import CreateTopicsRequest
from tests.integration.cluster import TestCluster
from tests.integration.roundtrip import (
    MAX_WAIT_MS,
    assert_answered_early,
    assert_compressed,
    checked_batches,
    fetch_requests,
    leader_of,
)
from tests.polling import wait_until

KCAT = shutil.which("kcat")
STRACE = shutil.which("strace")

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(KCAT is None, reason="kcat is not installed"),
]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("0", "1", "all")
CASES = [(codec, acks) for codec in CODECS for acks in ACKS]
#: one partition per (codec, acks) case, so every case's offsets start at 0
ROUNDTRIP = "kcat-roundtrip"
SEEK = "kcat-seek"
TIMES = "kcat-times"
LONG_POLL = "kcat-long-poll"
ZERO_COPY = "kcat-zero-copy"
TOPICS = {ROUNDTRIP: (len(CASES), 2), SEEK: (1, 2), TIMES: (1, 3), LONG_POLL: (1, 1),
          ZERO_COPY: (1, 1)}  # fmt: skip
HEADERS = ["h1", "one", "h2", "two"]  # as kcat -J prints them: name, value, name, value


@pytest.fixture(scope="module")
def c(cluster3: TestCluster) -> Iterator[TestCluster]:
    """The cluster once every broker knows all three, with the module's topics."""
    wait_until(lambda: cluster3.local.metadata_complete(), 30, "every broker's metadata")
    controller = cluster3.controller()
    assert controller is not None
    new = [
        CreateTopicsRequest.CreatableTopic(name=t, num_partitions=n, replication_factor=rf)
        for t, (n, rf) in TOPICS.items()
    ]
    body = CreateTopicsRequest(topics=new, timeout_ms=30_000, validate_only=False)
    response = cluster3.request(controller, ApiKey.CREATE_TOPICS, 7, body)
    assert [t.error_code for t in response.topics] == [ErrorCode.NONE] * len(TOPICS)
    yield cluster3


def kcat(c: TestCluster, *args: str, stdin: bytes | None = None, timeout: float = 30) -> str:
    """Run kcat against the cluster; its stdout (a failure fails the test)."""
    assert KCAT is not None
    cmd = [KCAT, "-b", c.layout.bootstrap_servers, *args]
    done = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)}: {done.stderr.decode(errors='replace')}"
    return done.stdout.decode()


def produce(c: TestCluster, topic: str, partition: int, lines: list[str], *opts: str) -> None:
    """kcat -P of ``key<TAB>value`` lines (a line without a tab has a null key)."""
    data = "".join(line + "\n" for line in lines).encode()
    headers = [f"{HEADERS[i]}={HEADERS[i + 1]}" for i in range(0, len(HEADERS), 2)]
    args = ["-P", "-t", topic, "-p", str(partition), "-K", "\t", "-Z"]
    for h in headers:
        args += ["-H", h]
    kcat(c, *args, *opts, stdin=data)


def consume(c: TestCluster, topic: str, partition: int, *opts: str) -> list[dict[str, Any]]:
    """kcat -C -J to the end of the partition (``opts`` say where to start)."""
    out = kcat(c, "-C", "-t", topic, "-p", str(partition), "-e", "-J", "-q", *opts)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def now_ms() -> int:
    return int(time.time() * 1000)


def next_record_from_end(
    c: TestCluster, topic: str, value: str, *opts: str
) -> tuple[dict[str, Any], float]:
    """Start ``kcat -C -o end -c 1``, wait until its fetch has reached the leader, produce
    one record, and return what kcat printed and the seconds from the produce's
    acknowledgement to kcat's exit."""
    assert KCAT is not None
    leader = leader_of(c, topic, 0)
    before = fetch_requests(c, leader)
    cmd = [KCAT, "-b", c.layout.bootstrap_servers, "-C", "-t", topic, "-p", "0",
           "-o", "end", "-c", "1", "-J", "-q", *opts]  # fmt: skip
    waiting = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: fetch_requests(c, leader) > before, 20, "kcat's fetch at the leader")
        produce(c, topic, 0, [f"late\t{value}"], "-X", "acks=1")
        produced = time.monotonic()
        out, err = waiting.communicate(timeout=2 * MAX_WAIT_MS / 1000)
        elapsed = time.monotonic() - produced
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait(10)
    assert waiting.returncode == 0, err.decode(errors="replace")
    return json.loads(out), elapsed


# -- the tests --------------------------------------------------------------------------------


def test_metadata_lists_brokers_controller_and_topics(c: TestCluster) -> None:
    md = json.loads(kcat(c, "-L", "-J"))
    assert md["controllerid"] == c.controller()
    brokers = {(b["id"], b["name"]) for b in md["brokers"]}
    assert brokers == {(i, f"127.0.0.1:{c.layout.client_ports[i]}") for i in c.broker_ids}
    topics = {t["topic"]: t for t in md["topics"]}
    assert set(TOPICS) <= set(topics)
    partitions = topics[ROUNDTRIP]["partitions"]
    assert sorted(p["partition"] for p in partitions) == list(range(len(CASES)))
    for p in partitions:
        replicas = [r["id"] for r in p["replicas"]]
        assert len(replicas) == 2 and p["leader"] in replicas


@pytest.mark.parametrize(("codec", "acks"), CASES)
def test_produce_and_consume_every_codec_and_acks(c: TestCluster, codec: str, acks: str) -> None:
    partition = CASES.index((codec, acks))
    tag = f"{codec}-{acks}"
    # values compress well even alone: librdkafka sends a batch uncompressed when
    # compressing would not make it smaller
    lines = [
        f"{tag}-k0\t{tag}-v0-" + "x" * 200,
        f"{tag}-nokey-" + "y" * 240,  # no key delimiter: a null key
        f"{tag}-k2\t{tag}-v2-" + "z" * 280,
    ]
    before = now_ms()
    produce(
        c, ROUNDTRIP, partition, lines, "-X", f"compression.codec={codec}", "-X", f"acks={acks}"
    )
    after = now_ms()

    def all_there() -> list[dict[str, Any]] | None:
        got = consume(c, ROUNDTRIP, partition, "-o", "beginning")
        return got if len(got) >= len(lines) else None  # acks=0: not yet appended maybe

    got = wait_until(all_there, 20, f"{len(lines)} records")
    expected_kv = [
        (f"{tag}-k0", f"{tag}-v0-" + "x" * 200),
        (None, f"{tag}-nokey-" + "y" * 240),
        (f"{tag}-k2", f"{tag}-v2-" + "z" * 280),
    ]
    assert [(m["offset"], m["key"], m["payload"]) for m in got] == [
        (i, k, v) for i, (k, v) in enumerate(expected_kv)
    ]
    assert all(m["headers"] == HEADERS for m in got)
    # the producer's timestamps (kcat cannot choose them), kept as CreateTime
    assert all(m["tstype"] == "create" and before <= m["ts"] <= after for m in got)

    batches = checked_batches(c, ROUNDTRIP, partition, len(lines))
    assert [m["ts"] for m in got][-1] == batches[-1].max_timestamp
    assert_compressed(batches, codec)


def test_consume_from_earliest_and_latest(c: TestCluster) -> None:
    produce(c, SEEK, 0, ["a\t1", "b\t2", "c\t3"], "-X", "acks=all")
    earliest = consume(c, SEEK, 0, "-o", "beginning")
    assert [(m["offset"], m["key"], m["payload"]) for m in earliest] == [
        (0, "a", "1"), (1, "b", "2"), (2, "c", "3"),
    ]  # fmt: skip
    assert [m["offset"] for m in consume(c, SEEK, 0, "-o", "1")] == [1, 2]
    # from the end: only what is written after kcat started
    record, _ = next_record_from_end(c, SEEK, "after-the-end")
    assert (record["offset"], record["key"], record["payload"]) == (3, "late", "after-the-end")
    assert record["headers"] == HEADERS


def test_consume_from_a_timestamp(c: TestCluster) -> None:
    for i in range(3):  # one kcat each: three distinct producer timestamps
        produce(c, TIMES, 0, [f"t{i}\tv{i}"])
        if i < 2:
            first = now_ms()
            wait_until(lambda: now_ms() > first, 5, "the next millisecond")  # noqa: B023
    rows = consume(c, TIMES, 0, "-o", "beginning")
    ts = [m["ts"] for m in rows]
    assert [m["offset"] for m in rows] == [0, 1, 2] and ts[0] < ts[1] < ts[2]

    from_ts = consume(c, TIMES, 0, "-o", f"s@{ts[1]}")
    assert [(m["offset"], m["key"], m["ts"]) for m in from_ts] == [
        (1, "t1", ts[1]), (2, "t2", ts[2]),
    ]  # fmt: skip
    between = consume(c, TIMES, 0, "-o", f"s@{ts[0] + 1}")
    assert [m["offset"] for m in between] == [1, 2]
    # -Q asks ListOffsets by timestamp
    answer = kcat(c, "-Q", "-t", f"{TIMES}:0:{ts[2]}")
    assert re.search(rf"{TIMES} \[0\] offset 2\b", answer), answer


def test_long_poll_fetch_returns_as_soon_as_data_arrives(c: TestCluster) -> None:
    record, elapsed = next_record_from_end(
        c, LONG_POLL, "arrived", "-X", f"fetch.wait.max.ms={MAX_WAIT_MS}", "-X", "fetch.min.bytes=1"
    )
    # kcat exited after one record; its next fetch may still wait at the leader (the
    # connection is muted while a request is in flight); a record completes it, so that
    # the cluster's graceful shutdown at the end of the module does not wait for it
    produce(c, LONG_POLL, 0, ["release\trelease"], "-X", "acks=1")
    assert (record["offset"], record["payload"]) == (0, "arrived")
    assert_answered_early(elapsed)


# -- zero copy --------------------------------------------------------------------------------

#: syscalls that could carry bytes to a socket; sendfile apart
_WRITES = ("write", "writev", "pwrite64", "pwritev", "sendto", "sendmsg", "sendmmsg", "splice")
_CALL = re.compile(r"^\d+\s+(?:<\.\.\. (\w+) resumed>|(\w+)\().*=\s+(\d+)(?:\s|$)")


def syscall_bytes(trace: str) -> dict[str, int]:
    """Bytes per syscall name in ``strace -f`` output (successful calls' return values;
    an interrupted call counts once, on its ``resumed`` line)."""
    totals: dict[str, int] = {}
    for line in trace.splitlines():
        m = _CALL.match(line)
        if m:
            name = m.group(1) or m.group(2)
            totals[name] = totals.get(name, 0) + int(m.group(3))
    return totals


def traced(pid: int) -> bool:
    """Whether every thread of ``pid`` has a tracer attached."""
    tasks = list(Path(f"/proc/{pid}/task").iterdir())
    return all("TracerPid:\t0" not in (task / "status").read_text() for task in tasks) and bool(
        tasks
    )


@pytest.mark.skipif(STRACE is None, reason="strace is not installed")
def test_fetched_record_bytes_never_pass_through_python(c: TestCluster, tmp_path: Path) -> None:
    assert STRACE is not None
    count, size = 2048, 4096  # 8 MiB, uncompressed so that bytes stored = bytes fetched
    lines = [f"k{i}\t" + f"{i:06d}".ljust(size, "r") for i in range(count)]
    produce(c, ZERO_COPY, 0, lines, "-X", "acks=1", "-X", "linger.ms=20")
    leader = leader_of(c, ZERO_COPY, 0)
    pid = c.pid(leader)

    out = tmp_path / "strace.txt"
    calls = ",".join(("sendfile", *_WRITES))
    tracer = subprocess.Popen(
        [STRACE, "-f", "-qq", "-e", f"trace={calls}", "-e", "status=successful",
         "-e", "signal=none", "-o", str(out), "-p", str(pid)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_until(lambda: traced(pid) or tracer.poll() is not None, 20, "strace attached")
        if tracer.poll() is not None:
            complaint = tracer.stderr.read().decode() if tracer.stderr else ""
            if "Operation not permitted" in complaint:  # a sandbox without ptrace
                pytest.skip(f"strace cannot attach here: {complaint.strip()}")
            raise AssertionError(f"strace exited: {complaint}")
        sizes = kcat(
            c, "-C", "-t", ZERO_COPY, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%S\\n",
            timeout=120,
        )  # fmt: skip
    finally:
        tracer.send_signal(signal.SIGINT)  # detach; the broker carries on
        tracer.wait(30)
    values = [int(s) for s in sizes.split()]
    assert values == [size] * count
    consumed = sum(values)

    totals = syscall_bytes(out.read_text())
    sent_by_sendfile = totals.get("sendfile", 0)
    sent_otherwise = sum(totals.get(name, 0) for name in _WRITES)
    assert sent_by_sendfile >= consumed, totals
    # response headers, ZooKeeper pings, metrics: small change beside 8 MiB of records
    assert sent_otherwise < consumed / 20, totals
    assert wait_until(lambda: c.local.metadata_complete(), 10, "the leader serving after the trace")
