"""What the console's browser tests share: where Chromium and its driver are (the tests
are skipped without them), reading a page's table cells, and running the ``minikafka``
command as a person does, to check a page's effect from outside the console, and
submitting a form (a click, then the next page loaded). The
``browser`` fixture itself (one headless Chromium for the package) is in conftest.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.polling import wait_until

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="the browser tests need chromium and chromedriver (make system-deps installs "
    "Debian's chromium and chromium-driver)",
)


def minikafka(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tools.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def cells(driver: WebDriver, selector: str) -> list[list[str]]:
    from selenium.webdriver.common.by import By

    return [
        [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        for row in driver.find_elements(By.CSS_SELECTOR, selector)
    ]


def submit(driver: WebDriver, button: WebElement, timeout: float = 30.0) -> None:
    """Click a form's button and return once the page it leads to has loaded.

    Waiting on the URL alone is not enough: a form posted from /acls that redirects back to
    /acls shows the new URL at once, and the old page's elements go stale under the reader
    when the new one arrives. The old document's root going stale marks the new page."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    old = driver.find_element(By.TAG_NAME, "html")
    button.click()

    def replaced() -> bool:
        try:
            old.tag_name  # noqa: B018 - any call on a stale element raises
        except StaleElementReferenceException:
            return True
        return False

    wait_until(replaced, timeout, "the next page to load")
    wait_until(
        lambda: driver.execute_script("return document.readyState") == "complete",
        timeout,
        "the next page to be complete",
    )
