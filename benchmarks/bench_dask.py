"""A cluster run against one machine: same outputs, client memory, speed, resume after a kill.

Run from the repository root (``pip install -e '.[test,bench]'``), on corpora written by
``make_corpus.py`` (outside the repository)::

    python benchmarks/make_corpus.py /tmp/synth_1m.jsonl --n 1000000 --dup-fraction 0.3
    python benchmarks/make_corpus.py /tmp/synth_4m.jsonl --n 4000000 --dup-fraction 0.3
    python benchmarks/bench_dask.py --corpus /tmp/synth_1m.jsonl --big /tmp/synth_4m.jsonl \\
        --json /tmp/bench_dask.json
    # the same corpus as Parquet (zstd, row groups of 50,000): parts compared as tables
    python -c "import pyarrow.json as j, pyarrow.parquet as q; q.write_table(j.read_json(
        '/tmp/synth_1m.jsonl'), '/tmp/synth_1m.parquet', compression='zstd', row_group_size=50000)"
    python benchmarks/bench_dask.py --corpus /tmp/synth_1m.parquet

Every run is the ``neardup dedup`` command line in its own process, watched with psutil:

1. local, ``--jobs 2`` (reference outputs, wall, peak RSS of the process tree);
2. ``--dask local:2`` on the same file: wall, the CLI process's peak RSS (client and local
   scheduler; the workers are other processes), each worker's peak, the per-stage seconds the
   job reports (``stage_seconds`` in ``--summary-json``) with its tasks' compute seconds summed
   over the workers and their number (``stage_task_seconds``), printed as a table; the part
   files concatenated in manifest order must equal the local outputs byte for byte;
3. ``--dask local:2`` on ``--big`` (4× the documents): the client's peak against 2.'s;
4. resume: the run of 2. with ``--work-dir`` killed (its whole process group, SIGKILL) at
   ``--kill-at`` (default 70%) of 2.'s wall time, then the same command again: its wall time
   against the full run's, and the same outputs.

``--performance-report DIR`` also writes Dask's performance report of each cluster run there
(``dask.html``, ``dask_big.html``, ``resume.html``); ``--memory-limit SIZE`` gives each worker
of the cluster runs that limit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

OUTPUTS = ("kept", "clusters", "pairs")


def watch(args: list[str], kill_after: float | None = None) -> dict[str, Any]:
    """Run a command in its own process group, sampling memory every 50 ms: wall seconds, the
    process's own peak RSS, the peak of any one child, the tree's peak; killed (SIGKILL to the
    group) after ``kill_after`` seconds when given."""
    started = time.perf_counter()
    job = subprocess.Popen(args, start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)  # fmt: skip
    me = psutil.Process(job.pid)
    own = child = tree = 0
    killed = False
    while job.poll() is None:
        try:
            rss = me.memory_info().rss
            kids = [c.memory_info().rss for c in me.children(recursive=True)]
        except psutil.Error:
            kids, rss = [], 0
        own, child, tree = max(own, rss), max([child, *kids]), max(tree, rss + sum(kids))
        if kill_after is not None and time.perf_counter() - started >= kill_after:
            os.killpg(job.pid, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.05)
    job.wait()
    err = job.stderr.read() if job.stderr else ""
    wall = time.perf_counter() - started
    if not killed and job.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{err}")
    mb = 1 / 2**20
    return {"wall_s": round(wall, 2), "own_peak_mb": round(own * mb), "child_peak_mb":
            round(child * mb), "tree_peak_mb": round(tree * mb), "killed": killed}  # fmt: skip


def concat(folder: Path) -> bytes:
    """An output folder's parts in manifest order (gzip parts decompressed; Parquet parts as
    one table's rows, in Arrow's IPC bytes, to compare with a local file's)."""
    from neardup.dask import output_parts, read_output

    parts = output_parts(str(folder))
    if parts and parts[0].endswith(".parquet"):
        return _table_bytes([pq_read(p) for p in parts])
    return read_output(str(folder))


def pq_read(path: str | Path) -> Any:
    import pyarrow.parquet as pq

    return pq.read_table(path)


def _table_bytes(tables: list[Any]) -> bytes:
    """Tables' rows, concatenated, as Arrow IPC bytes (equal rows and schema: equal bytes)."""
    import pyarrow as pa

    table = pa.concat_tables(tables).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=1 << 30)
    return bytes(sink.getvalue().to_pybytes())


def local_output(path: Path) -> bytes:
    """A local output's bytes (a Parquet file as ``concat`` gives Parquet parts)."""
    return _table_bytes([pq_read(path)]) if path.suffix == ".parquet" else path.read_bytes()


def dedup_cmd(corpus: str, out: Path, extra: list[str]) -> list[str]:
    names = {o: str(out / o) for o in OUTPUTS}
    return [sys.executable, "-m", "neardup.cli", "dedup", corpus, "-o", names["kept"],
            "--clusters", names["clusters"], "--pairs", names["pairs"], "--summary-json",
            str(out / "summary.json"), *extra]  # fmt: skip


