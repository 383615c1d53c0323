"""The wheel ships every package of the project, and the ``minikafka`` entry point names a
function that exists: ``pip install .`` followed by ``minikafka --help`` from outside the
repository works only when both hold.
"""

from __future__ import annotations

import fnmatch
import importlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _top_level_packages() -> set[str]:
    return {
        p.parent.name
        for p in ROOT.glob("*/__init__.py")
        if not p.parent.name.startswith(".") and p.parent.name != "tests"
    }


def test_every_top_level_package_is_in_the_wheel() -> None:
    patterns = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    missing = {
        name
        for name in _top_level_packages()
        if not any(fnmatch.fnmatch(name, pattern) for pattern in patterns)
    }
    assert not missing, f"packages left out of the wheel: {sorted(missing)}"


def test_the_minikafka_entry_point_resolves() -> None:
    target = PYPROJECT["project"]["scripts"]["minikafka"]
    module_name, _, attr = target.partition(":")
    assert callable(getattr(importlib.import_module(module_name), attr))
