"""The console's integration fixtures: one 3-broker cluster for the whole package (the
API and the browser tests share it), consoles served on free ports
(``tests.integration.console.served``), one headless Chromium for the browser tests
(``tests.integration.console.browsing``), and each test's artifacts directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cluster import TestCluster, start_cluster
from tests.integration.console.browsing import CHROMEDRIVER, CHROMIUM
from tests.integration.console.served import ServedConsole
from tools.zookeeper_server import ZooKeeperServer


@pytest.fixture(scope="package")
def console_cluster(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestCluster]:
    # a group's first members are assigned at once (no 3 s wait for more of them)
    overrides = (("group.initial.rebalance.delay.ms", "0"),)
    yield from start_cluster(zookeeper, tmp_path_factory.mktemp("console-cluster"), 3, overrides)


@pytest.fixture(scope="package")
def console(console_cluster: TestCluster) -> Iterator[ServedConsole]:
    layout = console_cluster.layout
    metrics = tuple(f"{i}={layout.metrics_url(i)}" for i in range(layout.brokers))
    served = ServedConsole(layout.bootstrap_servers, metrics=metrics)
    yield served
    served.stop()


@pytest.fixture(scope="package")
def read_only_console(console_cluster: TestCluster) -> Iterator[ServedConsole]:
    served = ServedConsole(console_cluster.layout.bootstrap_servers, read_only=True)
    yield served
    served.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by selenium (a WebDriver); skips without Chromium."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("the browser tests need chromium and chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture
def artifacts(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """tmp/artifacts/<test>: where a browser test saves its screenshots."""
    base = tmp_path_factory.getbasetemp() / "artifacts"
    path: Path = base / str(request.node.name)
    path.mkdir(parents=True, exist_ok=True)
    return path
