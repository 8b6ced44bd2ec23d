"""``_processes.process_map``: answers in input order from this process and worker processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from neardup._processes import process_map
from neardup.cli import main
from neardup.errors import IndexCorrupt, NeardupError

_state: dict[str, int] = {}


def _setup(offset: int) -> None:
    _state["offset"] = offset


def _far(x: int) -> tuple[int, int]:
    """x + offset, and the pid that computed it (a worker's)."""
    if x == 13:
        raise IndexCorrupt("thirteen is damaged")
    if x == 99:
        os.kill(os.getpid(), signal.SIGKILL)
    return x + _state.get("offset", 0), os.getpid()


def _near(x: int) -> tuple[int, int]:
    time.sleep(0.02)  # slower than the feeder: the workers get items too
    if x == 14:
        raise ValueError("fourteen")
    return x + 1000, os.getpid()


def _run(items: list[int], jobs: int) -> list[tuple[int, tuple[int, int]]]:
    return list(process_map(_far, items, jobs, _near, lambda x: x, _setup, (1000,)))


@pytest.mark.parametrize("n", [0, 1, 12])
@pytest.mark.parametrize("jobs", [2, 3])
def test_results_come_in_input_order_from_here_and_from_workers(n: int, jobs: int) -> None:
    got = _run(list(range(n)), jobs)
    assert [(item, value) for item, (value, _) in got] == [(i, i + 1000) for i in range(n)]
    pids = {pid for _, (_, pid) in got}
    if n >= 12:  # the workers and this process both answered
        assert os.getpid() in pids and len(pids) >= 2


def test_an_error_in_a_worker_reaches_the_consumer_in_order() -> None:
    seen = []
    with pytest.raises(IndexCorrupt, match="thirteen is damaged"):
        for item, _ in process_map(_far, range(13, 20), 2, _far, lambda x: x, _setup, (0,)):
            seen.append(item)
    assert seen == []
    seen = []
    with pytest.raises(IndexCorrupt):
        for item, _ in _far_everywhere(range(10, 20)):
            seen.append(item)
    assert seen == [10, 11, 12]


def _far_everywhere(items: range) -> Iterator[tuple[int, tuple[int, int]]]:
    return process_map(_far, items, 2, _far, lambda x: x, _setup, (0,))


def test_an_error_here_reaches_the_consumer_in_order() -> None:
    seen = []
    with pytest.raises(ValueError, match="fourteen"):
        for item, _ in process_map(_near, range(10, 30), 2, _near, lambda x: x, _setup, (0,)):
            seen.append(item)
    assert seen == [10, 11, 12, 13]


def test_an_error_reading_the_items_reaches_the_consumer_after_the_items_read() -> None:
    def items() -> Iterator[int]:
        yield from range(5)
        raise OSError("the input went away")

    seen = []
    with pytest.raises(OSError, match="went away"):
        for item, (value, _) in process_map(_far, items(), 2, _near, lambda x: x, _setup, (1000,)):
            assert value == item + 1000
            seen.append(item)
    assert seen == [0, 1, 2, 3, 4]


def test_a_worker_that_dies_is_one_error_saying_so() -> None:
    with pytest.raises(NeardupError, match="worker process died"):
        list(process_map(_far, [99, 98, 97, 96], 2, _sleepy, lambda x: x, _setup, (0,)))


def _sleepy(x: int) -> tuple[int, int]:
    time.sleep(2.0)  # the worker meets item 99 first
    return x, os.getpid()


def _slow_pid(x: int) -> tuple[int, int]:
    time.sleep(0.05)
    return os.getpid(), x


def _exited(pid: int) -> bool:
    """Gone, or a zombie nobody reaps (a container's first process may not)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return any(line.startswith("State:\tZ") for line in fh)
    except FileNotFoundError:
        return True


def test_workers_exit_when_their_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(
        "import os, sys\n"
        f"sys.path[:0] = [{str(Path(__file__).parent.parent)!r}]\n"
        "from neardup._processes import process_map\n"
        "from tests.test_processes import _setup, _slow_pid\n"
        "if __name__ == '__main__':\n"
        "    for _, (pid, _) in process_map(_slow_pid, range(10**6), 3, _slow_pid, lambda x: x,\n"
        "                                   _setup, (0,)):\n"
        "        print(pid, flush=True)\n"
    )
    run = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while len(workers) < 2 and time.monotonic() < deadline:
        pid = int(run.stdout.readline())
        if pid != run.pid:
            workers.add(pid)
    assert len(workers) == 2
    run.kill()
    run.wait()
    deadline = time.monotonic() + 10
    while not all(_exited(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_exited(w) for w in workers)


def _queries(path: Path, n: int) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            words = " ".join(f"w{(i * 7 + j) % 97}" for j in range(30))
            fh.write(json.dumps({"id": f"q{i}", "text": f"document {i % 40} {words}"}) + "\n")
    return path


@pytest.mark.parametrize("method", [[], ["--method", "sampled", "--threshold", "0.8"]])
def test_index_query_in_processes_gives_the_answers_of_one(
    tmp_path: Path, method: list[str]
) -> None:
    src = _queries(tmp_path / "q.jsonl", 400)
    idx = tmp_path / "i.db"
    assert main(["index", "create", str(idx), *method]) == 0
    assert main(["index", "add", str(idx), str(src), "--no-progress"]) == 0
    answers = {}
    for jobs in ("1", "2", "3"):
        out = tmp_path / f"a{jobs}.jsonl"
        args = ["index", "query", str(idx), str(src), "-o", str(out), "--batch-size", "2K"]
        assert main([*args, "--jobs", jobs, "--no-progress"]) == 0
        answers[jobs] = out.read_bytes()
    assert answers["1"].count(b"\n") == 400 and b'"kind": "exact"' in answers["1"]
    assert answers["2"] == answers["1"] and answers["3"] == answers["1"]


def test_a_damaged_index_met_by_a_query_process_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    src = _queries(tmp_path / "q.jsonl", 400)
    idx = tmp_path / "i.db"
    assert main(["index", "create", str(idx)]) == 0
    assert main(["index", "add", str(idx), str(src), "--no-progress"]) == 0
    capsys.readouterr()
    db = sqlite3.connect(idx)
    db.execute("UPDATE post_runs SET postings = CAST(postings || x'00' AS BLOB)")
    db.commit()
    db.close()
    out = tmp_path / "a.jsonl"
    args = ["index", "query", str(idx), str(src), "-o", str(out), "--batch-size", "2K"]
    assert main([*args, "--jobs", "2", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "damaged" in err and "Traceback" not in err
    assert not out.exists()  # no partial output that looks whole
