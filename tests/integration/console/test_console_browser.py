"""The console in headless Chromium (Debian's chromium and chromium-driver, driven by
selenium) against the package's 3-broker cluster: what a person sees and does, checked
against the cluster through kcat and the ``minikafka`` command. Each test saves a
screenshot under its artifacts directory (tmp/artifacts/<test>)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster import TestCluster
from tests.integration.console.browsing import (
    CHROMEDRIVER,
    CHROMIUM,
    ROOT,
    cells,
    minikafka,
    needs_chromium,
    submit,
)
from tests.integration.console.served import ServedConsole
from tests.polling import wait_until
from tools.zookeeper_server import free_port

pytestmark = needs_chromium

if CHROMIUM is not None and CHROMEDRIVER is not None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver


def kcat(bootstrap: str, topic: str, partition: int, data: bytes, *extra: str) -> None:
    subprocess.run(
        ["kcat", "-b", bootstrap, "-P", "-t", topic, "-p", str(partition), *extra],
        input=data,
        check=True,
        timeout=30,
    )


def test_the_cluster_page_lists_three_brokers_and_the_controller(
    browser: WebDriver, console: ServedConsole, console_cluster: TestCluster, artifacts: Path
) -> None:
    browser.get(console.url + "/")
    rows = cells(browser, "#brokers tr.broker")
    assert [r[0] for r in rows] == ["0", "1", "2"]
    assert [r[2] for r in rows] == [str(p) for p in console_cluster.layout.client_ports]
    controller = console_cluster.controller()
    assert browser.find_element(By.ID, "controller").text == str(controller)
    assert [r[0] for r in rows if r[4] == "controller"] == [str(controller)]
    browser.save_screenshot(str(artifacts / "cluster.png"))


def test_a_topic_created_in_the_page_is_listed_by_the_command(
    browser: WebDriver, console: ServedConsole, console_cluster: TestCluster, artifacts: Path
) -> None:
    browser.get(console.url + "/topics")
    browser.find_element(By.ID, "new-name").send_keys("page-made")
    browser.find_element(By.ID, "new-partitions").clear()
    browser.find_element(By.ID, "new-partitions").send_keys("3")
    browser.find_element(By.ID, "new-rf").clear()
    browser.find_element(By.ID, "new-rf").send_keys("2")
    browser.find_element(By.ID, "new-configs").send_keys("retention.ms=86400000")
    submit(browser, browser.find_element(By.ID, "create"))
    wait_until(lambda: browser.current_url.endswith("/topics/page-made"), timeout=30)
    assert len(cells(browser, "#partitions tbody tr")) == 3
    assert cells(browser, "#configs tr.set")[0] == [
        "retention.ms",
        "86400000",
        "DYNAMIC_TOPIC_CONFIG",
    ]
    browser.save_screenshot(str(artifacts / "topic.png"))
    listed = minikafka(
        "topics", "--bootstrap-server", console_cluster.layout.bootstrap_servers, "--list"
    )
    assert "page-made" in listed.split()


def test_records_from_kcat_show_with_their_offsets_decodings_and_are_searchable(
    browser: WebDriver, console: ServedConsole, console_cluster: TestCluster, artifacts: Path
) -> None:
    bootstrap = console_cluster.layout.bootstrap_servers
    assert console.post("/api/topics", {"name": "kcat-records", "partitions": "1"})[0] == 200
    kcat(bootstrap, "kcat-records", 0, b'order-1|{"id":1,"item":"tea"}\norder-2|plain text\n',
         "-K", "|", "-H", "origin=kcat")  # fmt: skip
    kcat(bootstrap, "kcat-records", 0, b"bin|\x00\x01\xfe\xff", "-K", "|", "-H", "kind=binary")
    browser.get(console.url + "/topics/kcat-records/messages?partition=0")
    rows = browser.find_elements(By.CSS_SELECTOR, "#records tr.record")
    assert [r.get_attribute("data-offset") for r in rows] == ["2", "1", "0"]  # newest first
    by_offset = {r.get_attribute("data-offset"): r for r in rows}

    def field(offset: str, name: str) -> str:
        return str(by_offset[offset].find_element(By.CSS_SELECTOR, f"td.{name}").text)

    assert field("0", "key") == "order-1"
    assert field("0", "value") == '{\n  "id": 1,\n  "item": "tea"\n}'  # pretty JSON
    assert field("0", "headers") == "origin: kcat"
    assert field("1", "value") == "plain text"
    assert field("2", "value") == "00 01 fe ff"  # binary: hex
    assert field("2", "headers") == "kind: binary"
    browser.save_screenshot(str(artifacts / "messages.png"))

    browser.get(console.url + "/topics/kcat-records/messages?partition=0&offset=1&format=hex")
    rows = browser.find_elements(By.CSS_SELECTOR, "#records tr.record")
    assert [r.get_attribute("data-offset") for r in rows] == ["1", "2"]
    assert rows[0].find_element(By.CSS_SELECTOR, "td.value").text == b"plain text".hex(" ")

    browser.get(console.url + "/topics/kcat-records/search")
    browser.find_element(By.ID, "search-key").send_keys("order")
    browser.find_element(By.ID, "search-header").send_keys("origin=kcat")
    submit(browser, browser.find_element(By.ID, "search-button"))
    wait_until(lambda: browser.find_elements(By.ID, "summary"), timeout=30)
    found = browser.find_elements(By.CSS_SELECTOR, "#records tr.record")
    assert [r.get_attribute("data-offset") for r in found] == ["0", "1"]
    browser.get(console.url + "/topics/kcat-records/search?regex=%22item%22%3A%22t")
    found = browser.find_elements(By.CSS_SELECTOR, "#records tr.record")
    assert [r.get_attribute("data-offset") for r in found] == ["0"]
    browser.save_screenshot(str(artifacts / "search.png"))


def test_a_groups_lag_per_partition_and_a_reset_to_earliest(
    browser: WebDriver, console: ServedConsole, console_cluster: TestCluster, artifacts: Path
) -> None:
    from confluent_kafka import Consumer

    bootstrap = console_cluster.layout.bootstrap_servers
    assert console.post("/api/topics", {"name": "half-read", "partitions": "2"})[0] == 200
    for p in (0, 1):
        kcat(bootstrap, "half-read", p, b"".join(b"v%d\n" % i for i in range(8)))
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "half-group",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["half-read"])
        read: dict[int, int] = {0: 0, 1: 0}

        def consumed_half() -> bool:
            msg = consumer.poll(0.2)
            p = None if msg is None or msg.error() is not None else msg.partition()
            if msg is not None and p is not None and read[p] < 4:
                read[p] += 1
                if read[p] == 4:  # half of the partition: commit offset 4
                    consumer.commit(message=msg, asynchronous=False)
            return read == {0: 4, 1: 4}

        wait_until(consumed_half, timeout=60, interval=0, what="half of each partition")
    finally:
        consumer.close()
    browser.get(console.url + "/groups/half-group")
    rows = cells(browser, "#offsets tr.offset-row")
    assert [(r[1], r[2], r[3], r[4]) for r in rows] == [("0", "4", "8", "4"), ("1", "4", "8", "4")]
    assert browser.find_element(By.ID, "total-lag").text == "8"
    browser.save_screenshot(str(artifacts / "group.png"))

    submit(browser, browser.find_element(By.ID, "preview"))  # earliest is the first kind
    wait_until(lambda: browser.find_elements(By.ID, "execute"), timeout=30)
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "td.new-offset")] == ["0", "0"]
    browser.save_screenshot(str(artifacts / "reset-preview.png"))
    submit(browser, browser.find_element(By.ID, "execute"))
    wait_until(lambda: browser.current_url.endswith("/groups/half-group"), timeout=30)
    assert browser.find_element(By.ID, "total-lag").text == "16"
    described = minikafka(
        "consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", "half-group"
    )
    rows = [line.split() for line in described.splitlines() if line.startswith("half-group ")]
    assert [(r[1], r[2], r[3], r[4], r[5]) for r in rows] == [
        ("half-read", "0", "0", "8", "8"),
        ("half-read", "1", "0", "8", "8"),
    ]


@pytest.fixture(scope="module")
def read_only_command(console_cluster: TestCluster) -> Iterator[str]:
    """``minikafka console --read-only`` as a person starts it: its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tools.main", "console", "--bootstrap-server",
         console_cluster.layout.bootstrap_servers, "--port", str(port), "--read-only"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        import urllib.request

        wait_until(lambda: urllib.request.urlopen(url + "/api/csrf", timeout=2), timeout=30)
        yield url
    finally:
        process.terminate()
        process.wait(15)


