"""neardup beside rensa, datasketch and datatrove in one run: sketch kernels, then whole pipelines.

    python benchmarks/bench_peers.py                       # 20news raw, ~10 minutes
    python benchmarks/bench_peers.py --limit 4000 --repeat 1 --kernel-docs 1000   # quick look

**Kernels** (one thread, t=128, best of ``--repeat``): the peers get each document's word
5-shingles already made (lowercase ``\\w+`` runs, five joined by a space; a set of str, of
UTF-8 bytes for datasketch) and that shingling is *not* counted; neardup starts from the raw
text and counts its shingling (``shingle_sequence`` + ``sketch``, OPH), with its sketch alone
on its own fingerprints beside. MB are of raw UTF-8 text, on ``--kernel-docs`` documents spread
through the corpus.

**Pipelines** (raw JSONL -> kept set at ``--threshold``), each a child process timed under
``/usr/bin/time`` (wall; peak RSS of the largest process), best wall of ``--repeat`` (once if
the first run takes more than ``--once-over`` seconds):
``neardup dedup`` (defaults, ``--jobs`` 1 and 2); what a rensa or datasketch user writes (json
per line, the shingles above, one MinHash per document with 128 permutations, the library's
LSH at the threshold (rensa: 16 bands; datasketch: its own choice), the estimate >= threshold
for each candidate, union-find, keep the first of each connected component; documents without
a shingle are kept); datatrove's MinHash deduplication (its 4 stages, default
``MinhashConfig``: 5-grams of its spaCy word tokens, 14 buckets x 8 hashes, no threshold) on
``LocalPipelineExecutor`` with 1 and 2 workers over the corpus split in 2 files. Each kept set is
scored against brute force: every pair with exact Jaccard >= threshold over neardup's word
5-shingle sets (``neardup.testing.exact_similar_pairs``): *unjustified* removals (removed, and no
kept document resembles it at >= t) and *residual* duplicates (pairs of kept documents at >= t),
``neardup.testing.measures``.
"""

from __future__ import annotations

import argparse
import gzip
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

NUM_PERM = 128
_WORD = re.compile(r"\w+")


def py_shingles(text: str, w: int = 5) -> set[str]:
    """What a rensa/datasketch user writes: lowercase, ``\\w+`` runs, w words joined by spaces."""
    words = _WORD.findall(text.lower())
    if len(words) < w:
        return {" ".join(words)} if words else set()
    return set(map(" ".join, zip(*(words[i:] for i in range(w)), strict=False)))


# ---------------------------------------------------------------- pipelines (child processes)


def _read_texts(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def _keep_first_per_component(n: int, edges: list[tuple[int, int]]) -> list[int]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)  # the root is the component's first document
    return [i for i in range(n) if find(i) == i]


def pipeline_rensa(path: Path, threshold: float) -> list[int]:
    """rensa RMinHash per document + RMinHashLSH + estimate check + components."""
    import rensa

    def sketch(shingles: set[str]) -> object:
        m = rensa.RMinHash(num_perm=NUM_PERM, seed=42)
        m.update(list(shingles))
        return m

    lsh = rensa.RMinHashLSH(threshold=threshold, num_perm=NUM_PERM, num_bands=16)
    return _lsh_pipeline(_read_texts(path), lsh, sketch, threshold)


def pipeline_datasketch(path: Path, threshold: float) -> list[int]:
    """datasketch MinHash per document + MinHashLSH + estimate check + components."""
    from datasketch import MinHash, MinHashLSH

    def sketch(shingles: set[str]) -> object:
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch([x.encode("utf-8") for x in shingles])
        return m

    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    return _lsh_pipeline(_read_texts(path), lsh, sketch, threshold)


def _lsh_pipeline(texts: list[str], lsh: Any, sketch: Any, threshold: float) -> list[int]:
    """What a peer's user writes: a sketch per document into the LSH, each candidate pair
    whose estimate reaches the threshold an edge, one document kept per component."""
    sketches = {}
    for i, text in enumerate(texts):
        shingles = py_shingles(text)
        if shingles:
            sketches[i] = sketch(shingles)
            lsh.insert(i, sketches[i])
    edges = [
        (i, j)
        for i, m in sketches.items()
        for j in lsh.query(m)
        if j > i and m.jaccard(sketches[j]) >= threshold
    ]
    return _keep_first_per_component(len(texts), edges)


