"""ConfigError: the one error a configuration value that cannot be used raises.

It is a ValueError, so callers that only want "bad input" catch that; ``key`` names the
offending key (or the text that could not be read, for a malformed line or override),
which is what the broker's startup message, AlterConfigs' error message and the
controller's warnings print.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value that cannot be used; ``key`` names the offending key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"invalid configuration {key}: {message}")
        self.key = key
