"""protocol/ is sans-IO: its imports are the stdlib (minus I/O and event loops), msgspec,
a CRC-32C package and compression libraries; never another package of the project."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PROTOCOL = Path(__file__).resolve().parents[3] / "protocol"

FORBIDDEN_STDLIB = {"asyncio", "socket", "selectors", "ssl", "subprocess", "asyncore"}
ALLOWED_THIRD_PARTY = {"msgspec", "crc32c", "google_crc32c", "cramjam", "lz4", "zstandard"}
PROJECT_PACKAGES = {"broker", "controller", "storage", "timer", "spark_jobs", "tests"}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_protocol_imports_only_pure_dependencies() -> None:
    files = sorted(PROTOCOL.rglob("*.py"))
    assert len(files) > 10
    bad = []
    for path in files:
        for line, module in _imports(path):
            top = module.split(".")[0]
            if top == "protocol" or top == "__future__":
                continue
            allowed = (top in sys.stdlib_module_names and top not in FORBIDDEN_STDLIB) or (
                top in ALLOWED_THIRD_PARTY
            )
            if not allowed or top in PROJECT_PACKAGES:
                bad.append(f"{path.relative_to(PROTOCOL.parent)}:{line}: import {module}")
    assert bad == []


def test_the_scan_would_catch_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import asyncio\nfrom storage.log import Log\nfrom protocol import x\n")
    assert [m for _, m in _imports(sample)] == ["asyncio", "storage.log", "protocol"]
