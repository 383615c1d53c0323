"""``minikafka console``: the web console (``web/``) on uvicorn.

    minikafka console --bootstrap-server H:P [--command-config FILE] [--port 8080]
        [--host 127.0.0.1] [--read-only] [--metrics-url [ID=]URL ...] [--users-file FILE]

It binds 127.0.0.1 unless ``--host`` says otherwise, connects with the client properties
of ``--command-config`` (security.protocol, sasl.*, ssl.*), and starts even while the
cluster is down (its pages say so until it answers). ``--metrics-url`` may repeat; with
``ID=`` the endpoint's rates are shown as broker ID's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from tools.command import CommandError, add_bootstrap_server, client_config
from tools.server import PARENT_CHECK_S, PARENT_PID_ENV

LOOPBACK = ("127.0.0.1", "localhost", "::1")
SCRAPE_INTERVAL_S = 5.0
#: ten minutes of samples
SCRAPE_KEEP = 120


def configure(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_server(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (8080)")
    parser.add_argument("--read-only", action="store_true", help="show, never change")
    parser.add_argument(
        "--metrics-url",
        action="append",
        default=[],
        metavar="[ID=]URL",
        help="a broker's Prometheus endpoint (repeatable)",
    )
    parser.add_argument(
        "--users-file", metavar="FILE", help="name:password lines: HTTP basic authentication"
    )


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from client.client import KafkaClient
    from timer.clock import SystemClock
    from web.app import create_app
    from web.context import ConsoleSettings
    from web.metrics import parse_target
    from web.safety import UsersFileError, read_users

    try:
        config = client_config(
            args,
            client_id="minikafka-console",
            connect_timeout_s=5.0,
            request_timeout_s=15.0,
            retries=3,
            operation_timeout_s=15.0,
        )
        users = None if args.users_file is None else read_users(args.users_file)
        for target in args.metrics_url:
            parse_target(target)
        client = KafkaClient(args.bootstrap_server, config)
    except (CommandError, UsersFileError, ValueError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    settings = ConsoleSettings(
        bootstrap=args.bootstrap_server,
        read_only=args.read_only,
        metrics_urls=tuple(args.metrics_url),
        users=users,
        scrape_interval_s=SCRAPE_INTERVAL_S,
        scrape_keep=SCRAPE_KEEP,
    )
    app = create_app(client, settings, SystemClock())
    if users is None and args.host not in LOOPBACK:
        print(
            f"Warning: the console listens on {args.host} without --users-file: anyone "
            "who reaches that address can read and change the cluster"
            + (" (it is read-only)" if args.read_only else ""),
            file=sys.stderr,
            flush=True,
        )
    print(f"minikafka console on http://{args.host}:{args.port}/", flush=True)
    server = uvicorn.Server(
        uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", lifespan="on")
    )

    async def serve() -> None:
        parent = os.environ.get(PARENT_PID_ENV)
        watch = (
            asyncio.create_task(_exit_when_orphaned(int(parent), server))
            if parent and parent.isdigit()
            else None
        )
        try:
            await server.serve()
        finally:
            if watch is not None:
                watch.cancel()
            await client.close()

    asyncio.run(serve())
    return 0


async def _exit_when_orphaned(parent_pid: int, server: Any) -> None:
    """Stop serving once the process that started this one (``cluster up``) is gone."""
    while os.getppid() == parent_pid:
        await asyncio.sleep(PARENT_CHECK_S)
    server.should_exit = True
