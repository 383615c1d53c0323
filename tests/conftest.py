"""Project-wide test settings.

Under CI (CI=true) hypothesis runs derandomized: the same examples every run, so a red
build always points at a reproducible case instead of one random draw. Locally it keeps
exploring new examples and remembers failures in .hypothesis/.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    settings.load_profile("ci")