def dask_run(corpus: str, out: Path, workers: int, extra: list[str]) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    got = watch(dedup_cmd(corpus, out, ["--dask", f"local:{workers}", *extra]))
    summary = json.loads((out / "summary.json").read_text())
    got["stage_seconds"] = summary.get("stage_seconds")
    got["stage_task_seconds"] = summary.get("stage_task_seconds")
    got["documents"] = summary["documents"]
    got["removed"] = summary["removed"]
    return got


def stage_table(run: dict[str, Any]) -> str:
    """A cluster run's stages: wall seconds, task compute seconds (all workers), tasks."""
    rows = [f"  {'stage':<11}{'wall s':>9}{'compute s':>11}{'tasks':>7}"]
    tasks = run.get("stage_task_seconds") or {}
    for stage, wall in (run.get("stage_seconds") or {}).items():
        t = tasks.get(stage, {})
        rows.append(f"  {stage:<11}{wall:>9.1f}{t.get('compute', 0):>11.1f}{t.get('tasks', 0):>7}")
    return "\n".join(rows)


def cluster_options(args: argparse.Namespace, name: str) -> list[str]:
    """The options of cluster run ``name``: its performance report, the workers' limit."""
    extra = []
    if args.performance_report:
        extra += ["--performance-report", str(Path(args.performance_report) / f"{name}.html")]
    if args.memory_limit:
        extra += ["--memory-limit", args.memory_limit]
    return extra


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--corpus", required=True, help="JSONL or Parquet corpus (about 1M documents)"
    )
    parser.add_argument("--big", help="a corpus with 4x the documents, for the client's memory")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kill-at", type=float, default=0.7, help="share of the full run")
    parser.add_argument("--tmp", default=tempfile.gettempdir(), help="where outputs go")
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--performance-report", metavar="DIR", help="an HTML report per run here")
    parser.add_argument("--memory-limit", metavar="SIZE", help="each worker's limit (e.g. 1GB)")
    args = parser.parse_args()
    if args.performance_report:
        Path(args.performance_report).mkdir(parents=True, exist_ok=True)
    tmp = Path(args.tmp) / "neardup_bench_dask"
    shutil.rmtree(tmp, ignore_errors=True)
    report: dict[str, Any] = {"corpus": args.corpus, "workers": args.workers}

    local_out = tmp / "local"
    local_out.mkdir(parents=True)
    names = {o: local_out / f"{o}.jsonl" for o in OUTPUTS}
    if args.corpus.endswith(".parquet"):  # kept rows as Parquet, compared as tables
        names["kept"] = local_out / "kept.parquet"
    cmd = [sys.executable, "-m", "neardup.cli", "dedup", args.corpus, "-o", str(names["kept"]),
           "--clusters", str(names["clusters"]), "--pairs", str(names["pairs"]),
           "--jobs", str(args.workers)]  # fmt: skip
    report["local"] = watch(cmd)
    print("local --jobs", args.workers, report["local"], flush=True)
    want = [local_output(names[o]) for o in OUTPUTS]

    report["dask"] = dask_run(
        args.corpus, tmp / "dask", args.workers, cluster_options(args, "dask")
    )
    same = [concat(tmp / "dask" / o) for o in OUTPUTS] == want
    report["dask"]["same_outputs_as_local"] = same
    report["dask_over_local_wall"] = round(report["dask"]["wall_s"] / report["local"]["wall_s"], 2)
    print(f"--dask local:{args.workers}", report["dask"], flush=True)
    print(stage_table(report["dask"]), flush=True)
    print("dask / local wall:", report["dask_over_local_wall"], flush=True)

    if args.big:
        big = cluster_options(args, "dask_big")
        report["dask_big"] = dask_run(args.big, tmp / "dask_big", args.workers, big)
        ratio = report["dask_big"]["own_peak_mb"] / report["dask"]["own_peak_mb"]
        report["client_peak_ratio_big_over_small"] = round(ratio, 2)
        print("--big", report["dask_big"], f"client peak ratio {ratio:.2f}", flush=True)
        print(stage_table(report["dask_big"]), flush=True)
        shutil.rmtree(tmp / "dask_big", ignore_errors=True)

    work = tmp / "work"
    out = tmp / "resume"
    out.mkdir(parents=True)
    more = ["--work-dir", str(work), *cluster_options(args, "resume")]
    cmd = dedup_cmd(args.corpus, out, ["--dask", f"local:{args.workers}", *more])
    kill_after = args.kill_at * report["dask"]["wall_s"]
    first = watch(cmd, kill_after=kill_after)
    again = watch(cmd)
    same = [concat(out / o) for o in OUTPUTS] == want
    resumed = json.loads((out / "summary.json").read_text())
    print(stage_table(resumed), flush=True)
    report["resume"] = {
        "killed_after_s": round(kill_after, 2),
        "killed": first["killed"],
        "rerun_wall_s": again["wall_s"],
        "rerun_over_full": round(again["wall_s"] / report["dask"]["wall_s"], 2),
        "same_outputs_as_local": same,
    }
    print("resume", report["resume"], flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
