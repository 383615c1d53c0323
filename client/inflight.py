"""Requests in flight on one connection, matched to responses by correlation id (sans-IO).

A response frame starts with its int32 correlation id (response header v0 and v1 alike),
so the tracker can tell which request a frame answers before decoding anything else.
Kafka answers the requests of a connection in the order they were sent; a correlation id
that is not in flight, or that skips an older one, means the stream can no longer be
trusted and the connection must be closed (as Kafka's clients do).

Not safe across tasks: one tracker per connection, used from its event loop.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

W = TypeVar("W")

_INT32: Final = struct.Struct(">i")
#: correlation ids are int32 and wrap to 0 (negative ids are left unused)
MAX_CORRELATION_ID: Final = 0x7FFFFFFF


class CorrelationMismatch(Exception):
    """A response that does not answer the oldest request in flight."""


@dataclass(frozen=True, slots=True)
class InFlight(Generic[W]):
    correlation_id: int
    api_key: int
    api_version: int
    #: what to wake up when the answer arrives (an asyncio.Future in the connection)
    waiter: W
    #: when the request times out, on the caller's clock, after ``timeout_s``
    deadline: float = float("inf")
    timeout_s: float = float("inf")


class InFlightRequests(Generic[W]):
    def __init__(self, first_id: int = 0) -> None:
        self._next = first_id
        self._pending: OrderedDict[int, InFlight[W]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def __iter__(self) -> Iterator[InFlight[W]]:
        """The requests in flight, oldest first (do not add or remove while iterating)."""
        return iter(self._pending.values())

    def next_id(self) -> int:
        """A fresh correlation id (also used for requests that expect no response)."""
        cid = self._next
        self._next = 0 if cid >= MAX_CORRELATION_ID else cid + 1
        return cid

    def add(
        self,
        api_key: int,
        api_version: int,
        waiter: W,
        deadline: float = float("inf"),
        timeout_s: float = float("inf"),
    ) -> InFlight[W]:
        entry = InFlight(self.next_id(), api_key, api_version, waiter, deadline, timeout_s)
        self._pending[entry.correlation_id] = entry
        return entry

    def complete(self, frame: bytes | bytearray | memoryview) -> InFlight[W]:
        """The request ``frame`` (a response without its size prefix) answers; it leaves
        the tracker. Raises CorrelationMismatch for a short frame, an unknown id or an
        answer out of order."""
        if len(frame) < 4:
            raise CorrelationMismatch(f"response of {len(frame)} bytes has no header")
        (cid,) = _INT32.unpack_from(frame, 0)
        if not self._pending:
            raise CorrelationMismatch(f"response {cid} with no request in flight")
        oldest = next(iter(self._pending))
        if cid != oldest:
            raise CorrelationMismatch(f"response {cid} while {oldest} is the oldest in flight")
        return self._pending.pop(cid)

    def forget(self, correlation_id: int) -> InFlight[W] | None:
        """Drop one request (its caller gave up); the connection is usually closed next."""
        return self._pending.pop(correlation_id, None)

    def drain(self) -> list[InFlight[W]]:
        """Everything still in flight, oldest first, leaving the tracker empty (for
        failing every waiter when the connection goes)."""
        entries = list(self._pending.values())
        self._pending.clear()
        return entries