def pipeline_datatrove(shards: Path, work: Path, workers: int) -> list[int]:
    """datatrove's 4 MinHash stages, default config, ``workers`` processes at a time."""
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    config = MinhashConfig()
    files = len(list(shards.iterdir()))
    logs = work / "logs"
    stages = [
        LocalPipelineExecutor(
            pipeline=[
                JsonlReader(str(shards)),
                MinhashDedupSignature(output_folder=str(work / "signatures"), config=config),
            ],
            tasks=files,
            workers=workers,
            logging_dir=str(logs / "signatures"),
        ),
        LocalPipelineExecutor(
            pipeline=[
                MinhashDedupBuckets(
                    input_folder=str(work / "signatures"),
                    output_folder=str(work / "buckets"),
                    config=config,
                )
            ],
            tasks=config.num_buckets,
            workers=workers,
            logging_dir=str(logs / "buckets"),
        ),
        LocalPipelineExecutor(
            pipeline=[
                MinhashDedupCluster(
                    input_folder=str(work / "buckets"),
                    output_folder=str(work / "remove_ids"),
                    config=config,
                )
            ],
            tasks=1,
            logging_dir=str(logs / "clusters"),
        ),
        LocalPipelineExecutor(
            pipeline=[
                JsonlReader(str(shards)),
                MinhashDedupFilter(input_folder=str(work / "remove_ids")),
                JsonlWriter(str(work / "kept")),
            ],
            tasks=files,
            workers=workers,
            logging_dir=str(logs / "filter"),
        ),
    ]
    for stage in stages:
        stage.run()
    kept = []
    for part in sorted((work / "kept").iterdir()):
        with gzip.open(part, "rt", encoding="utf-8") as f:
            kept.extend(int(json.loads(line)["id"]) for line in f)
    return sorted(kept)


def child(args: argparse.Namespace) -> int:
    """Run one pipeline and write the kept document indices, one a line."""
    work = Path(args.work)
    source = work / "in.jsonl"
    if args.child == "rensa":
        kept = pipeline_rensa(source, args.threshold)
    elif args.child == "datasketch":
        kept = pipeline_datasketch(source, args.threshold)
    else:
        run_dir = Path(tempfile.mkdtemp(prefix="datatrove-", dir=work))
        kept = pipeline_datatrove(work / "shards", run_dir, int(args.child.split(":")[1]))
    (work / "kept.txt").write_text("".join(f"{i}\n" for i in kept))
    return 0


# ---------------------------------------------------------------- the parent


