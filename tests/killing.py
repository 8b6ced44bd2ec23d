"""Kill a cluster command mid-run, then run it again: the helpers of the resume tests."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def kill_once_done(args: list[str], stage: Path, seconds: float) -> None:
    """Start the command ``args`` in its own session and kill its whole process group (SIGKILL)
    as soon as the work folder's ``stage`` is marked done; fails if it ends or takes longer
    than ``seconds`` first."""
    job = subprocess.Popen(args, start_new_session=True, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + seconds
    while not (stage / "_SUCCESS").exists():
        assert job.poll() is None and time.monotonic() < deadline, (
            job.stderr.read() if job.stderr else ""
        )
        time.sleep(0.05)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()


def rerun_resumes(args: list[str]) -> None:
    """Run the killed command ``args`` again on one worker instead of two (another cluster
    size finds the same partitions): it succeeds and says it resumes."""
    args = [("local:1" if a == "local:2" else a) for a in args]
    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "resuming" in again.stderr


def one_letter_changed(data: bytes) -> bytes:
    """``data`` with its first lowercase letter changed: another file of the same size, as
    another program or run could leave where a part was."""
    at = next(i for i, c in enumerate(data) if 97 <= c <= 122)
    return data[:at] + bytes([97 + (data[at] - 96) % 26]) + data[at + 1 :]
