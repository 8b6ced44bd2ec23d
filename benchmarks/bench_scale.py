"""neardup dedup at scale: a million documents through the CLI, time and peak memory.

Run from the repository root (with the bench extras: ``pip install -e '.[bench]'``):

    python benchmarks/bench_scale.py                      # 1,000,000 documents
    python benchmarks/bench_scale.py --n 100000           # quick run
    python benchmarks/bench_scale.py --profile            # also time each stage in-process
    python benchmarks/bench_scale.py --json benchmarks/results/scale.json

The corpus is written by ``benchmarks/make_corpus.py`` (the repository's edit script) to
``--workdir`` (default /tmp, never the repository): 20 Newsgroups messages as base texts when
present, generated English-like documents for the rest of the originals, 30% copies (exact,
cosmetic, or word-edited at rates 0.01-0.45), shuffled. It is kept and reused by later runs with
the same --n and --seed (``--fresh`` regenerates it).

``neardup dedup corpus.jsonl -o kept.jsonl`` then runs in a child process with every native
thread pool capped at one thread; the report gives documents, wall and CPU seconds, docs/s,
MB/s, the child's peak resident memory (``wait4`` rusage) and that memory per document, next to
what the engine itself keeps per document (``bytes_per_doc_in_memory``).

``--profile`` repeats the run in this process with the engine's stage functions wrapped by
timers (no source change): shingling, exact-verification sets, sketching, features (the pass);
exact groups, candidate pairs, verification (sketch / exact decisions, the hybrid re-read and
re-check), removal (keep-aware, components, big-bucket resolution) in ``finish()``; each with
its time and the peak resident memory while it ran, so a slow or memory-hungry stage is named
precisely. ``--verify`` and ``--removal`` default to the library's defaults (hybrid,
keep-aware).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import common

common.limit_threads(common.threads_from_argv(sys.argv, default=1))
common.ensure_neardup()

#: Clock of the in-process stage profile: CPU time by default (robust when the machine is shared).
CLOCK: Callable[[], float] = time.process_time


def corpus_path(args: argparse.Namespace) -> Path:
    return Path(args.workdir) / f"neardup_scale_{args.n}_seed{args.seed}.jsonl"


def make(args: argparse.Namespace) -> tuple[Path, float]:
    """Write (or reuse) the corpus; returns its path and the seconds spent writing it."""
    import make_corpus

    path = corpus_path(args)
    if path.exists() and not args.fresh:
        print(f"reusing {path} ({path.stat().st_size / 1e6:,.0f} MB); --fresh to regenerate")
        return path, 0.0
    argv = [str(path), "--n", str(args.n), "--dup-fraction", str(args.dup_fraction)]
    argv += ["--seed", str(args.seed)]
    base = common.default_corpus()
    if base is not None and not args.synthetic:
        argv += ["--base", str(base)]
    print("writing corpus: make_corpus.py " + " ".join(argv), flush=True)
    t0 = time.perf_counter()
    if make_corpus.main(argv) != 0:
        raise SystemExit("make_corpus failed")
    return path, time.perf_counter() - t0


def run_cli(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``neardup dedup`` on the corpus in a child process: wall/CPU time, peak RSS, summary."""
    out = Path(args.workdir) / "neardup_scale_kept.jsonl"
    summary = Path(args.workdir) / "neardup_scale_summary.json"
    cmd = [sys.executable, "-m", "neardup.cli", "dedup", str(path), "-o", str(out)]
    cmd += ["--threshold", str(args.threshold), "--verify", args.verify]
    cmd += ["--removal", args.removal]
    cmd += ["--summary-json", str(summary), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(common.REPO / "src")}
    print("running: " + " ".join(cmd[1:]), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"neardup dedup exited with {code}")
    s = json.loads(summary.read_text())
    out.unlink(missing_ok=True)
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "summary": s,
    }


# ---------------------------------------------------------------- in-process stage profile


