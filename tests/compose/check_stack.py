"""The checks `make compose-test` runs against a compose stack that is up (tests/compose/run.sh).

From the host, as a user would:

1. kcat produces and consumes through each broker's external listener, 127.0.0.1:9092-9094;
   then a record over message.max.bytes and a fetch past the log end, so the rejected and
   failed-request series have something to count; a consumer group whose offsets are
   reset to the earliest (``minikafka consumer-groups --reset-offsets``), so the consumer
   lag panels have a group lagging by every record; and kcat signing in on broker-1's
   SASL_PLAINTEXT listener with the right password and with a wrong one, then being
   refused a topic by an ACL, so the authentication and authorization panels have
   successes, failures and denials;
2. every Prometheus target is up;
3. every expression of every dashboard panel returns at least one series from the real
   Prometheus (``$__rate_interval`` read as 1m), so no panel is empty (a transaction is
   kept open meanwhile, for the Transactions row, and aborted after);
4. one broker container is killed and the cluster carries on: every partition of a
   replication-factor-3 topic gets a live leader and produce and consume work again. That
   needs followers that replicate; on a build whose followers do not copy the leader's
   log yet (Prometheus shows the follower replicas' log end offsets), the step says so
   and is skipped.

Every wait polls with a deadline; nothing sleeps to synchronise. Exit status 0 when all
checks pass; each failure is printed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "monitoring/grafana/dashboards/minikafka.json"
PROMETHEUS = "http://127.0.0.1:9090"
BOOTSTRAPS = ("127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9094")
#: broker-1's SASL_PLAINTEXT listener (PLAIN, user compose), added by docker-compose.test.yml
SASL_BOOTSTRAP = "127.0.0.1:9095"
TOPIC = "compose-test"
LAGGING_GROUP = "compose-test-lagging"
PARTITIONS = 3
RECORDS_PER_BROKER = 20
#: a record over the brokers' message.max.bytes (1 MiB and a little)
OVERSIZED = 1_200_000

T = TypeVar("T")


def say(message: str) -> None:
    print(f"== compose-test {time.strftime('%H:%M:%S')}: {message}", flush=True)


def poll(what: str, attempt: Callable[[], T | None], timeout_s: float, every_s: float = 1.0) -> T:
    """``attempt()`` until it returns something other than None, or fail after the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = attempt()
        if result is not None:
            return result
        if time.monotonic() >= deadline:
            raise SystemExit(f"compose-test FAILED: {what} (waited {timeout_s:.0f}s)")
        time.sleep(every_s)  # polling interval of a bounded wait


Completed = subprocess.CompletedProcess[bytes]


def kcat(*args: str, stdin: bytes = b"", timeout_s: float = 60) -> Completed:
    return subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, timeout=timeout_s, check=False
    )


def prometheus(path: str, **params: str) -> Any:
    url = f"{PROMETHEUS}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise RuntimeError(f"{url}: {body}")
    return body["data"]


