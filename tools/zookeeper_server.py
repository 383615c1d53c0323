"""Run a real ZooKeeper server from the jars that the pyspark wheel ships.

The pyspark wheel carries ``zookeeper-<v>.jar`` and its dependencies in
``<site-packages>/pyspark/jars``; with the machine's Java we start

    java -cp "<site-packages>/pyspark/jars/*" \
        org.apache.zookeeper.server.ZooKeeperServerMain <dir>/zoo.cfg

The generated ``zoo.cfg`` keeps the server private and quick:

* ``clientPortAddress=127.0.0.1``: never listen beyond loopback (a container's ZooKeeper,
  which its brokers reach over the container network, is given ``0.0.0.0``);
* ``tickTime=500``: sessions may be as short as 2 ticks (1 s) and expire on time, which
  the failover tests and ``minikafka cluster up`` rely on;
* ``admin.enableServer=false``: no Jetty admin server on port 8080;
* ``4lw.commands.whitelist=ruok,srvr,stat``: ``srvr`` describes the server once it serves.

Readiness. ZooKeeper opens its client port before it has created its in-memory
database, and a connection the server closes in that window (a ``ruok`` it has just
answered, say) makes it log a NullPointerException with its stack trace: harmless, but a
Java stack trace on every other start-up looks like a failure. So ``start()`` opens no
connection until that window has passed, which it tells from the data directory: the
server writes a snapshot as the last step of loading its data (every start, a fresh
directory included), and the database exists before that. Only then does it ask ``srvr``,
which answers with the server's version once requests are served.

``ZooKeeperServer`` owns exactly the process it started and stops it by that pid. With
``ignore_stop_signals`` (what ``cluster up`` uses) the JVM starts with SIGTERM and SIGINT
ignored -- a small Python shim sets them to "ignore" and execs java, and the JVM then
leaves them so -- so a signal sent to every process of a service cannot stop ZooKeeper
before the brokers that still need it; ``stop()`` then ends it with SIGHUP, which the JVM
treats as it does SIGTERM. The shim also puts SIGHUP back to its default: under ``nohup``
it arrives ignored, the JVM would inherit that and install no handler for it, and
``stop()`` would wait out its grace period and SIGKILL the server. (A shell cannot be the
shim: POSIX lets a non-interactive shell neither trap nor reset a signal that was ignored
when it started.) Stopping ZooKeeper abruptly would lose nothing -- it writes every change
to its transaction log before acknowledging it -- but it is slow and noisy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from tools.processes import terminate

log = logging.getLogger(__name__)

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"


class ZooKeeperLaunchError(RuntimeError):
    """The server could not be started (no Java, no jars, or it never answered)."""


def find_java() -> str:
    """Return the java executable: ``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise ZooKeeperLaunchError(
            "Java was not found: ZooKeeper needs a Java runtime (17 or newer). Install one "
            "(e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME, or point "
            "zookeeper.connect at a ZooKeeper that is already running."
        )
    return found


def find_jars_dir() -> Path:
    """The ``pyspark/jars`` directory that holds the ZooKeeper server jar."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ZooKeeperLaunchError("pyspark is not installed: it ships the ZooKeeper jars")
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("zookeeper-*.jar")):
        raise ZooKeeperLaunchError(f"no zookeeper-*.jar in {jars}")
    return jars


#: where the kernel takes the local ports of outgoing connections from (Linux's default
#: when /proc does not say)
_EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
_DEFAULT_EPHEMERAL_START = 32768
#: how far below the ephemeral range listener ports are picked
_LISTENER_SPAN = 12_000
#: the ports this process handed out, not handed out twice (a cluster picks all of its
#: ports before any broker binds one)
_handed_out: set[int] = set()


def _ephemeral_start() -> int:
    try:
        with open(_EPHEMERAL_RANGE_FILE) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return _DEFAULT_EPHEMERAL_START


def free_port() -> int:
    """A port free on 127.0.0.1 now, for a server to bind a moment later.

    The usual bind-to-0 trick hands out a port from the kernel's ephemeral range, where
    every outgoing connection (a ZooKeeper session, a client, a replica fetcher) also takes
    its local port: between the pick and the server's bind, one of them may take it
    ("Address already in use"). So the port is drawn at random from just below that range,
    where only servers bind, and checked free; bind-to-0 is the fallback."""
    top = _ephemeral_start()
    bottom = max(1024, top - _LISTENER_SPAN)
    draw = random.SystemRandom()
    for _ in range(100):
        port = draw.randrange(bottom, top)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def four_letter_word(host: str, port: int, word: bytes, timeout: float = 1.0) -> bytes:
    """Send a ZooKeeper four-letter command and return the whole reply (server closes)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word)
        chunks = []
        while True:
            data = s.recv(4096)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


