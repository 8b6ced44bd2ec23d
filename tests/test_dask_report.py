"""A cluster run's own cost: Dask's performance report (written whole, checked like the other
outputs) and each stage's task seconds in the summary."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from neardup.cli import main  # noqa: E402
from neardup.dask import (  # noqa: E402
    ClusterOutputs,
    DecontaminateFolders,
    JobOptions,
    connect,
    decontaminate,
    dedup,
)
from neardup.errors import InputError, ParamError  # noqa: E402
from neardup.params import DecontaminateParams, DedupParams  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402

STAGES = ("scan", "graph", "components", "finish", "write")
LABELS = ("neardup-scan", "neardup-graph", "neardup-finish", "neardup-write")


@pytest.fixture(scope="module")
def client() -> Iterator[object]:
    with connect("local:2") as c:
        yield c


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = random_documents(120, seed=41, words=(6, 120))
    texts = near_duplicate_corpus(base, 240, 0.5, seed=42).texts
    path = tmp_path_factory.mktemp("report") / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    return path


def test_the_report_shows_every_stage_and_the_summary_has_each_stage_s_task_seconds(
    corpus: Path, tmp_path: Path
) -> None:
    report, summary = tmp_path / "report.html", tmp_path / "summary.json"
    args = ["dedup", str(corpus), "-o", str(tmp_path / "kept"), "--dask", "local:2"]
    more = ["--performance-report", str(report), "--summary-json", str(summary), "-q"]
    assert main([*args, *more]) == 0
    html = report.read_text()
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert all(label in html for label in LABELS)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("report")] == ["report.html"]
    tasks = json.loads(summary.read_text())["stage_task_seconds"]
    assert list(tasks) == list(STAGES)
    for stage in STAGES:
        assert tasks[stage]["compute"] > 0 and tasks[stage]["tasks"] >= 1, (stage, tasks)
        assert tasks[stage]["transfer"] >= 0


def test_a_failing_run_leaves_no_report(client: object, corpus: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(corpus.read_text() + '{"id": "x", "text": 5}\n')
    report = tmp_path / "report.html"
    with pytest.raises(InputError, match="line 241"):
        dedup(
            [str(bad)],
            DedupParams(),
            ClusterOutputs(str(tmp_path / "kept")),
            JobOptions(performance_report=str(report)),
            client,
        )
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("report")] == []


def test_decontaminate_writes_its_report_and_task_seconds(
    client: object, corpus: Path, tmp_path: Path
) -> None:
    bench = tmp_path / "bench.jsonl"
    bench.write_text(
        json.dumps({"id": "q", "text": corpus.read_text().split('"text": "')[1][:300]}) + "\n"
    )
    report = tmp_path / "report.html"
    summary = decontaminate(
        [str(corpus)],
        str(bench),
        DecontaminateParams(),
        DecontaminateFolders(str(tmp_path / "clean")),
        JobOptions(performance_report=str(report)),
        client,
    )
    assert "neardup-scan" in report.read_text() and "neardup-write" in report.read_text()
    assert list(summary["stage_task_seconds"]) == ["scan", "ids", "write"]
    assert all(t["compute"] > 0 for t in summary["stage_task_seconds"].values())


def _loaded() -> list[str]:
    import sys

    return sorted(m for m in ("dask.dataframe", "neardup.dask.job") if m in sys.modules)


def _start() -> tuple[int, str, dict[str, str | None]]:
    import os

    names = ("ARROW_DEFAULT_MEMORY_POOL", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as parent:
        command = parent.read().replace(b"\0", b" ").decode()
    return os.getppid(), command, {name: os.environ.get(name) for name in names}


def test_local_workers_are_forked_from_one_server_with_the_workers_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each local worker used to start a fresh interpreter importing Dask, pandas, Numba and
    the stages (2.4 s of CPU a worker); they are forked from one process that imported them
    once, with the environment a spawned worker had."""
    import os

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with connect("local:2") as c:
        started = list(c.run(_start).values())
    assert len(started) == 2
    (server, command, environ), other = started[0], started[1]
    assert server != os.getpid() and other[0] == server, started
    assert "multiprocessing.forkserver" in command, command
    assert environ == {
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "OPENBLAS_NUM_THREADS": "1",
        "MALLOC_TRIM_THRESHOLD_": None,
    }, environ


_ENVIRON_PROBE = """
import os
import pyarrow

def probe():
    return pyarrow.default_memory_pool().backend_name, os.environ.get("NEARDUP_TEST_LATER")

if __name__ == "__main__":
    from neardup.dask import connect

    with connect("local:1") as c:
        first = list(c.run(probe).values())
    os.environ["NEARDUP_TEST_LATER"] = "set"
    with connect("local:1") as c:
        second = list(c.run(probe).values())
    print(repr((pyarrow.default_memory_pool().backend_name, first, second)))
"""


def test_forked_local_workers_keep_the_caller_s_environment(tmp_path: Path) -> None:
    """A variable the caller set wins over the workers' defaults, as Dask's nanny has it (the
    fork server used to start with ARROW_DEFAULT_MEMORY_POOL=system whatever was asked), and
    one set after the fork server started reaches a later cluster's workers."""
    import ast
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text(_ENVIRON_PROBE)
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}
    env.pop("NEARDUP_TEST_LATER", None)
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    pool, first, second = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert first == [(pool, None)] and second == [(pool, "set")], done.stdout


def test_local_workers_are_spawned_where_the_platform_has_no_fork_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import multiprocessing
    import os

    from neardup.dask_local import start_method

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert start_method() == "spawn"
    with connect("local:1") as c:
        (parent, _, environ), *_ = list(c.run(_start).values())
    assert parent == os.getpid()  # the nanny, in this process, spawned it
    assert environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"


