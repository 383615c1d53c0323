"""The users (SCRAM) and ACLs pages against a real one-broker cluster secured as
``cluster up --security sasl_plaintext`` secures one: SASL/SCRAM on every listener, the
authorizer on, ``admin`` the one super user; the console connects as admin with the
cluster's client properties.

Through the JSON API and in headless Chromium: a user added in a page authenticates with
SCRAM from confluent-kafka and shows in ``minikafka configs --describe``; its deletion
ends its logins; an ACL created in a page is listed by ``minikafka acls --list`` and
enforced (a denied producer gets TOPIC_AUTHORIZATION_FAILED), and deleting it (after the
preview of what the filter matches) lifts it; ``--read-only`` refuses both kinds of
write; a console whose principal is no super user shows CLUSTER_AUTHORIZATION_FAILED by
name. Passwords never come back in an answer. Browser tests save screenshots under
tmp/artifacts/<test>.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from client.connection import Connection, ConnectionConfig
from client.errors import AuthenticationFailed
from client.security import ClientSecurity, SaslCredentials
from protocol import ApiKey, ErrorCode
from protocol.messages import MetadataRequest
from tests.integration.console.browsing import (
    CHROMEDRIVER,
    CHROMIUM,
    cells,
    minikafka,
    needs_chromium,
    submit,
)
from tests.integration.console.served import ServedConsole
from tests.polling import wait_until
from tools.cluster import ClusterLayout, LocalCluster
from tools.cluster_security import ClusterSecurity, prepare_security
from tools.zookeeper_server import ZooKeeperServer, free_port

if CHROMIUM is not None and CHROMEDRIVER is not None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.support.select import Select

pytestmark = pytest.mark.timeout(120)


@dataclass(frozen=True)
class Secured:
    layout: ClusterLayout
    security: ClusterSecurity

    @property
    def bootstrap(self) -> str:
        return self.layout.bootstrap_servers

    def command(self, *args: str) -> str:
        """``minikafka ARGS`` as the cluster's operator runs it (admin's properties)."""
        config = str(self.security.client_properties_path)
        return minikafka(*args, "--bootstrap-server", self.bootstrap, "--command-config", config)

    def librdkafka(self, user: str, mechanism: str, password: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
        }


@pytest.fixture(scope="module")
def secured(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Secured]:
    directory = tmp_path_factory.mktemp("console-secured")
    zk_connect = f"{zookeeper.connect_string}/cluster-{uuid.uuid4().hex[:10]}"
    client, control, metrics = (free_port() for _ in range(3))
    layout = ClusterLayout(
        directory=directory,
        client_ports=(client,),
        control_ports=(control,),
        metrics_ports=(metrics,),
        zookeeper_connect=zk_connect,
        overrides=(("zookeeper.connect", zk_connect),),
        security=prepare_security(directory, "SASL_PLAINTEXT", brokers=1),
    )
    assert layout.security is not None
    local = LocalCluster(layout)
    local.start(timeout_s=90)
    try:
        yield Secured(layout, layout.security)
    finally:
        local.stop(grace_s=30)


@pytest.fixture(scope="module")
def admin_console(secured: Secured) -> Iterator[ServedConsole]:
    served = ServedConsole(secured.bootstrap, security=secured.security.client_security())
    yield served
    served.stop()


@pytest.fixture(scope="module")
def read_only(secured: Secured) -> Iterator[ServedConsole]:
    served = ServedConsole(
        secured.bootstrap, read_only=True, security=secured.security.client_security()
    )
    yield served
    served.stop()


def add_user(console: ServedConsole, user: str, mechanism: str, password: str, it: int) -> None:
    body = {"user": user, "mechanism": mechanism, "iterations": str(it), "password": password}
    status, answer = console.post("/api/users", body)
    assert (status, answer) == (200, {"user": user, "mechanism": mechanism, "iterations": it})


def authenticates(secured: Secured, user: str, mechanism: str, password: str) -> bool:
    """Whether confluent-kafka (librdkafka) logs in as ``user`` and is served Metadata."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(
        {**secured.librdkafka(user, mechanism, password), "socket.timeout.ms": 5000}
    )
    try:
        return len(admin.list_topics(timeout=5).brokers) == 1
    except KafkaException:
        return False