def render_config(
    data_dir: Path, port: int, tick_time_ms: int = 500, host: str = "127.0.0.1"
) -> str:
    return "\n".join(
        [
            f"tickTime={tick_time_ms}",
            f"dataDir={data_dir}",
            f"clientPort={port}",
            f"clientPortAddress={host}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr,stat",
            # Snapshots are small here; keep the purge task quiet.
            "autopurge.purgeInterval=0",
            "",
        ]
    )


#: Run as ``python -c SHIM java ...``: SIGTERM and SIGINT ignored, SIGHUP (how ``stop()``
#: ends the server) and the signals Python itself ignores at start-up (SIGPIPE, SIGXFSZ)
#: back to their defaults, SIGHUP unblocked, then exec. Ignored dispositions survive exec;
#: default ones let the JVM install its shutdown handlers.
_IGNORE_STOP_SIGNALS_SHIM = """\
import os, signal, sys
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, signal.SIG_IGN)
for sig in (signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ):
    signal.signal(sig, signal.SIG_DFL)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
os.execv(sys.argv[1], sys.argv[1:])
"""


def snapshot_marks(data_dir: Path) -> dict[str, int]:
    """The server's snapshot files under ``data_dir`` (its ``dataDir``), by name, with the
    nanosecond modification time of each."""
    marks: dict[str, int] = {}
    for path in (data_dir / "version-2").glob("snapshot.*"):
        with contextlib.suppress(OSError):  # a snapshot purged between listing and stat
            marks[path.name] = path.stat().st_mtime_ns
    return marks


def wrote_snapshot(before: dict[str, int], now: dict[str, int]) -> bool:
    """Whether a snapshot was written since ``before`` was taken: a new name, or a name
    rewritten (a restart on unchanged data snapshots the same transaction id again)."""
    return any(before.get(name) != mtime for name, mtime in now.items())


def serves_requests(srvr_reply: bytes) -> bool:
    """Whether a ``srvr`` reply says the server serves requests: it then reports its
    version first; before that it answers that it is not currently serving."""
    return srvr_reply.startswith(b"Zookeeper version:")


