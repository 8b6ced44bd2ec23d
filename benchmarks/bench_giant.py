"""Giant clusters: cost per document as near-copies multiply, and exactness against brute force.

    python benchmarks/bench_giant.py --data /tmp/giant           # builds the corpora first
    python benchmarks/bench_giant.py --data /tmp/giant --only news --copies 1,20
    python benchmarks/bench_giant.py --data /tmp/giant --accuracy-only

Corpora (written by ``make_copies.py`` into ``--data`` when missing; ../shared/data needed):
``news_xC`` (20 Newsgroups, every message C times with one word changed per copy), ``pypi_xC``
(the first 40,000 PyPI summaries likewise, character 5-grams) and ``template_50k`` (distinct
documents around one template: buckets of thousands of documents that must stay kept).

Speed table: one ``neardup dedup`` process per row (``--jobs 1`` unless ``--jobs``), wall time,
µs per document, the ratio of that to the x1 row, peak RSS (``/usr/bin/time -v``), and the
summary's work counters. ``--memory-limit`` rows repeat the largest corpora under a limit.

Accuracy table (``--accuracy-copies``, default x1 and x5): brute-force Jaccard of the shingle
sets (``neardup.testing.exact_similar_pairs``) against the CLI's outputs at each threshold:
unjustified removals (removed with no kept document at >= t, share of removed), residual copies
(kept pairs at >= t, share of kept), and ``--all-pairs`` precision and recall.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
CORPORA = {
    "news": (SHARED / "20news_bydate" / "docs.jsonl.gz", None, []),
    "pypi": (SHARED / "pypi_summaries" / "docs.jsonl.gz", 40000, ["--tokens", "char", "-w", "5"]),
}


def corpus_path(data: Path, name: str, copies: int) -> Path:
    """The corpus file, written by make_copies.py when missing."""
    if name == "template":
        path = data / "template_50k.jsonl"
        args = ["--template", "50000"]
    else:
        path = data / f"{name}_x{copies}.jsonl"
        base, limit, _ = CORPORA[name]
        args = ["--base", str(base), "--copies", str(copies)]
        if limit:
            args += ["--limit", str(limit)]
    if not path.exists():
        data.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(HERE / "make_copies.py"), str(path), *args], check=True)
    return path


def run_dedup(path: Path, extra: list[str], outdir: Path) -> dict[str, Any]:
    """One ``neardup dedup`` process: wall, peak RSS, the summary JSON."""
    summary = outdir / "summary.json"
    cmd = [
        "/usr/bin/time", "-v", sys.executable, "-m", "neardup.cli", "dedup", str(path),
        "-o", str(outdir / "kept.jsonl"), "--summary-json", str(summary), "--quiet", *extra,
    ]  # fmt: skip
    for f in outdir.iterdir():
        f.unlink()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    out = json.loads(summary.read_text())
    out.update(wall=wall, peak_mb=peak / 1024)
    return out


def speed(args: argparse.Namespace, outdir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    names = [n for n in args.only.split(",") if n]
    for name in names:
        copies = [1] if name == "template" else [int(c) for c in args.copies.split(",")]
        limits = [None, *([args.memory_limit] if args.memory_limit else [])]
        base_us = None
        for c in copies:
            for limit in limits:
                if limit and c != max(copies):
                    continue
                path = corpus_path(args.data, name, c)
                extra = ["--jobs", str(args.jobs)]
                extra += CORPORA[name][2] if name in CORPORA else []
                if limit:
                    extra += ["--memory-limit", limit]
                r = run_dedup(path, extra, outdir)
                us = r["wall"] / r["documents"] * 1e6
                base_us = base_us if base_us is not None else us
                rows.append(
                    {
                        "corpus": f"{name} x{c}" + (f" --memory-limit {limit}" if limit else ""),
                        "docs": r["documents"],
                        "MB": path.stat().st_size / 1e6,
                        "wall s": r["wall"],
                        "us/doc": us,
                        "vs x1": us / base_us,
                        "peak MB": r["peak_mb"],
                        "removed": r["removed"],
                        "candidates": r.get("candidate_pairs", 0),
                        "exact checks": r.get("exact_checks", r.get("rechecked_pairs", 0)),
                        "leaders": r.get("leader_checks", r.get("bucket_checks", 0)),
                        "spilled MB": r.get("spilled_bytes", 0) / 1e6,
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    return rows


def accuracy(args: argparse.Namespace, outdir: Path) -> list[dict[str, Any]]:
    import numpy as np

    from neardup.params import ShingleParams
    from neardup.shingles import shingle_batch
    from neardup.testing import exact_similar_pairs, removal_summary

    rows: list[dict[str, Any]] = []
    names = [n for n in args.only.split(",") if n]
    for name in names:
        copies = [1] if name == "template" else [int(c) for c in args.accuracy_copies.split(",")]
        for c in copies:
            path = corpus_path(args.data, name, c)
            recs = [json.loads(line) for line in path.open(encoding="utf-8")]
            ids = [r["id"] for r in recs]
            where = {rid: i for i, rid in enumerate(ids)}
            extra = CORPORA[name][2] if name in CORPORA else []
            char = "char" in extra
            batch = shingle_batch(
                [r["text"] for r in recs], ShingleParams(w=5, tokens="char" if char else "word")
            )
            for t in [float(x) for x in args.thresholds.split(",")]:
                tp, tb, _ = exact_similar_pairs(batch, threshold=t)
                run_dedup(
                    path,
                    [*extra, "--threshold", str(t), "--pairs", str(outdir / "pairs.jsonl"),
                     "--all-pairs", "--jobs", str(args.jobs)],
                    outdir,
                )  # fmt: skip
                kept = np.zeros(len(ids), dtype=bool)
                for line in (outdir / "kept.jsonl").open(encoding="utf-8"):
                    kept[where[json.loads(line)["id"]]] = True
                fa: list[int] = []
                fb: list[int] = []
                for line in (outdir / "pairs.jsonl").open(encoding="utf-8"):
                    p = json.loads(line)
                    fa.append(where[p["id_a"]])
                    fb.append(where[p["id_b"]])
                s = removal_summary(kept, fa, fb, tp, tb)
                rows.append(
                    {
                        "corpus": f"{name} x{c}",
                        "t": t,
                        "true pairs": len(tp),
                        "P": s["precision"],
                        "R": s["recall"],
                        "removed": s["removed"],
                        "unjustified": s["unjustified_removals"],
                        "unjust %rem": 100 * s["unjustified_removals"] / max(s["removed"], 1),
                        "residual": s["residual_documents"],
                        "resid %kept": 100
                        * s["residual_documents"]
                        / max(s["documents"] - s["removed"], 1),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    return rows


def _table(rows: list[dict[str, Any]]) -> None:
    if rows:
        spec = {float: ".3f"}
        cols = [(k, k, spec.get(type(v), "")) for k, v in rows[0].items()]
        common.print_table(rows, cols)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "neardup-giant")
    ap.add_argument("--only", default="news,pypi,template")
    ap.add_argument("--copies", default="1,5,20")
    ap.add_argument("--accuracy-copies", default="1,5")
    ap.add_argument("--thresholds", default="0.5,0.8,0.9")
    ap.add_argument("--memory-limit", default="500M")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--speed-only", action="store_true")
    ap.add_argument("--accuracy-only", action="store_true")
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args()
    common.ensure_neardup()
    result: dict[str, Any] = {"machine": common.machine()}
    with tempfile.TemporaryDirectory() as tmp:
        outdir = Path(tmp)
        if not args.accuracy_only:
            result["speed"] = speed(args, outdir)
            _table(result["speed"])
        if not args.speed_only:
            result["accuracy"] = accuracy(args, outdir)
            _table(result["accuracy"])
    if args.json:
        common.write_json(args.json, result)
    os.sync()


if __name__ == "__main__":
    main()
