"""Kafka's text form of a Uuid (topic ids, cluster ids): URL-safe base64 of the 16 bytes,
without the ``==`` padding, so always 22 characters.

This is the form ZooKeeper's topic znodes, ``partition.metadata`` files and the tools'
output use; on the wire a Uuid is 16 raw bytes (``protocol.primitives``).
"""

from __future__ import annotations

import base64
import uuid


def uuid_to_base64(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def uuid_from_base64(text: str) -> uuid.UUID:
    """The Uuid ``text`` spells; ValueError when it is not 16 bytes of base64url."""
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, TypeError) as exc:  # binascii.Error is a ValueError
        raise ValueError(f"not a base64 uuid: {text!r}") from exc