class StageTimer:
    """Wraps functions to add up their time and record the peak RSS while each ran.

    Only the outermost wrapped call is timed: a stage that calls another wrapped stage (e.g.
    big-bucket resolution re-running keep-aware removal) owns that time.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.peak_mb: dict[str, float] = {}
        self._depth = 0

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*a: Any, **k: Any) -> Any:
            if self._depth:
                return fn(*a, **k)
            self._depth += 1
            try:
                with common.PeakRSS() as mem:
                    t0 = CLOCK()
                    result = fn(*a, **k)
                    dt = CLOCK() - t0
            finally:
                self._depth -= 1
            self.seconds[name] = self.seconds.get(name, 0.0) + dt
            self.calls[name] = self.calls.get(name, 0) + 1
            self.peak_mb[name] = max(self.peak_mb.get(name, 0.0), mem.peak_mb)
            return result

        return timed


def _fetch_lines(path: Path) -> Callable[[Any], list[str]]:
    """Hybrid verification's re-read: the texts of the given sorted line numbers of the JSONL."""

    def fetch(docs: Any) -> list[str]:
        wanted = iter(docs.tolist())
        out: list[str] = []
        nxt = next(wanted, None)
        for i, text in enumerate(common.iter_texts(path)):
            if nxt is None:
                break
            if i == nxt:
                out.append(text)
                nxt = next(wanted, None)
        return out

    return fetch


