"""Ending a child process that this program started: politely first, then for certain."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def terminate(proc: subprocess.Popen[bytes], grace_s: float, sig: int = signal.SIGTERM) -> int:
    """``sig`` to ``proc`` (SIGCONT first: a stopped process cannot act on it), SIGKILL
    if it is still running after ``grace_s``, and reap it. Returns its exit status."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
            os.kill(proc.pid, sig)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
    return proc.returncode
