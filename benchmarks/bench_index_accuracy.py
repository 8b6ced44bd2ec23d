"""Benchmark: accuracy of index queries against brute-force Jaccard, index one half, query the other.

Run (a minute or two):

    python benchmarks/bench_index_accuracy.py

For 20news messages (word 5-shingles) and PyPI summaries (character 5-grams) and thresholds 0.5,
0.8 and 0.9: the first half of ``--limit`` documents is added to an in-memory index (default
parameters: MinHash features planned for the threshold, hybrid verification), the second half is
queried, and the (query, stored) matches are compared with every cross pair whose exact Jaccard
reaches the threshold.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import argparse
from pathlib import Path

import common

common.ensure_neardup()

from neardup import DedupParams, Index, ShingleParams, shingle_batch  # noqa: E402
from neardup.testing.truth import exact_similar_pairs  # noqa: E402

CORPORA = {
    "20news": (Path("/work/shared/data/20news_bydate/docs.jsonl.gz"), ShingleParams(w=5)),
    "pypi": (
        Path("/work/shared/data/pypi_summaries/docs.jsonl.gz"),
        ShingleParams(w=5, tokens="char"),
    ),
}


def run(name: str, limit: int, threshold: float) -> dict[str, object]:
    path, shingle = CORPORA[name]
    texts = list(common.iter_texts(path, limit=limit))
    half = len(texts) // 2
    stored, queries = texts[:half], texts[half:]
    truth_a, truth_b, _ = exact_similar_pairs(shingle_batch(texts, shingle), threshold=threshold)
    cross = (truth_a < half) & (truth_b >= half)
    truth = set(zip((truth_b[cross] - half).tolist(), truth_a[cross].tolist(), strict=True))
    index = Index.create(None, DedupParams(threshold=threshold, shingle=shingle))
    index.add([str(i) for i in range(half)], stored)
    found = {(q, int(m.id)) for q, ms in enumerate(index.query(queries)) for m in ms}
    hit = len(found & truth)
    return {
        "corpus": name,
        "threshold": threshold,
        "true_pairs": len(truth),
        "found": len(found),
        "precision": round(hit / max(len(found), 1), 4),
        "recall": round(hit / max(len(truth), 1), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=10000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [run(c, args.limit, t) for c in CORPORA for t in (0.5, 0.8, 0.9)]
    cols = ["corpus", "threshold", "true_pairs", "found", "precision", "recall"]
    common.print_table(rows, [(k, k, "") for k in cols], "index queries vs brute force")
    if args.json:
        common.write_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