def test_two_local_clusters_at_once_take_free_ports_quietly() -> None:
    """A local cluster's scheduler serves HTTP on a free loopback port, not Dask's default
    8787: a second run beside the first does not warn on its terminal that 8787 is taken."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with connect("local:1") as a, connect("local:1") as b:
            ports = {c.scheduler_info()["services"].get("dashboard") for c in (a, b)}
    assert 8787 not in ports and len(ports) == 2, ports
    assert not [w for w in seen if "8787" in str(w.message)], [str(w.message) for w in seen]


def test_local_workers_start_with_the_stages_loaded_and_a_dashboard_only_when_asked(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with connect("local:1", info=print) as c:
        assert list(c.run(_loaded).values()) == [["dask.dataframe", "neardup.dask.job"]]
    assert "local cluster of 1 worker, no dashboard" in capsys.readouterr().out
    args = ["dedup", str(corpus), "-o", str(tmp_path / "kept"), "--dask", "local:1"]
    assert main([*args, "--dashboard"]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert "local cluster of 1 worker, dashboard http://127.0.0.1:" in first, first
    assert main(["dedup", str(corpus), "-o", str(tmp_path / "k.jsonl"), "--dashboard"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--dashboard goes with --dask" in err, err
    unit = ["dedup", str(corpus), "--unit", "line", "-o", str(tmp_path / "u.jsonl")]
    assert main([*unit, "--dashboard", "--restart"]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "drop --restart, --dashboard" in err, err


def test_a_worker_s_exit_skips_collecting_what_it_holds() -> None:
    import gc

    from neardup.dask.preload import dask_teardown

    try:
        dask_teardown(object())
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_the_report_is_refused_without_dask_and_where_it_cannot_go(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = str(tmp_path / "r.html")
    for command in (["dedup", str(corpus), "-o", str(tmp_path / "k.jsonl")],
                    ["decontaminate", str(corpus), "--against", str(corpus), "-o", "c.jsonl"]):  # fmt: skip
        assert main([*command, "--performance-report", report, "-q"]) == 1
        err = capsys.readouterr().err
        one_line = len(err.strip().splitlines()) == 1
        assert one_line and "--performance-report goes with --dask" in err, err
    args = ["dedup", str(corpus), "-o", str(tmp_path / "kept"), "--dask", "local:1", "-q"]
    cases = {
        "--performance-report .* is an input": str(corpus),
        "--performance-report .* is a folder": str(tmp_path),
        "does not exist": str(tmp_path / "nowhere" / "r.html"),
        "--performance-report and --summary-json name the same": str(tmp_path / "s.json"),
    }
    for message, where in cases.items():
        more = ["--summary-json", str(tmp_path / "s.json"), "--performance-report", where]
        assert main([*args, *more]) == 1
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and __import__("re").search(message, err), err
    assert not (tmp_path / "kept").exists()
    with pytest.raises(ParamError, match="is an input"):
        decontaminate(
            [str(corpus)], str(corpus), DecontaminateParams(),
            DecontaminateFolders(str(tmp_path / "clean")),
            JobOptions(performance_report=str(corpus)), client=object(),
        )  # fmt: skip


def test_the_html_report_reads_a_cluster_run_s_folders_as_the_local_files(
    client: object, corpus: Path, tmp_path: Path
) -> None:
    local = [tmp_path / "clusters.jsonl", tmp_path / "pairs.jsonl"]
    args = ["dedup", str(corpus), "-o", str(tmp_path / "k.jsonl"), "-q"]
    assert main([*args, "--clusters", str(local[0]), "--pairs", str(local[1])]) == 0
    folders = ClusterOutputs(None, str(tmp_path / "c"), str(tmp_path / "p"))
    dedup([str(corpus)], DedupParams(), folders, JobOptions(), client)
    pages = []
    for clusters, pairs in (local, (tmp_path / "c", tmp_path / "p")):
        out = tmp_path / f"{clusters.name}.html"
        report = ["report", str(corpus), "--clusters", str(clusters), "--pairs", str(pairs)]
        assert main([*report, "-o", str(out)]) == 0
        pages.append(out.read_bytes())
    assert pages[0] == pages[1]


def test_a_report_to_a_fifo_is_written_into_it_and_leaves_it_a_fifo(
    corpus: Path, client: object, tmp_path: Path
) -> None:
    # it was drafted beside the target and renamed over it: --performance-report /dev/null
    # replaced the device with a regular file of 150 KB
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    dedup(
        [str(corpus)], DedupParams(), ClusterOutputs(str(tmp_path / "kept")),
        JobOptions(performance_report=str(fifo)), client=client,
    )  # fmt: skip
    reader.join(timeout=60)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got and got[0].lstrip().lower().startswith(b"<!doctype html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "report.fifo"]


def test_a_summary_to_a_fifo_or_through_a_symlink_leaves_both_as_they_were(
    corpus: Path, client: object, tmp_path: Path
) -> None:
    # the summary was drafted beside its name and renamed over it: a FIFO (or /dev/null)
    # became a regular file, and a symlink was replaced instead of the file it names
    fifo, link, real = tmp_path / "s.fifo", tmp_path / "link.json", tmp_path / "real.json"
    os.mkfifo(fifo)
    link.symlink_to(real)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    for n, where in enumerate((fifo, link)):
        outputs = ClusterOutputs(str(tmp_path / f"kept{n}"), summary_json=str(where))
        dedup([str(corpus)], DedupParams(), outputs, client=client)
    reader.join(timeout=60)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and link.is_symlink()
    assert json.loads(got[0])["documents"] == json.loads(real.read_text())["documents"] == 240
