"""An in-memory SCRAM credential lookup (the broker's cache reads ZooKeeper)."""

from __future__ import annotations

from protocol.sasl.scram import SCRAM_MECHANISMS, ScramCredential


class MemoryScramCredentials:
    def __init__(self) -> None:
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    def add(self, mechanism: str, username: str, password: str, iterations: int = 4096) -> None:
        credential = SCRAM_MECHANISMS[mechanism].credential(password, iterations)
        self._credentials[mechanism, username] = credential

    def scram_credential(self, mechanism: str, username: str) -> ScramCredential | None:
        return self._credentials.get((mechanism, username))
