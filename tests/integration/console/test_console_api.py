"""The console's JSON API against a real 3-broker cluster: every endpoint, its errors
(a broker's refusal with the Kafka error name, a missing topic, the cluster out of reach,
read-only mode, a write without its CSRF token, ACLs on a cluster without an authorizer),
and escaping of record contents in the HTML pages. The users and ACLs pages on a secured
cluster: test_console_users_acls."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.cluster import TestCluster
from tests.integration.console.served import ServedConsole
from tests.polling import wait_until


def kcat_produce(bootstrap: str, topic: str, partition: int, lines: list[str], *extra: str) -> None:
    """Records from ``lines`` (``key|value`` with -K'|'), through kcat."""
    subprocess.run(
        ["kcat", "-b", bootstrap, "-P", "-t", topic, "-p", str(partition), "-K", "|", *extra],
        input="\n".join(lines) + "\n",
        text=True,
        check=True,
        timeout=30,
    )


def create(
    console: ServedConsole, name: str, partitions: int = 1, rf: int = 3, **configs: str
) -> None:
    status, body = console.post(
        "/api/topics",
        {
            "name": name,
            "partitions": str(partitions),
            "replication_factor": str(rf),
            "configs": "\n".join(f"{k.replace('_', '.')}={v}" for k, v in configs.items()),
        },
    )
    assert (status, body) == (200, {"created": name})


def test_cluster_lists_brokers_controller_and_counts(
    console: ServedConsole, console_cluster: TestCluster
) -> None:
    status, body = console.get("/api/cluster")
    assert status == 200
    assert [b["id"] for b in body["brokers"]] == [0, 1, 2]
    assert [b["port"] for b in body["brokers"]] == list(console_cluster.layout.client_ports)
    assert body["controller"] == console_cluster.controller()
    assert [b["id"] for b in body["brokers"] if b["controller"]] == [body["controller"]]
    assert body["cluster_id"]
    assert body["counts"]["offline"] == 0

    # the metrics endpoints are scraped: after two scrapes each broker has rates
    def rated() -> bool:
        metrics = console.get("/api/cluster")[1]["metrics"]
        return len(metrics) == 3 and all(m["rates"] and m["error"] is None for m in metrics)

    wait_until(rated, timeout=20, what="two scrapes of every broker")
    metrics = console.get("/api/cluster")[1]["metrics"]
    assert sorted(m["broker"] for m in metrics) == [0, 1, 2]


def test_topics_create_list_describe_alter_delete(console: ServedConsole) -> None:
    create(console, "api-orders", partitions=3, rf=3, retention_ms="3600000")
    create(console, "api-other", partitions=1, rf=1)
    status, body = console.get("/api/topics", q="api-", sort="partitions", order="desc")
    assert status == 200
    assert [(t["name"], t["partitions"], t["replication_factor"]) for t in body["topics"]] == [
        ("api-orders", 3, 3),
        ("api-other", 1, 1),
    ]
    status, body = console.get("/api/topics/api-orders")
    assert status == 200
    assert [p["partition"] for p in body["partitions"]] == [0, 1, 2]
    assert all(sorted(p["replicas"]) == [0, 1, 2] for p in body["partitions"])
    assert all(p["log_start_offset"] == 0 and p["log_end_offset"] == 0 for p in body["partitions"])
    first = body["configs"][0]
    assert (first["name"], first["value"], first["source"]) == (
        "retention.ms",
        "3600000",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert all(c["default"] for c in body["configs"][1:] if c["source"] == "DEFAULT_CONFIG")

    status, _ = console.post(
        "/api/topics/api-orders/configs", {"key": "cleanup.policy", "value": "compact"}
    )
    assert status == 200
    configs = {c["name"]: c for c in console.get("/api/topics/api-orders")[1]["configs"]}
    assert configs["cleanup.policy"]["value"] == "compact"
    assert configs["cleanup.policy"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    status, _ = console.post(
        "/api/topics/api-orders/configs", {"key": "cleanup.policy", "operation": "delete"}
    )
    assert status == 200
    configs = {c["name"]: c for c in console.get("/api/topics/api-orders")[1]["configs"]}
    assert (configs["cleanup.policy"]["value"], configs["cleanup.policy"]["default"]) == (
        "delete",
        True,
    )

    # a broker's refusal: its Kafka error name
    status, body = console.post("/api/topics", {"name": "api-orders", "partitions": "1"})
    assert status == 409
    assert body["error"]["kafka_error"] == "TOPIC_ALREADY_EXISTS"
    status, body = console.post(
        "/api/topics/api-orders/configs", {"key": "retention.ms", "value": "soon"}
    )
    assert status == 409
    assert body["error"]["kafka_error"] == "INVALID_REQUEST"  # what the broker answers
    assert "retention.ms" in body["error"]["detail"]

    # deleting needs the name typed again
    status, body = console.post("/api/topics/api-other/delete", {"confirm": "nope"})
    assert status == 400
    status, body = console.post("/api/topics/api-other/delete", {"confirm": "api-other"})
    assert (status, body) == (200, {"deleted": "api-other"})
    status, body = console.get("/api/topics/api-other")
    assert status == 404 and "does not exist" in body["error"]["detail"]
    status, body = console.get("/api/topics/api-other/messages")
    assert status == 404


def test_messages_browse_search_and_produce(
    console: ServedConsole, console_cluster: TestCluster
) -> None:
    create(console, "api-records", partitions=2, rf=3)
    bootstrap = console_cluster.layout.bootstrap_servers
    lines = [f"k{i}|" + json.dumps({"n": i, "even": i % 2 == 0}) for i in range(30)]
    kcat_produce(bootstrap, "api-records", 0, lines, "-H", "source=kcat")

    # the topics list adds what the metrics endpoints say: messages, bytes on disk
    def listed() -> dict[str, Any] | None:
        (row,) = console.get("/api/topics", q="api-records")[1]["topics"]
        return row if row["messages"] == 30 else None

    row = wait_until(listed, timeout=20, what="a scrape with the 30 records")
    assert row["size_bytes"] > 30 * 20  # (at least) a replica of 30 records of 20+ bytes
    status, body = console.get("/api/topics/api-records/messages", partition=0, limit=5)
    assert status == 200
    assert (body["log_start_offset"], body["log_end_offset"]) == (0, 30)
    assert [r["offset"] for r in body["records"]] == [29, 28, 27, 26, 25]  # newest first
    r = body["records"][0]
    assert r["key"]["text"] == "k29"
    assert json.loads(r["value"]["json"]) == {"n": 29, "even": False}
    assert r["headers"] == [
        {"name": "source", "value": {"size": 4, "text": "kcat", "json": None, "hex": "6b 63 61 74"}}
    ]

    # bad input is a 400 naming the parameter
    status, body = console.get("/api/topics/api-records/messages", partition=0, limit=0)
    assert status == 400 and body["error"]["detail"] == "limit must be between 1 and 500, not 0"
    status, body = console.get("/api/topics/api-records/search", key="k", regex="(")
    assert status == 400 and "regex '(' is not a regular expression" in body["error"]["detail"]
    status, body = console.get("/api/topics", sort="colour")
    assert status == 400 and body["error"]["detail"].startswith("sort must be one of name,")

    status, body = console.get("/api/topics/api-records/messages", partition=0, offset=10, limit=3)
    assert [r["offset"] for r in body["records"]] == [10, 11, 12]
    assert (body["next_offset"], body["previous_offset"]) == (13, 7)
    first_ts = body["records"][0]["timestamp"]
    status, body = console.get(
        "/api/topics/api-records/messages", partition=0, timestamp=first_ts, limit=1
    )
    assert body["records"][0]["timestamp"] >= first_ts and body["mode"] == "timestamp"

    status, body = console.get("/api/topics/api-records/search", key="k1")
    assert sorted(r["offset"] for r in body["records"]) == [1, *range(10, 20)]
    status, body = console.get("/api/topics/api-records/search", regex=r'"n": 2\d,')
    assert sorted(r["offset"] for r in body["records"]) == list(range(20, 30))
    status, body = console.get(
        "/api/topics/api-records/search", header="source=kcat", value='"even": true', scan=10
    )
    assert sorted(r["offset"] for r in body["records"]) == [20, 22, 24, 26, 28]
    assert body["scanned"] == 10

    status, body = console.post(
        "/api/topics/api-records/produce",
        {"partition": "1", "key": "test", "value": "<script>alert(1)</script>", "headers": "h=v"},
    )
    assert (status, body) == (200, {"topic": "api-records", "partition": 1, "offset": 0})
    status, body = console.get("/api/topics/api-records/messages", partition=1)
    (record,) = body["records"]
    assert record["value"]["text"] == "<script>alert(1)</script>"
    # escaped in the page: shown as text, never markup
    html = (
        urllib.request.urlopen(console.url + "/topics/api-records/messages?partition=1", timeout=30)
        .read()
        .decode()
    )
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    # and no script could run in the page at all
    with urllib.request.urlopen(console.url + "/topics", timeout=30) as response:
        assert "script-src 'none'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"


def test_groups_lag_reset_and_delete(console: ServedConsole, console_cluster: TestCluster) -> None:
    create(console, "api-lag", partitions=2, rf=3)
    bootstrap = console_cluster.layout.bootstrap_servers
    for p in (0, 1):
        kcat_produce(bootstrap, "api-lag", p, [f"k|v{i}" for i in range(10)])
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "api-group", "enable.auto.commit": False}
    )
    try:
        consumer.commit(
            offsets=[TopicPartition("api-lag", 0, 5), TopicPartition("api-lag", 1, 3)],
            asynchronous=False,
        )
    finally:
        consumer.close()
    status, body = console.get("/api/groups")
    assert status == 200
    (group,) = [g for g in body["groups"] if g["group"] == "api-group"]
    assert (group["state"], group["members"], group["total_lag"]) == ("Empty", 0, 12)
    status, body = console.get("/api/groups/api-group")
    assert [
        (r["partition"], r["committed_offset"], r["log_end_offset"], r["lag"])
        for r in body["offsets"]
    ] == [
        (0, 5, 10, 5),
        (1, 3, 10, 7),
    ]
    assert body["lag_by_topic"] == {"api-lag": 12}

    status, body = console.post("/api/groups/api-group/reset", {"kind": "shift", "value": "-2"})
    assert status == 200 and body["executed"] is False
    assert [o["new_offset"] for o in body["offsets"]] == [3, 1]
    # a preview changed nothing
    assert console.get("/api/groups/api-group")[1]["total_lag"] == 12
    status, body = console.post(
        "/api/groups/api-group/reset", {"kind": "earliest", "execute": True}
    )
    assert status == 200 and body["executed"] is True
    after = console.get("/api/groups/api-group")[1]
    assert [r["committed_offset"] for r in after["offsets"]] == [0, 0]
    assert after["lag_history"][-1]["lag"] == {"api-lag": 20}  # the chart's latest point

    # a group id may hold any character: one path segment, quoted
    odd = "ops/odd id?#"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": odd})
    try:
        consumer.commit(offsets=[TopicPartition("api-lag", 0, 9)], asynchronous=False)
    finally:
        consumer.close()
    status, body = console.get("/api/groups/" + urllib.parse.quote(odd, safe=""))
    assert (status, body["group"], body["total_lag"]) == (200, odd, 1)

    status, body = console.post("/api/groups/api-group/delete", {"confirm": "api-group"})
    assert (status, body) == (200, {"deleted": "api-group"})
    status, body = console.get("/api/groups/api-group")
    assert status == 404


def test_offsets_of_a_group_with_active_members_are_not_reset(
    console: ServedConsole, console_cluster: TestCluster
) -> None:
    create(console, "api-active", partitions=1, rf=3)
    bootstrap = console_cluster.layout.bootstrap_servers
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "api-active-group"})
    try:
        consumer.subscribe(["api-active"])

        def assigned() -> bool:
            consumer.poll(0.1)
            return bool(consumer.assignment())

        wait_until(assigned, timeout=30, interval=0, what="the member's assignment")
        status, body = console.get("/api/groups/api-active-group")
        assert (status, body["state"], body["active"], len(body["members"])) == (
            200,
            "Stable",
            True,
            1,
        )
        assert body["members"][0]["assignment"] == {"api-active": [0]}
        status, body = console.post("/api/groups/api-active-group/reset", {"kind": "earliest"})
        assert status == 403
        assert "no active members" in body["error"]["detail"]
        html = urllib.request.urlopen(console.url + "/groups/api-active-group", timeout=30)
        assert 'id="reset"' not in html.read().decode()  # the form is not offered
    finally:
        consumer.close()


def test_writes_need_csrf_and_read_only_refuses(
    console: ServedConsole, read_only_console: ServedConsole
) -> None:
    create(console, "api-guarded", partitions=1, rf=1)
    status, body = console.post(
        "/api/topics/api-guarded/delete", {"confirm": "api-guarded"}, csrf=False
    )
    assert status == 403 and "CSRF" in body["error"]["detail"]
    status, body = read_only_console.post(
        "/api/topics/api-guarded/delete", {"confirm": "api-guarded"}
    )
    assert status == 403 and "read-only" in body["error"]["detail"]
    assert console.get("/api/topics/api-guarded")[0] == 200  # still there
    html = (
        urllib.request.urlopen(read_only_console.url + "/topics/api-guarded", timeout=30)
        .read()
        .decode()
    )
    assert 'id="delete-topic"' not in html


def test_acls_of_a_cluster_without_an_authorizer_are_said_to_be_disabled(
    console: ServedConsole,
) -> None:
    binding = {"name": "t", "principal": "User:a", "operation": "READ"}
    for status, body in (console.get("/api/acls"), console.post("/api/acls", binding)):
        assert (status, body["error"]["kafka_error"]) == (409, "SECURITY_DISABLED")
        assert "has no authorizer" in body["error"]["detail"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(console.url + "/acls", timeout=30)
    page = refused.value.read().decode()
    assert refused.value.code == 409
    assert '<code id="kafka-error">SECURITY_DISABLED</code>' in page and "Traceback" not in page
    # SCRAM credentials need no authorizer: the users page works (and lists none here)
    assert console.get("/api/users") == (
        200,
        {
            "title": "Users (SCRAM credentials)",
            "users": [],
            "mechanisms": ["SCRAM-SHA-256", "SCRAM-SHA-512"],
            "default_iterations": 4096,
            "min_iterations": 4096,
            "max_iterations": 16384,
        },
    )


def test_a_cluster_out_of_reach_is_said_so() -> None:
    from tools.zookeeper_server import free_port

    down = ServedConsole(f"127.0.0.1:{free_port()}")
    try:
        status, body = down.get("/api/topics")
        assert status == 503
        assert body["error"]["title"] == "The cluster is unreachable"
        html_status = None
        try:
            urllib.request.urlopen(down.url + "/topics", timeout=60)
        except urllib.error.HTTPError as exc:
            html_status, text = exc.code, exc.read().decode()
        assert html_status == 503 and "unreachable" in text and "Traceback" not in text
    finally:
        down.stop()


def test_basic_authentication_guards_every_page(console_cluster: TestCluster) -> None:
    import base64

    guarded = ServedConsole(console_cluster.layout.bootstrap_servers, users={"ops": "pw"})
    try:
        for path in ("/", "/api/cluster", "/api/csrf"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(guarded.url + path, timeout=30)
            assert refused.value.code == 401
            assert refused.value.headers["WWW-Authenticate"].startswith("Basic")
        auth = "Basic " + base64.b64encode(b"ops:pw").decode()
        request = urllib.request.Request(
            guarded.url + "/api/cluster", headers={"Authorization": auth}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert len(json.loads(response.read())["brokers"]) == 3
    finally:
        guarded.stop()
