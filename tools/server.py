"""``minikafka server CONFIG [--override key=value ...]``: run one broker in the foreground.

The configuration is server.properties with Kafka's keys, then ``KAFKA_*`` environment
variables, then each ``--override`` (later wins). A bad value is refused before anything
starts, naming the key. SIGTERM or Ctrl-C shuts the broker down gracefully (controlled
shutdown, in-flight requests finish, logs flushed, clean-shutdown marker, registration
removed); a second signal during shutdown is ignored rather than leaving logs unclean.
Exit status: 0 after a clean shutdown, 1 when the broker could not start.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(name)s: %(message)s"
#: after a completed shutdown, the process must be gone within this many seconds; a
#: worker thread stuck in a blocking call would otherwise keep it alive (asyncio waits for
#: its default executor on exit): then every thread's stack is dumped and it exits
EXIT_GRACE_S = 15
#: set by `minikafka cluster up` to its own pid: a broker whose starter is gone (even by
#: SIGKILL, which it cannot forward) shuts itself down gracefully instead of lingering
PARENT_PID_ENV = "MINIKAFKA_PARENT_PID"
#: how often that broker looks at its parent pid
PARENT_CHECK_S = 1.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="the broker's server.properties")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a configuration key (repeatable)",
    )
    parser.add_argument(
        "--log-level", default="INFO", help="logging level (DEBUG, INFO, WARNING; default INFO)"
    )


def run(args: argparse.Namespace) -> int:
    from broker.config import BrokerConfig, ConfigError
    from broker.network import run as run_loop
    from broker.security.sasl_listener import check_sasl_listeners, listener_configs

    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT, stream=sys.stderr)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    try:
        config = BrokerConfig.load(args.config, args.override, os.environ)
        check_sasl_listeners(listener_configs(config))  # refused before anything starts
    except ConfigError as exc:
        print(f"minikafka server: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"minikafka server: cannot read {args.config}: {exc}", file=sys.stderr)
        return 1
    for key in config.unknown_keys:
        logging.getLogger("minikafka").warning("unknown configuration key %s (ignored)", key)
    import faulthandler

    status = run_loop(serve(config), kind=config.get_str("event.loop") or "uvloop")
    faulthandler.cancel_dump_traceback_later()
    return status


async def serve(config: object) -> int:
    """Start the broker, wait for SIGTERM/SIGINT, shut it down. Returns the exit status."""
    import asyncio
    import signal

    from broker.config import BrokerConfig
    from broker.server import BrokerServer, StartupError
    from storage.errors import StorageError

    assert isinstance(config, BrokerConfig)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    parent = os.environ.get(PARENT_PID_ENV)
    watch = (
        asyncio.create_task(_stop_when_orphaned(int(parent), stop), name="parent-watch")
        if parent and parent.isdigit()
        else None
    )
    server = BrokerServer(config)
    startup = asyncio.create_task(server.startup(), name="broker-startup")
    stopping = asyncio.create_task(stop.wait(), name="stop-signal")
    await asyncio.wait({startup, stopping}, return_when=asyncio.FIRST_COMPLETED)
    status = 0
    if not startup.done():
        startup.cancel()
        await asyncio.wait({startup})
    elif startup.exception() is not None:
        exc = startup.exception()
        if isinstance(exc, StartupError | StorageError | OSError):
            print(f"minikafka server: cannot start: {exc}", file=sys.stderr, flush=True)
        else:
            logging.getLogger("minikafka").error("startup failed", exc_info=exc)
        status = 1
    else:
        print(f"minikafka server: broker {server.broker_id} started", file=sys.stderr, flush=True)
        await stopping
    stopping.cancel()
    if watch is not None:
        watch.cancel()
    await server.shutdown()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.remove_signal_handler(sig)
    import faulthandler

    faulthandler.dump_traceback_later(EXIT_GRACE_S, exit=True)
    return status


async def _stop_when_orphaned(parent_pid: int, stop: asyncio.Event) -> None:
    """Set ``stop`` once this process is no longer the child of ``parent_pid`` (the parent
    died and the process was re-parented)."""
    import asyncio

    while os.getppid() == parent_pid:
        await asyncio.sleep(PARENT_CHECK_S)
    logging.getLogger("minikafka").warning(
        "the process that started this broker (pid %d) is gone: shutting down", parent_pid
    )
    stop.set()