def refused(secured: Secured, user: str, mechanism: str, password: str) -> bool:
    """Whether the broker refuses ``user``'s SCRAM login (SASL_AUTHENTICATION_FAILED)."""
    security = ClientSecurity("SASL_PLAINTEXT", sasl=SaslCredentials(mechanism, user, password))
    config = ConnectionConfig("console-test", 5.0, request_timeout_s=5.0, security=security)

    async def run() -> None:
        conn = await Connection.open("127.0.0.1", secured.layout.client_ports[0], config)
        try:
            await conn.request(ApiKey.METADATA, MetadataRequest(topics=[]))
        finally:
            conn.close()

    try:
        asyncio.run(run())
    except AuthenticationFailed as exc:
        return exc.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    return False


def produce_error(secured: Secured, user: str, password: str, topic: str) -> int | None:
    """Deliver one record as ``user`` (SCRAM-SHA-256) with confluent-kafka: the delivery
    error's code (None: delivered)."""
    from confluent_kafka import Producer

    config = secured.librdkafka(user, "SCRAM-SHA-256", password)
    producer = Producer({**config, "message.timeout.ms": 8000, "retries": 0})
    outcome: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(15)
    assert outcome, "no delivery report"
    return None if outcome[0] is None else int(outcome[0].code())


def described_credentials(secured: Secured, user: str) -> str:
    args = ("configs", "--entity-type", "users", "--entity-name", user, "--describe")
    return secured.command(*args).strip()


