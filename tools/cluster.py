"""``minikafka cluster up``: a ZooKeeper and N brokers on this machine, in the foreground.

Layout (docs/architecture.md, "A local cluster"; ``tools.cluster_layout``), broker i
counting from 0::

    client listener     PLAINTEXT://127.0.0.1:<9092+i> (with ``--security sasl_ssl``:
                        SASL_SSL://..., also the inter-broker listener)
    control plane       CONTROLLER://127.0.0.1:<9192+i> (the same protocol)
    metrics             http://127.0.0.1:<9600+i>/metrics
    ZooKeeper           127.0.0.1:2181, tickTime=500 (embedded unless zookeeper.connect
                        is given with --override)
    files               DIR/broker-<i>/server.properties, DIR/broker-<i>/logs (log.dirs),
                        DIR/broker-<i>/server.log (the broker's output), DIR/zookeeper/,
                        DIR/prometheus.yml (scrapes every broker: ``prometheus
                        --config.file=DIR/prometheus.yml`` watches the cluster)

``--security`` ssl, sasl_plaintext or sasl_ssl secures every listener: a local CA, broker
certificates, an admin user created in ZooKeeper before the brokers start, and
DIR/client.properties for clients (``tools.cluster_security``); the readiness checks
connect with the same client properties.

Each broker is a separate ``minikafka server DIR/broker-<i>/server.properties`` process,
so a broker can be killed, paused or restarted on its own.

Stopping (Ctrl-C, SIGTERM): the brokers that are not the controller first, together,
then the controller, then ZooKeeper (``stop_order``; each broker gets SIGTERM, a graceful
shutdown, and SIGKILL after a grace period). Moving leaderships and deregistering need
ZooKeeper, and the controller must outlive the others to move their leaderships; it then
finds nobody to hand its own to and stops asking at once. Whatever signal reaches a whole
group of processes, this order holds:

- a terminal's Ctrl-C or ``kill -- -PGID`` reaches only this process: the brokers,
  ZooKeeper and the watchdog each run in a session of their own;
- a signal to every process of a service (systemd's control-group kill) reaches the
  brokers directly, and they stop at once, but ZooKeeper ignores SIGTERM and SIGINT (it
  is started with them ignored, which the JVM keeps) and is stopped here, last, with
  SIGHUP;
- SIGKILL of this process: the watchdog (tools.watchdog) stops the brokers, then
  ZooKeeper.

``LocalCluster`` is the same machinery as a class; the integration tests start their
clusters through it (on free ports), so they run exactly what this command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tools.cluster_console import console_log_path, start_console
from tools.cluster_layout import PROMETHEUS_RULES, SESSION_TIMEOUT_MS, ClusterLayout
from tools.cluster_security import (
    SECURITY_CHOICES,
    prepare_security,
    security_protocol,
    summary_lines,
)
from tools.processes import terminate
from tools.server import PARENT_PID_ENV
from tools.watchdog import announcement

__all__ = [
    "PROMETHEUS_RULES",
    "SESSION_TIMEOUT_MS",
    "ClusterLayout",
    "LocalCluster",
    "port_in_use",
    "stop_order",
]

if TYPE_CHECKING:
    from client.security import ClientSecurity
    from tools.cluster_security import ClusterSecurity
    from tools.zookeeper_server import ZooKeeperServer


def broker_command(config_path: Path) -> list[str]:
    """The command that runs one broker: ``minikafka server CONFIG``."""
    return [sys.executable, "-m", "tools.main", "server", str(config_path)]


def watchdog_command(directory: Path) -> list[str]:
    """The command that runs the cluster's watchdog (tools.watchdog)."""
    return [sys.executable, "-m", "tools.watchdog", "--cluster-dir", str(directory)]


def stop_order(running: Sequence[int], controller: int | None) -> list[list[int]]:
    """The groups of brokers to stop one after the other: every broker but the
    controller together, then the controller (all together when it is not known)."""
    others = [i for i in running if i != controller]
    last = [i for i in running if i == controller]
    return [group for group in (others, last) if group]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as the broker's acceptor does: a port in TIME_WAIT is free to listen on
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


