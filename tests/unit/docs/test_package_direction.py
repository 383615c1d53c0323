"""The package table of docs/architecture.md holds: a package imports only the project
packages its row names (any import counts: at module level, inside a function, or only
under TYPE_CHECKING), and the three leaf packages import nothing from outside the stdlib but
protocol's codecs and config's .properties library. protocol/ is sans-IO besides: no
sockets, event loops or processes."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

#: package -> the project packages it may import (besides itself).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "protocol": frozenset(),
    "timer": frozenset(),
    "config": frozenset(),
    "storage": frozenset({"protocol", "timer", "config"}),
    "zk": frozenset({"protocol"}),
    "client": frozenset({"protocol", "timer"}),
    "controller": frozenset({"protocol", "timer", "config", "zk", "client"}),
    "broker": frozenset({"protocol", "timer", "config", "storage", "zk", "client", "controller"}),
    "tools": frozenset(
        {
            "protocol",
            "timer",
            "config",
            "storage",
            "zk",
            "client",
            "controller",
            "broker",
            "spark_jobs",
        }
    ),
    "spark_jobs": frozenset({"protocol", "storage", "client"}),
}
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
