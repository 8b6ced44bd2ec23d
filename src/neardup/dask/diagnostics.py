"""What a cluster run says about its own cost: each stage's wall seconds and the seconds its
tasks ran on the workers (from the scheduler's task stream), and Dask's performance report.

A stage's tasks are those the task stream records between the stage's start and the next
one's (stages run one after another), so the P2P shuffle's tasks and the take tasks count for
the stage that ran them, whatever their key says. The client fetches one record per task,
never one per document.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ..errors import ParamError
from .cluster import import_distributed
from .inputs import filesystem, is_url
from .workdir import write_whole

#: The task stream's timings summed per stage ("startstops" actions of each task record).
TASK_ACTIONS = ("compute", "transfer")


def task_seconds(records: list[dict[str, Any]]) -> dict[str, float | int]:
    """Task stream records -> seconds of each ``TASK_ACTIONS`` summed over the workers, and
    the number of tasks."""
    totals = dict.fromkeys(TASK_ACTIONS, 0.0)
    for record in records:
        for span in record.get("startstops", ()):
            if span["action"] in totals:
                totals[span["action"]] += span["stop"] - span["start"]
    return {**{k: round(v, 3) for k, v in totals.items()}, "tasks": len(records)}


class StageClock:
    """Wall seconds of each stage (by its first word), said as each one starts; with a
    client, also its tasks' seconds (``task_seconds``) from the scheduler's task stream."""

    def __init__(self, say: Any, client: Any = None) -> None:
        self.say = say
        self.client = client
        self.seconds: dict[str, float] = {}
        self.tasks: dict[str, dict[str, float | int]] = {}
        self._name = ""
        self._since = 0.0
        self._stream: Any = None

    def start(self, message: str) -> None:
        """End the running stage (if any) and start the one ``message`` names ("" for none)."""
        now = time.perf_counter()
        if self._name:
            self.seconds[self._name] = round(now - self._since, 3)
        if self._stream is not None:
            self._stream.__exit__(None, None, None)
            self.tasks[self._name] = task_seconds(self._stream.data)
            self._stream = None
        self._name = message.split(":")[0]
        self._since = now
        if message and self.client is not None:
            self._stream = import_distributed().get_task_stream(client=self.client)
            self._stream.__enter__()
        if message:
            self.say(message)


def check_report(where: str | None) -> None:
    """Dask can draw the performance report and its folder exists (a URL's store makes its
    prefix); that it is no input, no other output and no folder is ``check_folders``' to see."""
    if not where:
        return
    if importlib.util.find_spec("bokeh") is None:
        raise ParamError(
            "--performance-report needs bokeh (Dask draws the report with it): "
            "pip install 'bokeh>=3.1'"
        )
    parent = os.path.dirname(os.path.abspath(where))
    if not is_url(where) and not os.path.isdir(parent):
        raise ParamError(
            f"--performance-report {where}: the folder {parent} does not exist; create it or "
            "name another file"
        )


@contextlib.contextmanager
def performance_report(client: Any, where: str | None, storage: dict[str, Any]) -> Iterator[None]:
    """Dask's performance report (an HTML file: task stream, worker profiles, bandwidth) of
    what runs inside, written to ``where`` (None: none) whole when the run succeeds, nothing
    when it fails: on a file system drafted in a temporary folder and written as the run's other
    files are (``write_whole``: a device or pipe written into, never renamed over), on an
    object store under a temporary name beside it, renamed."""
    if not where:
        yield
        return
    distributed = import_distributed()
    fs, path = filesystem(where, storage)
    if not is_url(where):
        with _drafted() as drafted:
            with client.as_current(), distributed.performance_report(filename=drafted):
                yield
            with open(drafted, "rb") as report:
                write_whole(fs, path, report.read(), remote=False)
        return
    suffix = f".tmp-{uuid.uuid4().hex}"
    try:
        with (
            client.as_current(),
            distributed.performance_report(filename=where + suffix, storage_options=storage),
        ):
            yield
        fs.mv(path + suffix, path)
    finally:
        if fs.exists(path + suffix):
            fs.rm(path + suffix)


@contextlib.contextmanager
def _drafted() -> Iterator[str]:
    """A file in a temporary folder for a local report (removed with it, whatever happens)."""
    folder = tempfile.mkdtemp(prefix="neardup-report-")
    try:
        yield os.path.join(folder, "report.html")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