@dataclass
class LocalCluster:
    """A ZooKeeper (optional) and N broker processes. Not thread safe.

    Brokers are started with ``broker_command``; their output goes to
    ``layout.output_path(i)``. ``stop_broker``/``kill_broker``/``start_broker`` act on
    one broker by its pid; ``stop`` ends everything this object started, nothing else.
    """

    layout: ClusterLayout
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    zookeeper: ZooKeeperServer | None = None
    #: progress of ``stop`` (``cluster up`` prints it)
    report: Callable[[str], None] = field(default=lambda _line: None)
    _outputs: dict[int, IO[bytes]] = field(default_factory=dict)
    #: when each broker process was last started (epoch ms): a registration older than
    #: that is its previous process's, left behind by a kill until its session expires
    _started_ms: dict[int, int] = field(default_factory=dict)
    #: the watchdog process and our end of its pipe (tools.watchdog)
    _watchdog: subprocess.Popen[bytes] | None = None
    _watchdog_pipe: IO[bytes] | None = None
    _client_security: ClientSecurity | None = None

    def start(self, timeout_s: float = 90.0) -> None:
        """Start ZooKeeper (when embedded) and every broker; return once all brokers are
        registered in ZooKeeper and every broker's Metadata lists them all, or raise (after
        stopping what started)."""
        layout = self.layout
        layout.directory.mkdir(parents=True, exist_ok=True)
        busy = [
            p
            for p in (*layout.client_ports, *layout.control_ports, *layout.metrics_ports)
            if port_in_use(p)
        ]
        if layout.zookeeper_connect is None and port_in_use(layout.zookeeper_port):
            busy.append(layout.zookeeper_port)
        if busy:
            raise RuntimeError(f"ports already in use: {busy}; is another cluster running?")
        try:
            if layout.zookeeper_connect is None:
                from tools.zookeeper_server import ZooKeeperServer

                zk = ZooKeeperServer(
                    data_dir=layout.directory / "zookeeper",
                    port=layout.zookeeper_port,
                    ignore_stop_signals=True,
                )
                zk.start(on_spawn=lambda pid: self._announce("zookeeper", pid))
                self.zookeeper = zk
            layout.write_configs()
            if layout.security is not None:  # the brokers' own user, before they start
                layout.security.create_users(layout.zk_connect, timeout_s)
            for i in range(layout.brokers):
                self.start_broker(i)
            deadline = time.monotonic() + timeout_s
            self.wait_registered(range(layout.brokers), timeout_s)
            self.wait_metadata_complete(max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.stop()
            raise

    def start_broker(self, i: int) -> subprocess.Popen[bytes]:
        old = self._outputs.pop(i, None)
        if old is not None:
            old.close()
        out = open(self.layout.output_path(i), "ab")  # noqa: SIM115 - closed in stop/restart
        self._outputs[i] = out
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env[PARENT_PID_ENV] = str(os.getpid())  # brokers end themselves if we are killed
        # truncated to whole ms, as ZooKeeper's ctime is: the new registration is never older
        self._started_ms[i] = int(time.time() * 1000)
        proc = subprocess.Popen(
            broker_command(self.layout.config_path(i)),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C reaches the brokers through us only
        )
        self.processes[i] = proc
        self._announce("broker", proc.pid)
        return proc

    def _announce(self, kind: str, pid: int | None) -> None:
        """Tell the watchdog about a process we started (starting the watchdog first if
        it is not running; ``pid`` None only starts it)."""
        if self._watchdog is None or self._watchdog.poll() is not None:
            self.layout.directory.mkdir(parents=True, exist_ok=True)
            read_end, write_end = os.pipe()  # both close-on-exec: no child inherits them
            try:
                self._watchdog = subprocess.Popen(
                    watchdog_command(self.layout.directory),
                    stdin=read_end,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            finally:
                os.close(read_end)
            self._watchdog_pipe = os.fdopen(write_end, "wb", buffering=0)
            # a new watchdog (the first, or after its predecessor died) learns of
            # everything already running
            zk = self.zookeeper.process if self.zookeeper is not None else None
            if zk is not None and zk.poll() is None and zk.pid != pid:
                self._tell_watchdog(announcement("zookeeper", zk.pid))
            for proc in self.processes.values():
                if proc.poll() is None and proc.pid != pid:
                    self._tell_watchdog(announcement("broker", proc.pid))
        if pid is not None:
            self._tell_watchdog(announcement(kind, pid))

    def _tell_watchdog(self, line: str | None) -> None:
        if line is not None and self._watchdog_pipe is not None:
            with contextlib.suppress(OSError):  # it died: nothing to tell
                self._watchdog_pipe.write(line.encode())

    def _dismiss_watchdog(self) -> None:
        """Everything is stopped: tell the watchdog so, and let it exit."""
        pipe, self._watchdog_pipe = self._watchdog_pipe, None
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.write(b"done\n")
            pipe.close()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None:
            try:
                watchdog.wait(10)  # it exits once it has read "done" and end-of-file
            except subprocess.TimeoutExpired:
                watchdog.kill()
                watchdog.wait(10)

    def registered_brokers(self) -> list[int]:
        return sorted(self.registrations())

    def registrations(self) -> dict[int, int]:
        """Each registered broker id and when its znode was made (ZooKeeper's ctime, ms)."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.layout.zk_connect, timeout=5.0)
        with warnings.catch_warnings():
            # before the first broker starts, a chroot may not exist yet: that is fine here
            warnings.simplefilter("ignore", UserWarning)
            client.start(timeout=10)
        try:
            if client.exists("/brokers/ids") is None:
                return {}
            found: dict[int, int] = {}
            for child in client.get_children("/brokers/ids"):
                stat = client.exists(f"/brokers/ids/{child}")
                if stat is not None:  # gone between the listing and the look
                    found[int(child)] = stat.ctime
            return found
        finally:
            client.stop()
            client.close()

    def wait_registered(self, brokers: Sequence[int] | range, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        wanted = set(brokers)
        while True:
            for i in wanted:
                proc = self.processes.get(i)
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(
                        f"broker {i} exited with status {proc.returncode} during startup; "
                        f"see {self.layout.output_path(i)}"
                    )
            with contextlib.suppress(Exception):  # ZooKeeper may be briefly unreachable
                # after a kill -9 the old process's registration outlives it until its
                # session expires: only one made since the last start counts
                made = self.registrations()
                if all(made.get(i, -1) >= self._started_ms.get(i, 0) for i in wanted):
                    return
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"brokers {sorted(wanted)} did not all register within {timeout_s:.0f}s"
                )
            time.sleep(0.2)  # polling interval of a bounded wait

    def wait_metadata_complete(self, timeout_s: float) -> None:
        """Wait until ``metadata_complete()``: a cluster is not "up" before it.

        Registered in ZooKeeper is not yet known to the other brokers: the controller
        tells them with UpdateMetadata a moment later. Until then a broker asked to create
        a topic of replication factor N refuses it with INVALID_REPLICATION_FACTOR."""
        deadline = time.monotonic() + timeout_s
        while not self.metadata_complete():
            if time.monotonic() >= deadline:
                views = [self.metadata_view(i) for i in range(self.layout.brokers)]
                raise RuntimeError(
                    f"brokers' metadata did not list all {self.layout.brokers} brokers and "
                    f"one controller within {timeout_s:.0f}s (each: (brokers, controller) "
                    f"{views})"
                )
            time.sleep(0.2)  # polling interval of a bounded wait

    def metadata_complete(self) -> bool:
        """Whether every broker's Metadata lists every broker and names the same
        controller, one of them: the settled state that tests and ``cluster up`` wait for."""
        wanted = self.layout.brokers
        views = [self.metadata_view(i) for i in range(wanted)]
        controllers = {controller for _, controller in views}
        return (
            all(known == wanted for known, _ in views)
            and len(controllers) == 1
            and 0 <= controllers.pop() < wanted
        )

    def metadata_view(self, i: int) -> tuple[int, int]:
        """(how many brokers, controller id) in broker i's Metadata; (0, -1) when it does
        not answer."""
        import asyncio

        from client.connection import ConnectionConfig, request_once
        from client.errors import ClientError
        from client.security import PLAINTEXT
        from protocol.api import ApiKey
        from protocol.messages import MetadataRequest

        security = self.layout.security
        config = ConnectionConfig(
            "minikafka-cluster",
            5.0,
            request_timeout_s=5.0,
            security=PLAINTEXT if security is None else self.client_security(security),
        )
        body = MetadataRequest(topics=[], allow_auto_topic_creation=False)
        port = self.layout.client_ports[i]
        try:
            response = asyncio.run(
                request_once("127.0.0.1", port, ApiKey.METADATA, 1, body, config)
            )
        except ClientError:
            return 0, -1
        return len(response.brokers), response.controller_id

    def client_security(self, security: ClusterSecurity) -> ClientSecurity:
        """The readiness checks' ClientSecurity, made once (a TLS context reads files)."""
        if self._client_security is None:
            self._client_security = security.client_security()
        return self._client_security

    def signal_broker(self, i: int, sig: int) -> None:
        proc = self.processes[i]
        if proc.poll() is None:
            os.kill(proc.pid, sig)

    def kill_broker(self, i: int) -> None:
        """kill -9, then reap it."""
        self.signal_broker(i, signal.SIGKILL)
        self.processes[i].wait(30)

    def stop_broker(self, i: int, grace_s: float = 60.0) -> int | None:
        """SIGTERM (graceful shutdown), SIGKILL after ``grace_s``; the exit status."""
        proc = self.processes.get(i)
        return None if proc is None else terminate(proc, grace_s)

    def controller_id(self) -> int | None:
        """The active controller's broker id from /controller, None if there is none or
        ZooKeeper cannot be asked."""
        from kazoo.client import KazooClient

        client = KazooClient(hosts=self.layout.zk_connect, timeout=5.0)
        try:
            client.start(timeout=2)  # a ZooKeeper that is gone must not hold up the stop
            data, _stat = client.get("/controller")
            return int(json.loads(data)["brokerid"])
        except Exception:  # no controller, or no ZooKeeper: stop every broker at once
            return None
        finally:
            client.stop()
            client.close()

    def stop(self, grace_s: float = 60.0) -> None:
        """Stop every broker in ``stop_order`` (each group SIGTERMed at once, then waited
        for), then ZooKeeper, then dismiss the watchdog."""
        running = [i for i, proc in self.processes.items() if proc.poll() is None]
        controller = self.controller_id() if len(running) > 1 else None
        for group in stop_order(running, controller):
            which = "the controller" if group == [controller] else "brokers"
            self.report(f"stopping {which} {', '.join(map(str, group))}")
            for i in group:
                with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
                    self.signal_broker(i, signal.SIGCONT)
                    self.signal_broker(i, signal.SIGTERM)
            for i in group:
                self.stop_broker(i, grace_s)
        for out in self._outputs.values():
            out.close()
        self._outputs.clear()
        zk = self.zookeeper
        if zk is not None:
            self.report("stopping ZooKeeper")
            zk.stop()
            self.zookeeper = None
        self._dismiss_watchdog()


# --- the command ------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="start ZooKeeper and N brokers in the foreground")
    up.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    up.add_argument(
        "--dir", type=Path, default=Path("data"), help="directory for logs and configs (data)"
    )
    up.add_argument("--base-port", type=int, default=9092, help="broker 0's client port")
    up.add_argument(
        "--control-base-port", type=int, default=9192, help="broker 0's control-plane port"
    )
    up.add_argument("--metrics-base-port", type=int, default=9600, help="broker 0's metrics port")
    up.add_argument("--zookeeper-port", type=int, default=2181, help="embedded ZooKeeper's port")
    up.add_argument(
        "--security",
        choices=SECURITY_CHOICES,
        default="plaintext",
        help="protocol of every listener (default plaintext); ssl makes a local CA and "
        "certificates, sasl_* an admin user, and either writes DIR/client.properties for "
        "clients",
    )
    up.add_argument(
        "--console-port", type=int, default=8080, help="the web console's port (0: no console)"
    )
    up.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker configuration key for every broker (zookeeper.connect=... uses an "
        "existing ZooKeeper instead of the embedded one)",
    )


def _parse_overrides(raw: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--override {item!r} is not KEY=VALUE")
        out.append((key.strip(), value.strip()))
    return out


def run(args: argparse.Namespace) -> int:
    # The brokers log to their own server.log; this process only polls ZooKeeper, and
    # kazoo's reconnect chatter while ZooKeeper starts is not worth a console line.
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    if args.brokers < 1:
        print("minikafka cluster: --brokers must be at least 1", file=sys.stderr)
        return 2
    try:
        overrides = _parse_overrides(args.override)
        protocol = security_protocol(args.security)
    except ValueError as exc:
        print(f"minikafka cluster: {exc}", file=sys.stderr)
        return 2
    directory = args.dir.resolve()
    security = None if protocol is None else prepare_security(directory, protocol, args.brokers)
    layout = ClusterLayout.standard(
        directory,
        args.brokers,
        args.base_port,
        args.control_base_port,
        args.metrics_base_port,
        args.zookeeper_port,
        overrides,
        security,
    )
    cluster = LocalCluster(layout, report=_say)
    console: subprocess.Popen[bytes] | None = None
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    old_term = signal.signal(signal.SIGTERM, on_signal)
    old_int = signal.signal(signal.SIGINT, on_signal)
    try:
        print(
            f"minikafka cluster: starting {layout.brokers} brokers in {layout.directory}",
            flush=True,
        )
        try:
            cluster.start()
        except Exception as exc:
            print(f"minikafka cluster: {exc}", file=sys.stderr, flush=True)
            return 1
        console_port = args.console_port
        if console_port and port_in_use(console_port):
            _say(f"port {console_port} is in use: no web console (--console-port)")
            console_port = 0
        if console_port:
            console = start_console(layout, console_port)
        _print_summary(layout, console_port)
        reported: set[int] = set()
        while not stopping:
            for i, proc in cluster.processes.items():
                if proc.poll() is not None and i not in reported:
                    reported.add(i)
                    print(
                        f"minikafka cluster: broker {i} exited with status {proc.returncode}; "
                        f"see {layout.output_path(i)}",
                        file=sys.stderr,
                        flush=True,
                    )
            time.sleep(0.2)
        print("minikafka cluster: stopping", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # finish stopping, whatever comes
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if console is not None:
            terminate(console, 10)
        cluster.stop()
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)
        print("minikafka cluster: stopped", flush=True)


def _say(line: str) -> None:
    print(f"minikafka cluster: {line}", flush=True)


def _print_summary(layout: ClusterLayout, console_port: int) -> None:
    lines = [
        f"minikafka cluster: {layout.brokers} brokers up",
        f"  bootstrap servers: {layout.bootstrap_servers}",
        f"  zookeeper connect: {layout.zk_connect}",
    ]
    for i in range(layout.brokers):
        lines.append(
            f"  broker {i}: 127.0.0.1:{layout.client_ports[i]}  metrics {layout.metrics_url(i)}"
            f"  log {layout.output_path(i)}"
        )
    if layout.security is not None:
        lines += summary_lines(layout.security, layout.bootstrap_servers)
    lines.append(
        f"  prometheus config: {layout.prometheus_config_path}"
        f" (prometheus --config.file={layout.prometheus_config_path})"
    )
    if console_port:
        lines.append(
            f"  web console: http://127.0.0.1:{console_port}/ (log {console_log_path(layout)})"
        )
    lines.append("Ctrl-C stops the cluster.")
    print("\n".join(lines), flush=True)