def query(expr: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = prometheus("/api/v1/query", query=expr)["result"]
    return result


# --- 1. clients through 127.0.0.1:9092-9094 ----------------------------------------------------


def create_topic(topic: str, replication_factor: int) -> None:
    subprocess.run(
        [sys.executable, "-m", "tools.main", "topics", "--bootstrap-server", BOOTSTRAPS[0],
         "--create", "--if-not-exists", "--topic", topic, "--partitions", str(PARTITIONS),
         "--replication-factor", str(replication_factor)],
        cwd=ROOT, check=True, timeout=60,
    )  # fmt: skip


def consume_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    """Every record of ``topic`` read through ``bootstrap``, polled until ``expected``."""

    def attempt() -> list[bytes] | None:
        out = kcat("-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q")
        lines = out.stdout.splitlines()
        return lines if out.returncode == 0 and len(lines) >= expected else None

    return poll(f"{expected} records of {topic} through {bootstrap}", attempt, 60, 2)


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    out = kcat("-P", "-b", bootstrap, "-t", topic, "-K:", stdin="\n".join(values).encode())
    if out.returncode != 0:
        raise SystemExit(f"compose-test FAILED: kcat produce to {bootstrap}: {out.stderr!r}")


def check_clients() -> None:
    create_topic(TOPIC, 3)
    sent: list[str] = []
    for bootstrap in BOOTSTRAPS:
        values = [f"k{i}:{bootstrap} record {i}" for i in range(RECORDS_PER_BROKER)]
        produce(bootstrap, TOPIC, values)
        sent += [v.partition(":")[2] for v in values]
    for bootstrap in BOOTSTRAPS:
        got = consume_all(bootstrap, TOPIC, len(sent))
        if sorted(v.decode() for v in got) != sorted(sent):
            raise SystemExit(f"compose-test FAILED: {bootstrap} read back other records")
    say(f"kcat: {len(sent)} records produced and read back through each of {BOOTSTRAPS}")
    # a refused append (bytes rejected, failed produce) and a fetch past the log end
    big = kcat(
        "-P", "-b", BOOTSTRAPS[0], "-t", TOPIC, "-p", "0", "-X", "message.max.bytes=3000000",
        stdin=b"x" * OVERSIZED,
    )  # fmt: skip
    if b"too large" not in big.stderr.lower() and b"too_large" not in big.stderr.lower():
        raise SystemExit(f"compose-test FAILED: an oversized record was not refused: {big!r}")
    kcat("-C", "-b", BOOTSTRAPS[0], "-t", TOPIC, "-p", "0", "-o", "1000000", "-e", "-q",
         "-X", "auto.offset.reset=error", timeout_s=30)  # fmt: skip
    # a group that committed the earliest offsets: it lags by every record
    subprocess.run(
        [sys.executable, "-m", "tools.main", "consumer-groups", "--bootstrap-server",
         BOOTSTRAPS[0], "--reset-offsets", "--group", LAGGING_GROUP, "--topic", TOPIC,
         "--to-earliest", "--execute"],
        cwd=ROOT, check=True, timeout=60, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    say(f"consumer group {LAGGING_GROUP}: offsets reset to the earliest of {TOPIC}")
    check_sasl()


def check_sasl() -> None:
    """One sign-in with the right password (metadata served) and one with a wrong one
    (refused): the authentication panels' successes and failures."""

    def metadata(password: str) -> Completed:
        return kcat(
            "-L", "-b", SASL_BOOTSTRAP, "-t", TOPIC, "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=compose",
            "-X", f"sasl.password={password}", "-m", "10", timeout_s=30,
        )  # fmt: skip

    signed_in = metadata("compose-secret")
    if signed_in.returncode != 0 or TOPIC.encode() not in signed_in.stdout:
        raise SystemExit(f"compose-test FAILED: kcat over SASL/PLAIN: {signed_in.stderr!r}")
    refused = metadata("wrong-password")
    if refused.returncode == 0 or b"authentication" not in refused.stderr.lower():
        raise SystemExit(f"compose-test FAILED: a wrong password was not refused: {refused!r}")
    say(f"SASL/PLAIN on {SASL_BOOTSTRAP}: the right password served, a wrong one refused")
    # broker-1 authorizes: an ACL denying the SASL user DESCRIBE on the topic makes its
    # next Metadata for it a refusal (counted as a denial)
    subprocess.run(
        [sys.executable, "-m", "tools.main", "acls", "--bootstrap-server", BOOTSTRAPS[0],
         "--add", "--deny-principal", "User:compose", "--operation", "Describe",
         "--topic", TOPIC],
        cwd=ROOT, check=True, timeout=60, stdout=subprocess.DEVNULL,
    )  # fmt: skip

    def denied() -> bool | None:
        out = metadata("compose-secret")
        return True if b"authoriz" in (out.stdout + out.stderr).lower() else None

    poll(f"User:compose refused DESCRIBE on {TOPIC} by broker-1's authorizer", denied, 30, 1)
    say(f"ACLs on broker-1: a DESCRIBE denied to User:compose is refused on {TOPIC}")


# --- 2. and 3. Prometheus -------------------------------------------------------------------


def check_targets(expected: int) -> None:
    def attempt() -> list[str] | None:
        targets = prometheus("/api/v1/targets")["activeTargets"]
        up = [t["labels"]["instance"] for t in targets if t["health"] == "up"]
        return up if len(targets) == expected and len(up) == expected else None

    up = poll(f"all {expected} Prometheus targets up", attempt, 90)
    say(f"Prometheus targets up: {', '.join(sorted(up))}")


def panel_expressions() -> Iterator[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"].replace("$__rate_interval", "1m")


def check_panels() -> None:
    # the traffic of step 1 must have been scraped and the rate windows filled
    poll(
        "the rejected bytes of step 1 in Prometheus",
        lambda: query(f'minikafka_topic_bytes_rejected_total{{topic="{TOPIC}"}} > 0') or None,
        90,
    )
    pending = list(panel_expressions())
    deadline = time.monotonic() + 60
    while True:
        pending = [(title, expr) for title, expr in pending if not query(expr)]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(5)  # polling interval: one scrape
    if pending:
        for title, expr in pending:
            print(f"compose-test: panel {title!r}: no series for {expr}", file=sys.stderr)
        raise SystemExit(f"compose-test FAILED: {len(pending)} dashboard expressions are empty")
    say(f"dashboard: all {len(list(panel_expressions()))} panel expressions return series")


# --- 4. a broker killed -----------------------------------------------------------------------


def followers_replicate() -> bool:
    """Whether follower replicas hold records: more replicas than leaders have a log end
    offset above 0 once the leaders have some."""
    replicas = query(f'minikafka_log_end_offset{{topic="{TOPIC}"}} > 0')
    return len(replicas) > PARTITIONS


def leaders(bootstrap: str, topic: str) -> dict[int, int] | None:
    out = kcat("-L", "-J", "-b", bootstrap, "-t", topic, timeout_s=30)
    if out.returncode != 0:
        return None
    meta = json.loads(out.stdout)
    parts = meta["topics"][0].get("partitions", [])
    if meta["topics"][0].get("err") or any(p.get("err") for p in parts):
        return None
    return {p["partition"]: p["leader"] for p in parts}


def check_failover(compose: list[str]) -> None:
    if not _wait_replicated():
        say("SKIPPED the broker kill: followers do not replicate in this build yet")
        return
    victim = "broker-3"
    say(f"killing {victim}")
    subprocess.run([*compose, "kill", "-s", "SIGKILL", victim], check=True, timeout=60)

    def led_elsewhere() -> dict[int, int] | None:
        now = leaders(BOOTSTRAPS[0], TOPIC)
        return now if now and len(now) == PARTITIONS and 3 not in now.values() else None

    moved = poll("every partition led by a live broker after the kill", led_elsewhere, 60)
    say(f"leaders after the kill: {moved}")
    before = len(consume_all(BOOTSTRAPS[0], TOPIC, RECORDS_PER_BROKER * len(BOOTSTRAPS)))
    produce(BOOTSTRAPS[1], TOPIC, [f"a{i}:after the kill {i}" for i in range(10)])
    consume_all(BOOTSTRAPS[0], TOPIC, before + 10)
    say("the cluster carries on without broker 3: produce and consume work")


def _wait_replicated() -> bool:
    """Whether followers replicate, given a few scrapes to show it."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if followers_replicate():
            return True
        time.sleep(2)  # polling interval: a scrape
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", required=True, help="docker-compose project name")
    parser.add_argument("--compose-file", action="append", default=[], help="compose files")
    args = parser.parse_args()
    compose = ["docker-compose", "-p", args.project]
    for f in args.compose_file:
        compose += ["-f", f]
    poll("Prometheus ready", lambda: _ready(), 60)
    check_clients()
    open_transaction = begin_transaction()
    check_targets(len(BOOTSTRAPS))
    check_panels()
    open_transaction.abort_transaction(30)
    check_failover(compose)
    return 0


def begin_transaction() -> Any:
    """A transaction left open (a record written, no commit) through the panel checks, so
    that the Transactions row has an ongoing transaction and a lagging last stable offset
    to show; aborted after them."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": ",".join(BOOTSTRAPS), "transactional.id": "compose-test"}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(TOPIC, b"inside an open transaction", partition=0)
    if producer.flush(30) != 0:
        raise SystemExit("compose-test FAILED: a transactional record was not written")
    say(f"a transaction left open on {TOPIC}-0 while the panels are checked")
    return producer


def _ready() -> bool | None:
    try:
        with urllib.request.urlopen(f"{PROMETHEUS}/-/ready", timeout=5) as response:
            return True if response.status == 200 else None
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
