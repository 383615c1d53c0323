"""``minikafka zookeeper``: a real ZooKeeper server in the foreground.

It runs the ZooKeeper jar that the pyspark wheel ships with the machine's Java, bound to
127.0.0.1 (``--host 0.0.0.0`` in a container, so the other containers reach it), with
``tickTime=500`` (see tools.zookeeper_server). Ctrl-C or SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=2181, help="client port (default 2181)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="directory for zoo.cfg and the data (default: a new temporary directory)",
    )


def run(args: argparse.Namespace) -> int:
    from tools.zookeeper_server import main_foreground

    data_dir: Path = args.dir or Path(tempfile.mkdtemp(prefix="minikafka-zk-"))
    return main_foreground(data_dir.resolve(), args.port, args.host)
