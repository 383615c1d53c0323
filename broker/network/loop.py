"""Choosing the event loop: uvloop by default (``event.loop=uvloop``), plain asyncio too."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")

LOOP_KINDS = ("uvloop", "asyncio")


def new_event_loop(kind: str = "uvloop") -> asyncio.AbstractEventLoop:
    """A fresh loop of ``kind``; falls back to asyncio (with a warning) without uvloop."""
    if kind not in LOOP_KINDS:
        raise ValueError(f"event loop must be one of {LOOP_KINDS}, not {kind!r}")
    if kind == "uvloop":
        try:
            import uvloop
        except ImportError:
            log.warning("uvloop is not installed; using the asyncio event loop")
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run(main: Coroutine[Any, Any, _T], kind: str = "uvloop") -> _T:
    """``asyncio.run`` on a loop of ``kind``."""
    with asyncio.Runner(loop_factory=lambda: new_event_loop(kind)) as runner:
        return runner.run(main)
