"""What the admin subcommands share: the broker option, the error they refuse with, and
their exit status.

An admin command (topics, configs, log-dirs, leader-election, reassign-partitions,
consumer-groups, delete-records) runs one coroutine against the cluster. A problem it can
name -- a bad command line or file, an answer the cluster refused (:class:`CommandError`),
a client error -- is printed on stderr in the wording of the Kafka tool it mirrors, and the
command exits with status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from client import ClientError


def add_bootstrap_server(parser: argparse.ArgumentParser) -> None:
    """The required ``--bootstrap-server HOST:PORT[,...]`` every admin command asks."""
    parser.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT[,...]", help="brokers to ask"
    )


class CommandError(Exception):
    """A problem with the command, its files or the cluster's answer, reported as Kafka's
    tool reports it (no traceback, exit status 1)."""


def run_command(
    work: Coroutine[Any, Any, object],
    report: Callable[[Exception], None],
    also: tuple[type[Exception], ...] = (),
) -> int:
    """Run ``work`` to its end: exit status 0, or 1 once ``report`` has printed the
    error. ``also`` names further exception types the command reports rather than raises."""
    reported: tuple[type[Exception], ...] = (CommandError, ClientError, *also)
    try:
        asyncio.run(work)
    except reported as exc:
        report(exc)
        return 1
    return 0
