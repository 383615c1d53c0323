"""Entry point of the ``minikafka`` command.

Each subcommand lives in its own module of this package and exposes two functions:
``configure(parser)`` adds its arguments, ``run(args) -> int`` does the work and returns
the exit status. Modules keep their heavy imports (asyncio servers, kazoo, pyspark) inside
``run`` so that building the parser stays cheap for every subcommand.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence

#: subcommand -> (module under tools, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "server": ("server", "run one broker from a server.properties file"),
    "zookeeper": ("zookeeper", "run a ZooKeeper server from the pyspark wheel's jars"),
    "cluster": ("cluster", "run a local cluster: ZooKeeper and N brokers"),
    "topics": ("topics", "create, list, describe, alter and delete topics"),
    "configs": (
        "configs",
        "describe and alter topic and broker configs and users' SCRAM credentials",
    ),
    "leader-election": ("leader_election", "elect preferred or unclean partition leaders"),
    "log-dirs": ("log_dirs", "describe each broker's log directories and partitions"),
    "delete-records": ("delete_records", "delete partitions' records below an offset"),
    "reassign-partitions": ("reassign_partitions", "move partitions to other brokers"),
    "consumer-groups": ("consumer_groups", "list, describe, reset and delete consumer groups"),
    "acls": ("acls", "add, remove and list ACLs"),
    "transactions": ("transactions", "list, describe, abort and find hanging transactions"),
    "console-producer": ("console_producer", "produce lines from standard input"),
    "console-consumer": ("console_consumer", "consume records to standard output"),
    "api-versions": ("api_versions", "print the API versions minikafka (or a broker) supports"),
    "dump-log": ("dump_log", "print the batches and index entries of segment files"),
    "perf": ("perf", "produce and consume load tests"),
    "spark": ("spark", "run the PySpark analytics jobs over minikafka logs"),
    "console": (
        "console",
        "the web console: cluster, topics, messages, consumer groups, users, ACLs",
    ),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand's parser; with ``only``, that subcommand's arguments alone (the
    others are listed but not configured), so a command imports no other subcommand's
    module: ``spark`` pulls in pandas, about 100 MB that ``console`` has no use for."""
    parser = argparse.ArgumentParser(prog="minikafka", description="A Kafka-compatible broker.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            importlib.import_module(f"tools.{module}").configure(sp)
        sp.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    only = words[0] if words and words[0] in SUBCOMMANDS else None
    args = build_parser(only).parse_args(words)
    module = importlib.import_module(f"tools.{args._module}")
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """The reader of standard output went away (``minikafka dump-log ... | head``): stop
    quietly, with the status of a writer killed by SIGPIPE, as a shell tool does. Standard
    output is pointed at /dev/null first, or the interpreter's last flush of what is
    still buffered would fail again at exit and print a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
