"""The suite's own layout: pytest imports test modules by their basename (the test
directories are not packages; tests/integration/console is one only so that its
package-scoped fixtures end with it), so two test files of one name anywhere under tests/
stop the whole collection. Caught here, in the unit suite, before a full run meets it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]


def test_every_test_module_has_a_basename_of_its_own() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
