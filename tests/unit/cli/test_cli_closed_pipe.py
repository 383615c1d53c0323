"""A reader that stops early (``minikafka dump-log ... | head``) ends the command quietly,
with SIGPIPE's status, never with a traceback on standard error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from protocol.records import SimpleRecord, build_batch
from protocol.values import TopicPartition
from storage.clock import MockClock
from storage.config import LogConfig
from storage.log import Log

ROOT = Path(__file__).resolve().parents[3]


def test_dump_log_into_a_pipe_closed_early_exits_quietly(tmp_path: Path) -> None:
    lg = Log.open(str(tmp_path), TopicPartition("t", 0), LogConfig(), MockClock())
    for i in range(20):  # about 4,000 record lines: far more than a pipe's buffer holds
        lg.append(build_batch([SimpleRecord(b"k", b"v" * 50, timestamp=i)] * 200), 0)
    lg.close()
    segment = os.path.join(str(tmp_path), f"{0:020d}.log")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.main", "dump-log", "--print-data-log", segment],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"Dumping ")
    proc.stdout.close()  # the reader goes away, as `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err