@dataclass
class ZooKeeperServer:
    """One ZooKeeper server process on ``host`` (127.0.0.1 unless told otherwise).

    ``start()`` returns once the server has loaded its data and serves requests (or raises
    after ``startup_timeout_s``; see the module docstring for why it waits for a snapshot
    before it connects); ``stop()`` terminates it (SIGTERM, or SIGHUP with
    ``ignore_stop_signals``, then SIGKILL after a grace period). Not thread safe; use from
    one thread.
    """

    data_dir: Path
    port: int = 2181
    tick_time_ms: int = 500
    startup_timeout_s: float = 30.0
    heap_mb: int = 128
    ignore_stop_signals: bool = False
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    _log_file: IO[bytes] | None = field(default=None, init=False)
    _snapshots_before_start: dict[str, int] = field(default_factory=dict, init=False)

    @property
    def local_host(self) -> str:
        """Where this machine reaches the server (a wildcard bind includes loopback)."""
        return "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host

    @property
    def connect_string(self) -> str:
        return f"{self.local_host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "zookeeper.out"

    def command(self) -> list[str]:
        jars = find_jars_dir()
        ignoring = [sys.executable, "-I", "-S", "-c", _IGNORE_STOP_SIGNALS_SHIM]
        return [
            *(ignoring if self.ignore_stop_signals else []),
            find_java(),
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseSerialGC",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            f"{jars}/*",
            MAIN_CLASS,
            str(self.data_dir / "zoo.cfg"),
        ]

    def start(
        self, foreground_output: bool = False, on_spawn: Callable[[int], None] | None = None
    ) -> None:
        """Start the server and wait until it answers; ``on_spawn(pid)`` is called as soon
        as the process exists (before that wait)."""
        if self.process is not None:
            raise ZooKeeperLaunchError("already started")
        cmd = self.command()  # resolves java and jars first: clear errors before any files
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "data").mkdir(exist_ok=True)
        cfg = render_config(self.data_dir / "data", self.port, self.tick_time_ms, self.host)
        (self.data_dir / "zoo.cfg").write_text(cfg)
        if foreground_output:
            # the JVM's log lines go to our stderr: stdout carries only our own "serving"
            # line, which scripts (and the tests) read as the sign it is up
            stdout: IO[bytes] | int | None = sys.stderr.fileno()
        else:
            self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
            stdout = self._log_file
        log.info("starting ZooKeeper on %s: %s", self.connect_string, " ".join(cmd))
        self._snapshots_before_start = snapshot_marks(self.data_dir / "data")
        self.process = subprocess.Popen(
            cmd,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # Its own session, like the brokers': a terminal's Ctrl-C (or a signal to our
            # process group) must not stop ZooKeeper before the brokers, whose controlled
            # shutdown and deregistration need it; stop() ends it after them.
            start_new_session=True,
        )
        try:
            if on_spawn is not None:
                on_spawn(self.process.pid)
            self.wait_ready(self.startup_timeout_s)
        except BaseException:
            self.stop()
            raise

    def is_serving(self) -> bool:
        try:
            return four_letter_word(self.local_host, self.port, b"ruok") == b"imok"
        except OSError:
            return False

    def has_loaded_data(self) -> bool:
        """Whether the server started by ``start()`` has written its start-up snapshot (so
        its database exists and a connection can no longer trip over its absence)."""
        now = snapshot_marks(self.data_dir / "data")
        return wrote_snapshot(self._snapshots_before_start, now)

    def serves_requests(self) -> bool:
        try:
            reply = four_letter_word(self.local_host, self.port, b"srvr")
        except OSError:
            return False
        return serves_requests(reply)

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        loaded = False
        while True:
            proc = self.process
            if proc is not None and proc.poll() is not None:
                raise ZooKeeperLaunchError(
                    f"ZooKeeper exited with status {proc.returncode} during startup; "
                    f"see {self.log_path}"
                )
            loaded = loaded or self.has_loaded_data()
            if loaded and self.serves_requests():
                return
            if time.monotonic() >= deadline:
                raise ZooKeeperLaunchError(
                    f"ZooKeeper did not answer on {self.connect_string} within {timeout_s:.0f}s;"
                    f" see {self.log_path}"
                )
            time.sleep(0.05)  # polling interval of a bounded wait, not synchronisation

    def stop(self, grace_s: float = 10.0) -> None:
        if self.process is not None:
            sig = signal.SIGHUP if self.ignore_stop_signals else signal.SIGTERM
            terminate(self.process, grace_s, sig)
            self.process = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main_foreground(data_dir: Path, port: int, host: str = "127.0.0.1") -> int:
    """Run ZooKeeper in the foreground until SIGINT/SIGTERM (the ``minikafka zookeeper`` body)."""
    server = ZooKeeperServer(data_dir=data_dir, port=port, host=host)
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    old_term = signal.signal(signal.SIGTERM, on_signal)
    try:
        try:
            server.start(foreground_output=True)
        except ZooKeeperLaunchError as exc:
            print(f"minikafka zookeeper: {exc}", file=sys.stderr)
            return 1
        print(f"ZooKeeper serving on {server.connect_string} (data in {data_dir})", flush=True)
        proc = server.process
        assert proc is not None
        try:
            while not stopping and proc.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(0.5)
        except KeyboardInterrupt:
            pass
        status = proc.poll()
        if status is not None and not stopping:
            print(f"minikafka zookeeper: server exited with status {status}", file=sys.stderr)
            return 1
        return 0
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, old_term)
