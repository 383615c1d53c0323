"""Fixtures shared by the timer tests."""

from __future__ import annotations

import pytest

from timer import MockClock


@pytest.fixture
def clock() -> MockClock:
    """A mock clock: time moves only when a test advances it."""
    return MockClock(monotonic_ms=10_000)