def timed_child(cmd: list[str], work: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall s, peak RSS MB of the largest process) of cmd under GNU time."""
    report = work / "time.txt"
    subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", "-o", str(report), *cmd],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall, kb = report.read_text().split()[-2:]
    return float(wall), int(kb) / 1024


def kernel_rows(texts: list[str], repeat: int) -> list[dict[str, Any]]:
    """Sketch speed from given shingles (peers) and from raw text (neardup), one thread."""
    import datasketch
    import rensa

    from neardup.minhash import sketch
    from neardup.params import ShingleParams, SketchParams
    from neardup.shingles import shingle_sequence

    mb = common.utf8_mb(texts)
    sp = SketchParams(t=NUM_PERM)
    started = time.perf_counter()
    sets = [py_shingles(t) for t in texts]
    shingle_s = time.perf_counter() - started
    byte_sets = [{s.encode("utf-8") for s in x} for x in sets]
    lists = [list(s) for s in sets]
    fps, offsets = shingle_sequence(texts, ShingleParams())
    sketch(fps, offsets, sp)  # compiled or loaded before the timings

    def best(fn: Any) -> float:
        return common.best_time(fn, repeat)

    def rensa_each() -> None:
        for s in lists:
            m = rensa.RMinHash(num_perm=NUM_PERM, seed=42)
            m.update(s)
            m.digest()

    rows = [
        (
            "neardup shingle + sketch (OPH, from raw text)",
            best(lambda: sketch(*shingle_sequence(texts, ShingleParams()), sp)),
        ),
        ("neardup sketch alone (its own fingerprints)", best(lambda: sketch(fps, offsets, sp))),
        ("rensa RMinHash.update, one per document", best(rensa_each)),
        (
            "rensa RMinHash.digest_matrix_from_token_sets",
            best(lambda: rensa.RMinHash.digest_matrix_from_token_sets(lists, NUM_PERM, 42)),
        ),
        (
            "rensa CMinHash.digests64_from_token_sets",
            best(lambda: rensa.CMinHash.digests64_from_token_sets(lists, NUM_PERM, 42)),
        ),
        (
            "datasketch MinHash.bulk",
            best(lambda: datasketch.MinHash.bulk(byte_sets, num_perm=NUM_PERM)),
        ),
        ("(python word 5-shingles, the peers' input: not counted above)", shingle_s),
    ]
    ours = rows[0][1]
    return [
        {
            "method": name,
            "s": s,
            "docs_s": len(texts) / s,
            "mb_s": mb / s,
            "x": s / ours,
        }
        for name, s in rows
    ]


def write_inputs(texts: list[str], work: Path) -> None:
    """in.jsonl (id = row index) and the same records split in 2 files for datatrove."""
    lines = [
        json.dumps({"id": str(i), "text": t}, ensure_ascii=False) + "\n"
        for i, t in enumerate(texts)
    ]
    (work / "in.jsonl").write_text("".join(lines), encoding="utf-8")
    shards = work / "shards"
    shards.mkdir()
    half = (len(lines) + 1) // 2
    for k, part in enumerate((lines[:half], lines[half:])):
        (shards / f"{k:02d}.jsonl").write_text("".join(part), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0],
        epilog=__doc__.split("\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--corpus", type=Path, help="JSONL(.gz) with a text field [20news raw]")
    p.add_argument("--limit", type=int, help="first N documents")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--repeat", type=int, default=3, help="runs per timing; the best counts [3]")
    p.add_argument(
        "--once-over", type=float, default=60.0, help="a pipeline slower than this runs once [60 s]"
    )
    p.add_argument("--kernel-docs", type=int, default=5000, help="documents for kernels [5000]")
    p.add_argument(
        "--pipelines",
        default="neardup:1,neardup:2,rensa,datasketch,datatrove:1,datatrove:2",
        help="which pipeline rows [all]",
    )
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    # Pipelines run as a user would run them: the default thread pools, and bytecode written
    # (``.pyc``) as after ``pip install``; the kernel table runs here on one thread.
    child_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    common.limit_threads(1)
    common.ensure_neardup()
    import numpy as np

    from neardup.shingles import shingle_batch
    from neardup.testing import exact_similar_pairs
    from neardup.testing.measures import residual_duplicates, unjustified_removals

    corpus = common.load_corpus(args.corpus, args.limit)
    texts = list(corpus.texts)
    n, mb = len(texts), common.utf8_mb(texts)
    load = os.getloadavg()[0]
    print(f"corpus: {n:,} documents, {mb:.1f} MB; load {load:.1f}; {common.machine()}")

    sample = common.spread_sample(texts, min(args.kernel_docs, n))
    krows = kernel_rows(sample, args.repeat)
    common.print_table(
        krows,
        [
            ("method", f"kernel, t={NUM_PERM}, {len(sample):,} docs", ""),
            ("s", "s", ".3f"),
            ("docs_s", "docs/s", ",.0f"),
            ("mb_s", "MB/s", ".1f"),
            ("x", "x neardup time", ".1f"),
        ],
    )

    a, b, _ = exact_similar_pairs(shingle_batch(texts), threshold=args.threshold)
    print(f"\ntruth: {len(a):,} pairs at exact Jaccard >= {args.threshold} (word 5-shingles)")
    work = Path(tempfile.mkdtemp(prefix="neardup-peers-"))
    write_inputs(texts, work)
    py = sys.executable
    rows = []
    for name in args.pipelines.split(","):
        kept_path = work / "kept.txt"
        if name.startswith("neardup"):
            out = work / "kept.jsonl"
            cmd = [py, "-m", "neardup", "dedup", str(work / "in.jsonl"), "-o", str(out)]
            cmd += ["--quiet", "--threshold", str(args.threshold), "--jobs", name.split(":")[1]]
        else:
            out = None
            cmd = [py, __file__, "--child", name, "--work", str(work)]
            cmd += ["--threshold", str(args.threshold)]
        best_wall, peak, runs = float("inf"), 0.0, 0
        while runs < args.repeat and (runs == 0 or best_wall < args.once_over):
            wall, rss = timed_child(cmd, work, child_env)
            best_wall, peak, runs = min(best_wall, wall), max(peak, rss), runs + 1
        kept = np.zeros(n, dtype=np.bool_)
        if out is not None:
            with open(out, encoding="utf-8") as f:
                kept[[int(json.loads(line)["id"]) for line in f]] = True
        else:
            kept[np.loadtxt(kept_path, dtype=np.int64, ndmin=1)] = True
        ra, _ = residual_duplicates(kept, a, b)
        rows.append(
            {
                "method": name,
                "runs": runs,
                "wall": best_wall,
                "mb_s": mb / best_wall,
                "rss": peak,
                "removed": int(n - kept.sum()),
                "unjustified": len(unjustified_removals(kept, a, b)),
                "residual": len(ra),
            }
        )
        print(f"  {name}: {best_wall:.2f} s", flush=True)
    ours = rows[0]["wall"] if rows else 1.0
    for row in rows:
        row["x"] = row["wall"] / ours
    common.print_table(
        rows,
        [
            ("method", f"pipeline, t={args.threshold}", ""),
            ("wall", "wall s", ".2f"),
            ("runs", "runs", ""),
            ("mb_s", "MB/s", ".2f"),
            ("x", "x first row", ".1f"),
            ("rss", "peak MB", ".0f"),
            ("removed", "removed", ","),
            ("unjustified", "unjustified", ","),
            ("residual", "residual", ","),
        ],
    )
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
