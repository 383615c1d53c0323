"""The package table of docs/architecture.md holds: a package imports only the project
packages its row names (any import counts: at module level, inside a function, or only
under TYPE_CHECKING), and the leaf packages import nothing from outside the stdlib but
protocol's codecs and config's .properties library. protocol/ is sans-IO besides: no
sockets, event loops or processes. Two seams inside the packages hold too: event-loop code
reaches ZooKeeper only through zk.facade (the one place that hands calls to threads), and
the request handlers never import the broker's assembly."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def package_table(text: str) -> dict[str, frozenset[str]]:
    """The rows of the "Packages" table: package -> the project packages its "may import"
    cell names (``everything``: every other package). Other words in the cell (stdlib,
    msgspec, kazoo) are the external libraries, which only the leaf rules below check."""
    rows: dict[str, list[str]] = {}
    for line in text.split("## Packages", 1)[1].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("/`"):
            rows[cells[0].strip("`/")] = [word.strip() for word in cells[2].split(",")]
        elif rows and not line.startswith("|"):
            break  # the end of the table
    names = frozenset(rows)
    return {
        package: names - {package} if words == ["everything"] else frozenset(words) & names
        for package, words in rows.items()
    }


#: package -> the project packages it may import (besides itself), read from the one place
#: that states it: the package table of docs/architecture.md
MAY_IMPORT: dict[str, frozenset[str]] = package_table(ARCHITECTURE.read_text())
PROJECT_PACKAGES = frozenset(MAY_IMPORT) | {"tests"}

#: What the leaf packages may import from outside the project (other packages: anything).
#: protocol: the stdlib without I/O, msgspec, a CRC-32C package and the compression codecs;
#: config: the stdlib and the .properties library.
IO_STDLIB = frozenset({"asyncio", "socket", "selectors", "ssl", "subprocess", "asyncore"})
STDLIB = frozenset(sys.stdlib_module_names)
MAY_IMPORT_EXTERNAL: dict[str, frozenset[str]] = {
    "protocol": (STDLIB - IO_STDLIB)
    | {"msgspec", "crc32c", "google_crc32c", "cramjam", "lz4", "zstandard"},
    "timer": STDLIB,
    "config": STDLIB | {"javaproperties"},
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``; relative imports stay
    inside their package and are skipped."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_a_package_imports_only_what_its_row_names(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no package {package}/"
    allowed = MAY_IMPORT[package] | {package}
    bad = [
        f"{path.relative_to(ROOT)}:{line}: import {module}"
        for path in files
        for line, module in imported_modules(path)
        if module.split(".")[0] in PROJECT_PACKAGES - allowed
    ]
    assert bad == []


@pytest.mark.parametrize("package", sorted(MAY_IMPORT_EXTERNAL))
def test_a_leaf_package_imports_only_the_stdlib_and_its_codecs(package: str) -> None:
    allowed = MAY_IMPORT_EXTERNAL[package] | PROJECT_PACKAGES | {"__future__"}
    bad = [
        f"{path.relative_to(ROOT)}:{line}: import {module}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, module in imported_modules(path)
        if module.split(".")[0] not in allowed
    ]
    assert bad == []


def test_the_table_is_read_as_written() -> None:
    assert MAY_IMPORT["protocol"] == frozenset()
    assert MAY_IMPORT["storage"] == {"protocol", "timer", "config"}
    assert MAY_IMPORT["zk"] == {"protocol"}  # kazoo is external
    assert MAY_IMPORT["tools"] == set(MAY_IMPORT) - {"tools"}


def test_the_readme_states_the_same_table() -> None:
    assert (
        package_table((ROOT / "README.md").read_text().replace("## Architecture", "## Packages"))
        == MAY_IMPORT
    )


def test_every_package_has_a_row() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert packages - {"tests"} == set(MAY_IMPORT)


def test_the_scan_sees_every_kind_of_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import asyncio\nfrom storage.log import Log\nfrom . import x\n"
        "def f():\n    import zk.client\n"
    )
    assert [m for _, m in imported_modules(sample)] == ["asyncio", "storage.log", "zk.client"]


#: zk's blocking modules: only the facade (and tools, which run without an event loop)
#: may reach them; asyncio code reaches ZooKeeper through zk.facade.ZkFacade
ZK_BLOCKING = frozenset(
    {
        "zk.session",
        "zk.transactions",
        "zk.brokers",
        "zk.topics",
        "zk.partition_states",
        "zk.configs",
        "zk.controller_election",
        "zk.producer_ids",
        "zk.isr_notifications",
        "zk.admin",
        "zk.scram",
        "zk.client_quotas",
    }
)


@pytest.mark.parametrize("package", ["broker", "controller", "client"])
def test_event_loop_code_reaches_zookeeper_only_through_the_facade(package: str) -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{line}: import {module}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, module in imported_modules(path)
        if module in ZK_BLOCKING
        or (module == "zk" and _imports_names(path, line) & {m[3:] for m in ZK_BLOCKING})
    ]
    assert bad == []


def test_only_the_facade_hands_zookeeper_calls_to_threads() -> None:
    calls = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "zk").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr == "to_thread"
    ]
    assert calls and all(call.startswith("zk/facade.py:") for call in calls)


def test_handlers_never_import_the_assembly() -> None:
    assembly = {"broker.assembly", "broker.server", "broker.lifecycle"}
    bad = [
        f"{path.relative_to(ROOT)}:{line}: import {module}"
        for path in sorted((ROOT / "broker" / "apis").rglob("*.py"))
        for line, module in imported_modules(path)
        if module in assembly
    ]
    assert bad == []


def _imports_names(path: Path, line: int) -> set[str]:
    """The names a ``from zk import a, b`` at ``line`` of ``path`` imports."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.lineno == line:
            return {alias.name for alias in node.names}
    return set()