def html(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


# -- the JSON API ---------------------------------------------------------------------------


def test_users_api_adds_updates_and_deletes_credentials(
    secured: Secured, admin_console: ServedConsole
) -> None:
    status, body = admin_console.get("/api/users")
    assert status == 200
    admin = {u["user"]: u["credentials"] for u in body["users"]}["admin"]
    assert admin == [
        {"mechanism": "SCRAM-SHA-256", "iterations": 4096},
        {"mechanism": "SCRAM-SHA-512", "iterations": 4096},
    ]
    assert body["mechanisms"] == ["SCRAM-SHA-256", "SCRAM-SHA-512"]

    add_user(admin_console, "dora", "SCRAM-SHA-256", "dora-first-pw", 8192)
    status, body = admin_console.get("/api/users/dora")
    assert status == 200
    assert body["credentials"] == [{"mechanism": "SCRAM-SHA-256", "iterations": 8192}]
    assert "dora-first-pw" not in json.dumps(body)
    assert described_credentials(secured, "dora") == (
        "SCRAM credential configs for user-principal 'dora' are SCRAM-SHA-256=iterations=8192"
    )
    wait_until(lambda: authenticates(secured, "dora", "SCRAM-SHA-256", "dora-first-pw"), 20, "dora")

    add_user(admin_console, "dora", "SCRAM-SHA-256", "dora-second-pw", 4096)  # an update
    wait_until(lambda: refused(secured, "dora", "SCRAM-SHA-256", "dora-first-pw"), 20, "old pw")
    assert authenticates(secured, "dora", "SCRAM-SHA-256", "dora-second-pw")
    assert admin_console.get("/api/users/dora")[1]["credentials"] == [
        {"mechanism": "SCRAM-SHA-256", "iterations": 4096}
    ]

    for fields, named in (
        ({"iterations": "100"}, "iterations must be between 4096 and 16384, not 100"),
        ({"mechanism": "PLAIN"}, "mechanism must be one of SCRAM-SHA-256, SCRAM-SHA-512"),
        ({"password": ""}, "password is required"),
        ({"user": ""}, "user is required"),
    ):
        good = {"user": "dora", "mechanism": "SCRAM-SHA-512", "password": "never-shown-pw"}
        status, body = admin_console.post("/api/users", {**good, **fields})
        assert (status, body["error"]["detail"]) == (400, named)
        assert "never-shown-pw" not in json.dumps(body)

    status, body = admin_console.post("/api/users/dora/delete", {"mechanism": "SCRAM-SHA-256"})
    assert status == 400 and "type the user's name" in body["error"]["detail"]
    status, body = admin_console.post(
        "/api/users/dora/delete", {"mechanism": "SCRAM-SHA-512", "confirm": "dora"}
    )  # a mechanism dora has no credential for: the broker's refusal, by name
    assert (status, body["error"]["kafka_error"]) == (409, "RESOURCE_NOT_FOUND")
    status, body = admin_console.post(
        "/api/users/dora/delete", {"mechanism": "SCRAM-SHA-256", "confirm": "dora"}
    )
    assert (status, body) == (200, {"user": "dora", "deleted": "SCRAM-SHA-256"})
    assert admin_console.get("/api/users/dora")[0] == 404
    assert "dora" not in [u["user"] for u in admin_console.get("/api/users")[1]["users"]]
    assert described_credentials(secured, "dora") == ""
    wait_until(lambda: refused(secured, "dora", "SCRAM-SHA-256", "dora-second-pw"), 20, "gone")


def test_acls_api_creates_filters_previews_and_deletes(
    secured: Secured, admin_console: ServedConsole
) -> None:
    prefixed = {
        "resource_type": "TOPIC",
        "name": "api-",
        "pattern_type": "PREFIXED",
        "principal": "User:dan",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
    }
    literal = {**prefixed, "name": "api-topic", "pattern_type": "LITERAL", "operation": "WRITE"}
    literal["permission"] = "DENY"
    for binding in (prefixed, literal):
        assert admin_console.post("/api/acls", binding) == (200, {"created": binding})

    status, body = admin_console.get("/api/acls", principal="User:dan")
    assert status == 200
    assert body["acls"] == [prefixed, literal]  # sorted by type, then name
    # MATCH: every pattern that applies to a topic called api-topic
    matching = admin_console.get(
        "/api/acls", resource_type="TOPIC", name="api-topic", pattern_type="MATCH"
    )[1]
    assert matching["acls"] == [prefixed, literal]
    exact = admin_console.get(
        "/api/acls", resource_type="topic", name="api-topic", pattern_type="literal"
    )[1]
    assert exact["acls"] == [literal]
    assert exact["filter"]["resource_type"] == "TOPIC"
    listed = secured.command(
        "acls", "--list", "--principal", "User:dan", "--resource-pattern-type", "any"
    )
    assert "(principal=User:dan, host=*, operation=WRITE, permissionType=DENY)" in listed
    assert "(principal=User:dan, host=*, operation=READ, permissionType=ALLOW)" in listed

    for fields, named in (
        ({"principal": "dan"}, "principal 'dan' is not of the form Type:name"),
        ({"operation": "ANY"}, "operation must be one of ALL, READ"),
        ({"pattern_type": "MATCH"}, "pattern_type must be one of LITERAL, PREFIXED"),
    ):
        status, body = admin_console.post("/api/acls", {**prefixed, **fields})
        assert status == 400 and body["error"]["detail"].startswith(named)

    status, preview = admin_console.post("/api/acls/delete", {"principal": "User:dan"})
    assert status == 200
    assert (preview["executed"], preview["acls"]) == (False, [prefixed, literal])
    assert len(admin_console.get("/api/acls", principal="User:dan")[1]["acls"]) == 2  # kept
    status, done = admin_console.post(
        "/api/acls/delete", {"principal": "User:dan", "execute": "true"}
    )
    assert status == 200
    assert (done["executed"], done["acls"]) == (True, [prefixed, literal])
    assert admin_console.get("/api/acls", principal="User:dan")[1]["acls"] == []
    assert "User:dan" not in secured.command("acls", "--list", "--resource-pattern-type", "any")


def test_a_console_without_rights_shows_cluster_authorization_failed(
    secured: Secured, admin_console: ServedConsole
) -> None:
    add_user(admin_console, "ivy", "SCRAM-SHA-512", "ivy-pw", 4096)
    credentials = SaslCredentials("SCRAM-SHA-512", "ivy", "ivy-pw")
    security = ClientSecurity("SASL_PLAINTEXT", sasl=credentials)
    wait_until(lambda: authenticates(secured, "ivy", "SCRAM-SHA-512", "ivy-pw"), 20, "ivy")
    ivys = ServedConsole(secured.bootstrap, security=security)
    try:
        for status, body in (
            ivys.get("/api/acls"),
            ivys.post("/api/acls", {"name": "t", "principal": "User:ivy", "operation": "ALL"}),
            ivys.post("/api/users", {"user": "z", "mechanism": "SCRAM-SHA-256", "password": "x"}),
        ):
            assert (status, body["error"]["kafka_error"]) == (409, "CLUSTER_AUTHORIZATION_FAILED")
            assert "super user" in body["error"]["detail"]
        status, page = html(ivys.url + "/acls")
        assert status == 409
        assert '<code id="kafka-error">CLUSTER_AUTHORIZATION_FAILED</code>' in page
        assert "Traceback" not in page
    finally:
        ivys.stop()
    assert admin_console.get("/api/acls", principal="User:ivy")[1]["acls"] == []


def test_read_only_refuses_user_and_acl_writes(
    admin_console: ServedConsole, read_only: ServedConsole
) -> None:
    binding = {"name": "ro", "principal": "User:ro", "operation": "READ"}
    for path, body in (
        ("/api/users", {"user": "ro", "mechanism": "SCRAM-SHA-256", "password": "ro-pw"}),
        ("/api/users/admin/delete", {"mechanism": "SCRAM-SHA-256", "confirm": "admin"}),
        ("/api/acls", binding),
        ("/api/acls/delete", {"execute": "true"}),
    ):
        status, answer = read_only.post(path, body)
        assert status == 403 and "read-only" in answer["error"]["detail"], path
    assert admin_console.get("/api/users/ro")[0] == 404
    assert len(admin_console.get("/api/users/admin")[1]["credentials"]) == 2
    assert admin_console.get("/api/acls", principal="User:ro")[1]["acls"] == []
    for path, form in (("/users", "upsert-user"), ("/users/admin", "delete-SCRAM-SHA-256"),
                       ("/acls", "create-acl"), ("/acls", "delete-matching")):  # fmt: skip
        status, page = html(read_only.url + path)
        assert status == 200 and f'id="{form}"' not in page
        assert f'id="{form}"' in html(admin_console.url + path)[1]


# -- in the browser -------------------------------------------------------------------------


@needs_chromium
def test_a_user_added_in_the_page_logs_in_with_scram_until_deleted(
    browser: WebDriver, secured: Secured, admin_console: ServedConsole, artifacts: Path
) -> None:
    password = "erin-page-pw"
    browser.get(admin_console.url + "/users")
    browser.find_element(By.ID, "new-user").send_keys("erin")
    Select(browser.find_element(By.ID, "new-mechanism")).select_by_visible_text("SCRAM-SHA-512")
    browser.find_element(By.ID, "new-iterations").clear()
    browser.find_element(By.ID, "new-iterations").send_keys("8192")
    browser.find_element(By.ID, "new-password").send_keys(password)
    submit(browser, browser.find_element(By.ID, "save-user"))
    wait_until(lambda: browser.current_url.endswith("/users/erin"), timeout=30)
    assert [r[:2] for r in cells(browser, "#credentials tr.credential")] == [
        ["SCRAM-SHA-512", "8192"]
    ]
    assert password not in browser.page_source
    browser.save_screenshot(str(artifacts / "user.png"))
    assert described_credentials(secured, "erin") == (
        "SCRAM credential configs for user-principal 'erin' are SCRAM-SHA-512=iterations=8192"
    )
    wait_until(lambda: authenticates(secured, "erin", "SCRAM-SHA-512", password), 20, "erin")

    browser.get(admin_console.url + "/users")
    users = {r[0]: r[1] for r in cells(browser, "#users tr.user")}
    assert users["erin"] == "SCRAM-SHA-512: 8192"
    browser.save_screenshot(str(artifacts / "users.png"))

    browser.get(admin_console.url + "/users/erin")
    form = browser.find_element(By.ID, "delete-SCRAM-SHA-512")
    form.find_element(By.NAME, "confirm").send_keys("erin")
    submit(browser, form.find_element(By.TAG_NAME, "button"))
    wait_until(lambda: browser.current_url.endswith("/users"), timeout=30)
    assert "erin" not in [r[0] for r in cells(browser, "#users tr.user")]
    assert described_credentials(secured, "erin") == ""
    wait_until(lambda: refused(secured, "erin", "SCRAM-SHA-512", password), 20, "erin refused")


@needs_chromium
def test_an_acl_created_in_the_page_is_enforced_until_deleted(
    browser: WebDriver, secured: Secured, admin_console: ServedConsole, artifacts: Path
) -> None:
    topic, principal = "guarded", "User:gus"
    add_user(admin_console, "gus", "SCRAM-SHA-256", "gus-pw", 4096)
    assert admin_console.post("/api/topics", {"name": topic, "partitions": "1"})[0] == 200
    allow = {"name": topic, "principal": principal, "operation": "WRITE"}
    assert admin_console.post("/api/acls", allow)[0] == 200
    wait_until(lambda: produce_error(secured, "gus", "gus-pw", topic) is None, 30, "gus writes")

    browser.get(admin_console.url + "/acls")
    Select(browser.find_element(By.ID, "new-resource-type")).select_by_visible_text("TOPIC")
    browser.find_element(By.ID, "new-name").send_keys(topic)
    Select(browser.find_element(By.ID, "new-pattern-type")).select_by_visible_text("LITERAL")
    browser.find_element(By.ID, "new-principal").send_keys(principal)
    Select(browser.find_element(By.ID, "new-operation")).select_by_visible_text("WRITE")
    Select(browser.find_element(By.ID, "new-permission")).select_by_visible_text("DENY")
    submit(browser, browser.find_element(By.ID, "create"))
    wait_until(lambda: browser.current_url.endswith("/acls"), timeout=30)
    row = ["TOPIC", topic, "LITERAL", principal, "*", "WRITE"]
    assert [r[:7] for r in cells(browser, "#acls tr.acl") if r[:6] == row] == [
        [*row, "ALLOW"],
        [*row, "DENY"],
    ]
    browser.save_screenshot(str(artifacts / "acls.png"))
    listed = secured.command("acls", "--list", "--topic", topic)
    assert f"(principal={principal}, host=*, operation=WRITE, permissionType=DENY)" in listed
    denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    wait_until(lambda: produce_error(secured, "gus", "gus-pw", topic) == denied, 30, "denied")

    # the row's delete shows what it matches (the DENY alone), then deletes it
    browser.get(admin_console.url + f"/acls?principal={principal}&name={topic}")
    (deny,) = [
        r for r in browser.find_elements(By.CSS_SELECTOR, "#acls tr.acl") if "DENY" in r.text
    ]
    submit(browser, deny.find_element(By.TAG_NAME, "button"))
    wait_until(lambda: browser.find_elements(By.ID, "execute"), timeout=30)
    assert browser.find_element(By.ID, "match-count").text == "1"
    assert [r[:7] for r in cells(browser, "#acls tr.acl")] == [[*row, "DENY"]]
    browser.save_screenshot(str(artifacts / "acl-delete-preview.png"))
    assert "permissionType=DENY" in secured.command("acls", "--list", "--topic", topic)
    submit(browser, browser.find_element(By.ID, "execute"))
    wait_until(lambda: browser.current_url.endswith("/acls"), timeout=30)
    assert [r[6] for r in cells(browser, "#acls tr.acl") if r[:6] == row] == ["ALLOW"]
    listed = secured.command("acls", "--list", "--topic", topic)
    assert "permissionType=DENY" not in listed and "permissionType=ALLOW" in listed
    wait_until(lambda: produce_error(secured, "gus", "gus-pw", topic) is None, 30, "allowed again")


@needs_chromium
def test_read_only_pages_offer_no_user_or_acl_write(
    browser: WebDriver, read_only: ServedConsole, artifacts: Path
) -> None:
    browser.get(read_only.url + "/users")
    assert browser.find_element(By.ID, "read-only").text == "read-only"
    assert browser.find_elements(By.ID, "upsert-user") == []
    assert "admin" in [r[0] for r in cells(browser, "#users tr.user")]
    browser.save_screenshot(str(artifacts / "users-read-only.png"))
    browser.get(read_only.url + "/acls")
    assert browser.find_elements(By.ID, "create-acl") == []
    assert browser.find_elements(By.CSS_SELECTOR, "form.delete-acl") == []
    browser.save_screenshot(str(artifacts / "acls-read-only.png"))