def profile(path: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run the engine in-process on the corpus with every stage function timed."""
    import importlib

    from neardup.engine import Deduplicator
    from neardup.params import DedupParams

    # modules by full name: the package namespace re-exports functions of the same names
    mod = {
        m: importlib.import_module(f"neardup.{m}")
        for m in ("candidates", "engine", "features", "minhash", "removal", "textbatch", "verify")
    }
    candidates, engine, features = mod["candidates"], mod["engine"], mod["features"]
    minhash, removal, textbatch, verify = (
        mod["minhash"],
        mod["removal"],
        mod["textbatch"],
        mod["verify"],
    )
    st = StageTimer()
    targets: list[tuple[Any, str, str]] = [
        (textbatch, "shingle_texts", "pass: shingling"),
        (textbatch, "unique_per_doc", "pass: unique shingles (exact)"),
        (minhash, "sketch", "pass: sketching"),
        (features, "features", "pass: features"),
        (engine, "exact_groups", "finish: exact groups"),
        (candidates, "candidate_pairs", "finish: candidate pairs"),
        (verify.SketchVerification, "decide", "finish: verification (sketch)"),
        (verify.ExactVerification, "decide", "finish: verification (exact)"),
        (verify.HybridVerification, "recheck", "finish: hybrid re-check (re-read + exact)"),
        (removal, "keep_aware", "finish: removal (keep-aware)"),
        (removal, "components", "finish: removal (components)"),
        (removal, "resolve_big_buckets", "finish: removal (big buckets + keep-aware)"),
    ]
    originals = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in targets]
    for owner, attr, name in targets:
        setattr(owner, attr, st.wrap(name, getattr(owner, attr)))

    params = DedupParams(threshold=args.threshold, verify=args.verify, removal=args.removal)
    d = Deduplicator(params)
    read_s = 0.0
    t_start = CLOCK()
    try:
        with common.PeakRSS() as pass_mem:
            texts_iter = common.iter_texts(path)
            while True:
                t0 = CLOCK()
                batch = [t for _, t in zip(range(5000), texts_iter, strict=False)]
                read_s += CLOCK() - t0
                if not batch:
                    break
                d.partial_fit(batch)
        pass_s = CLOCK() - t_start
        with common.PeakRSS() as finish_mem:
            t0 = CLOCK()
            d.finish(fetch_texts=_fetch_lines(path))
            finish_s = CLOCK() - t0
    finally:
        for owner, attr, fn in originals:
            setattr(owner, attr, fn)

    rows: list[dict[str, Any]] = [{"stage": "pass: read JSONL", "seconds": read_s, "calls": None}]
    staged_pass = staged_finish = 0.0
    for name, sec in st.seconds.items():
        rows.append(
            {"stage": name, "seconds": sec, "calls": st.calls[name], "peak_mb": st.peak_mb[name]}
        )
        if name.startswith("pass"):
            staged_pass += sec
        else:
            staged_finish += sec
    rows.append(
        {
            "stage": "pass: other (lengths, evidence, copies)",
            "seconds": pass_s - read_s - staged_pass,
        }
    )
    rows.append(
        {"stage": "finish: other (gather rows, pairs, stats)", "seconds": finish_s - staged_finish}
    )
    # stage wrappers reset the kernel's high-water mark, so a phase's peak is the max over both
    peaks = {
        ph: max([v for k, v in st.peak_mb.items() if k.startswith(ph)] + [0.0])
        for ph in ("pass", "finish")
    }
    rows.append(
        {"stage": "pass total", "seconds": pass_s, "peak_mb": max(pass_mem.peak_mb, peaks["pass"])}
    )
    rows.append(
        {
            "stage": "finish total",
            "seconds": finish_s,
            "peak_mb": max(finish_mem.peak_mb, peaks["finish"]),
        }
    )
    rows.sort(key=lambda r: (r["stage"].split(":")[0].split()[0], r["stage"].endswith("total")))
    common.print_table(
        rows,
        [
            ("stage", "stage", ""),
            ("seconds", "s", ".2f"),
            ("calls", "calls", ""),
            ("peak_mb", "peak RSS MB", ",.0f"),
        ],
        f"in-process stage profile ({args.clock} seconds; peak RSS of the process while the "
        "stage ran)",
    )
    s = d.stats_
    print(
        f"stats: {s.documents:,} docs, {s.exact_duplicates:,} exact duplicates, "
        f"{s.candidate_pairs:,} candidates, {s.accepted_pairs:,} accepted, "
        f"{s.big_buckets:,} big buckets ({s.big_bucket_docs:,} docs), "
        f"{s.bytes_per_doc_in_memory:,.0f} B/doc kept"
    )
    return rows


# ---------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--n", type=int, default=1_000_000, help="documents [1,000,000]")
    p.add_argument("--threads", type=int, default=1, help="native threads (read before imports)")
    p.add_argument("--workdir", default="/tmp", help="where the corpus is written [/tmp]")
    p.add_argument("--dup-fraction", type=float, default=0.3, help="fraction of copies [0.3]")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--synthetic", action="store_true", help="generated base texts only")
    p.add_argument("--fresh", action="store_true", help="regenerate the corpus even if present")
    p.add_argument("--delete-corpus", action="store_true", help="delete the corpus at the end")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument(
        "--verify", choices=["hybrid", "sketch", "exact", "none"], default="hybrid", help="[hybrid]"
    )
    p.add_argument(
        "--removal", choices=["keep-aware", "components"], default="keep-aware", help="[keep-aware]"
    )
    p.add_argument("--profile", action="store_true", help="also profile stages in-process")
    p.add_argument(
        "--clock", choices=sorted(common.CLOCKS), default="cpu", help="profile clock [cpu]"
    )
    p.add_argument("--no-cli", action="store_true", help="skip the CLI run (with --profile)")
    p.add_argument("--json", type=Path, help="write all results as JSON here")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    global CLOCK
    CLOCK = common.CLOCKS[args.clock]
    print("machine:", common.machine())
    path, gen_s = make(args)
    size_mb = path.stat().st_size / 1e6
    results: dict[str, Any] = {
        "machine": common.machine(),
        "n": args.n,
        "corpus_file_mb": size_mb,
        "generate_s": gen_s,
    }
    if not args.no_cli:
        r = run_cli(path, args)
        s = r["summary"]
        n, text_mb = s["documents"], s["bytes_in"] / 1e6
        row = {
            "documents": n,
            "text_mb": text_mb,
            "wall_s": r["wall_s"],
            "cpu_s": r["cpu_s"],
            "docs_per_s": n / r["wall_s"],
            "mbps": text_mb / r["wall_s"],
            "mbps_cpu": text_mb / r["cpu_s"],
            "peak_mb": r["peak_rss_mb"],
            "peak_per_doc": r["peak_rss_mb"] * 1e6 / n,
            "kept_per_doc": s["bytes_per_doc_in_memory"],
        }
        common.print_table(
            [row],
            [
                ("documents", "documents", ","),
                ("text_mb", "text MB", ",.0f"),
                ("wall_s", "wall s", ".1f"),
                ("cpu_s", "CPU s", ".1f"),
                ("docs_per_s", "docs/s", ",.0f"),
                ("mbps", "MB/s", ".1f"),
                ("mbps_cpu", "MB/CPU s", ".1f"),
                ("peak_mb", "peak RSS MB", ",.0f"),
                ("peak_per_doc", "peak B/doc", ",.0f"),
                ("kept_per_doc", "kept B/doc", ",.0f"),
            ],
            f"neardup dedup (CLI: one compute thread + input read-ahead, t={args.threshold}, "
            f"verify={args.verify}, removal={args.removal}) on "
            f"{path.name}, {size_mb:,.0f} MB JSONL",
        )
        keys = ("exact_duplicates", "candidate_pairs", "accepted_pairs", "clusters", "removed")
        print("summary:", ", ".join(f"{k} {s[k]:,}" for k in keys))
        results["cli"] = {**row, "summary": s}
    if args.profile:
        results["profile"] = profile(path, args)
    if args.delete_corpus:
        path.unlink()
    else:
        print(f"corpus kept for reuse at {path} (--delete-corpus removes it)")
    if args.json:
        common.write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