def test_read_only_refuses_a_delete(
    browser: WebDriver, read_only_command: str, console: ServedConsole, artifacts: Path
) -> None:
    assert console.post("/api/topics", {"name": "kept", "partitions": "1"})[0] == 200
    browser.get(read_only_command + "/topics/kept")
    assert browser.find_element(By.ID, "read-only").text == "read-only"
    assert browser.find_elements(By.ID, "delete-topic") == []  # hidden
    # a delete posted anyway (the form of a writable console) is refused
    token = browser.execute_script("return (await (await fetch('/api/csrf')).json()).csrf_token")
    browser.execute_script(
        """const f = document.createElement('form'); f.method = 'post';
        f.action = '/topics/kept/delete';
        for (const [k, v] of [['confirm', 'kept'], ['csrf_token', arguments[0]]]) {
          const i = document.createElement('input'); i.name = k; i.value = v; f.appendChild(i); }
        document.body.appendChild(f); f.submit();""",
        token,
    )
    wait_until(lambda: browser.find_elements(By.ID, "error"), timeout=30)
    assert "read-only" in browser.find_element(By.ID, "error-detail").text
    browser.save_screenshot(str(artifacts / "read-only.png"))
    assert console.get("/api/topics/kept")[0] == 200


def test_an_html_value_renders_as_text(
    browser: WebDriver, console: ServedConsole, console_cluster: TestCluster, artifacts: Path
) -> None:
    assert console.post("/api/topics", {"name": "markup", "partitions": "1"})[0] == 200
    value = "<script>window.pwned = 1</script><b id='injected'>bold</b><img src=x onerror=alert(1)>"
    kcat(console_cluster.layout.bootstrap_servers, "markup", 0, value.encode() + b"\n")
    browser.get(console.url + "/topics/markup/messages?partition=0")
    (cell,) = browser.find_elements(By.CSS_SELECTOR, "#records td.value")
    assert cell.text == value
    assert browser.find_elements(By.ID, "injected") == []
    assert browser.execute_script("return window.pwned === undefined") is True
    browser.save_screenshot(str(artifacts / "markup.png"))
