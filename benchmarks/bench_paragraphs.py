"""Paragraph deduplication on 20 Newsgroups against the exact truth over every paragraph pair.

    python benchmarks/bench_paragraphs.py                       # 20news, t = 0.8, --jobs 1 and 2
    python benchmarks/bench_paragraphs.py --limit 5000 --json benchmarks/results/paragraphs.json

Runs the real command (``neardup dedup --unit paragraph``, a process of its own, so wall time,
CPU time and peak memory are the command's) with ``--jobs 1`` and ``--jobs 2`` and checks the outputs are
byte-identical. The truth: every paragraph of the input with at least ``--min-tokens`` tokens
(split by the same rule), and every pair of them whose exact Jaccard of word 5-shingle sets is
at or above the threshold, from an exact set-similarity join (``setjoin.similar_pairs``, PPJoin;
checked here against brute force, ``testing.exact_similar_pairs``, on a random sample of
paragraphs). An *unjustified* removal is a removed paragraph with no kept paragraph at >= t
(text lost); a *residual* copy is a pair of kept paragraphs still at >= t (a copy left in).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

common.ensure_neardup()

import numpy as np  # noqa: E402

from neardup.params import ShingleParams  # noqa: E402
from neardup.shingles import shingle_batch  # noqa: E402
from neardup.testing import exact_similar_pairs  # noqa: E402
from neardup.testing.measures import residual_duplicates, unjustified_removals  # noqa: E402
from neardup.testing.paragraphs import unit_truth  # noqa: E402

CORPUS = Path("/work/shared/data/20news_bydate/docs.jsonl.gz")


def run_command(corpus: Path, out: Path, jobs: int, args: argparse.Namespace) -> dict[str, object]:
    """``neardup dedup --unit paragraph`` in its own process; its summary, wall and CPU time."""
    out.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "neardup.cli", "dedup", str(corpus), "--unit", args.unit,
        "--threshold", str(args.threshold), "--min-paragraph-tokens", str(args.min_tokens),
        "--jobs", str(jobs), "-o", str(out / "kept.jsonl"), "--clusters", str(out / "clusters.jsonl"),
        "--pairs", str(out / "pairs.jsonl"), "--summary-json", str(out / "summary.json"), "-q",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(common.REPO / "src")}
    started, before = time.perf_counter(), _children_cpu()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - started, _children_cpu() - before
    if proc.returncode:
        raise SystemExit(proc.stderr)
    summary = json.loads((out / "summary.json").read_text())
    return {**summary, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="JSONL(.gz) with id and text")
    ap.add_argument("--limit", type=int, help="first N documents")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--min-tokens", type=int, default=5)
    ap.add_argument("--unit", choices=["paragraph", "line"], default="paragraph")
    ap.add_argument("--check-sample", type=int, default=4000, help="paragraphs brute-forced [4000]")
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-para-") as tmp_name:
        tmp = Path(tmp_name)
        corpus = args.corpus
        if args.limit:
            corpus = tmp / "corpus.jsonl"
            with gzip.open(args.corpus, "rt", encoding="utf-8") as src, corpus.open("w") as dst:
                for n, line in enumerate(src):
                    if n >= args.limit:
                        break
                    dst.write(line)
        runs = {jobs: run_command(corpus, tmp / f"jobs{jobs}", jobs, args) for jobs in (1, 2)}
        identical = all(
            (tmp / "jobs1" / name).read_bytes() == (tmp / "jobs2" / name).read_bytes()
            for name in ("kept.jsonl", "clusters.jsonl", "pairs.jsonl")
        )
        opener = gzip.open if corpus.suffix == ".gz" else open
        with opener(corpus, "rt", encoding="utf-8") as fh:
            records = [json.loads(x) for x in fh if x.strip()]
        ids = [r["id"] for r in records]
        texts = [r["text"] for r in records]
        started = time.perf_counter()
        truth = unit_truth(texts, args.threshold, args.unit, args.min_tokens)  # type: ignore[arg-type]
        truth_s = time.perf_counter() - started
        where = {
            (ids[d], p): i
            for i, (d, p) in enumerate(zip(truth.doc.tolist(), truth.part.tolist(), strict=True))
        }
        kept = np.ones(len(truth.doc), dtype=bool)
        for line in (tmp / "jobs1" / "clusters.jsonl").read_text().splitlines():
            row = json.loads(line)
            if not row["kept"]:
                kept[where[(row["id"], row["paragraph"])]] = False

    # The join is exact: the same pairs as brute force on a random sample of paragraphs.
    rng = np.random.default_rng(0)
    sample = np.sort(
        rng.choice(len(truth.doc), min(args.check_sample, len(truth.doc)), replace=False)
    )
    sample_texts = [_unit_text(texts, truth, int(i), args.unit) for i in sample]
    brute = exact_similar_pairs(
        shingle_batch(sample_texts, ShingleParams()), threshold=args.threshold
    )
    inside = np.isin(truth.a, sample) & np.isin(truth.b, sample)
    join_pairs = {(int(a), int(b)) for a, b in zip(truth.a[inside], truth.b[inside], strict=True)}
    brute_pairs = {
        (int(sample[a]), int(sample[b])) for a, b in zip(brute[0], brute[1], strict=True)
    }

    lost = unjustified_removals(kept, truth.a, truth.b)
    ra, _ = residual_duplicates(kept, truth.a, truth.b)
    one = runs[1]
    compared = len(truth.doc)
    result = {
        "corpus": str(args.corpus),
        "documents": one["documents"],
        "paragraphs": one["paragraphs"],
        "paragraphs_compared": compared,
        "removed": one["paragraphs_removed"],
        "removed_exact": one["removed_exact"],
        "removed_near": one["removed_near"],
        "documents_rewritten": one["documents_rewritten"],
        "documents_dropped": one["documents_dropped"],
        "true_pairs": len(truth.a),
        "unjustified": len(lost),
        "unjustified_pct": round(100 * len(lost) / max(compared, 1), 4),
        "residual_pairs": len(ra),
        "residual_pct": round(100 * len(ra) / max(compared, 1), 4),
        "jobs1_wall_s": runs[1]["wall_s"],
        "jobs1_cpu_s": runs[1]["cpu_s"],
        "jobs1_peak_mb": runs[1]["peak_memory_mb"],
        "jobs2_wall_s": runs[2]["wall_s"],
        "jobs2_cpu_s": runs[2]["cpu_s"],
        "jobs2_peak_mb": runs[2]["peak_memory_mb"],
        "jobs_identical": identical,
        "truth_s": round(truth_s, 2),
        "join_equals_brute_force_on_sample": join_pairs == brute_pairs,
        "sample_pairs": len(brute_pairs),
    }
    for key, value in result.items():
        print(f"{key:36} {value}")
    if args.json:
        common.write_json(args.json, {"result": result, "machine": common.machine()})
    if not identical or join_pairs != brute_pairs:
        raise SystemExit("FAILED: outputs differ between --jobs 1 and 2, or the join is not exact")


def _unit_text(texts: list[str], truth: object, i: int, unit: str) -> str:
    from neardup.paragraphs import split

    found = split([texts[truth.doc[i]]], unit)  # type: ignore[attr-defined, arg-type]
    return found.texts()[int(truth.part[i])]  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
