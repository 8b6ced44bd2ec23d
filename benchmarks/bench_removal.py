"""Removal policies on perfect pairs: what connected components lose, what keep-aware keeps.

    python benchmarks/bench_removal.py                 # 20news when present, else synthetic
    python benchmarks/bench_removal.py --limit 5000 --char --json benchmarks/results/removal.json

Pairs are exact (brute-force Jaccard of the shingle sets, ``neardup.testing.exact_similar_pairs``),
so every difference is the removal policy's own. For each threshold and policy (keep first) the
table shows documents removed, *unjustified* removals (removed with no kept document at >= t:
unique text lost), *residual* duplicates (pairs of kept documents still at >= t) and the time
of the removal step alone. A second table times both policies on a random graph against today's
``cluster_labels`` + ``choose_representatives``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import common

common.limit_threads(common.threads_from_argv(sys.argv))
common.ensure_neardup()

import numpy as np  # noqa: E402

from neardup.clusters import choose_representatives, cluster_labels  # noqa: E402
from neardup.params import ShingleParams  # noqa: E402
from neardup.removal import components, keep_aware, priority_ranks  # noqa: E402
from neardup.shingles import shingle_batch  # noqa: E402
from neardup.testing import exact_similar_pairs, removal_summary  # noqa: E402

POLICIES = {"components": components, "keep-aware": keep_aware}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, help="JSONL(.gz) with a text field")
    ap.add_argument("--limit", type=int, help="first N documents")
    ap.add_argument("--synthetic", action="store_true", help="generated text instead")
    ap.add_argument("--char", action="store_true", help="character 5-grams (default: word 5)")
    ap.add_argument("--thresholds", default="0.5,0.8,0.9")
    ap.add_argument("--graph-docs", type=int, default=1_000_000, help="random graph size [1e6]")
    ap.add_argument("--graph-pairs", type=int, default=3_000_000, help="its pairs [3e6]")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()

    corpus = common.load_corpus(args.corpus, args.limit, synthetic=args.synthetic)
    texts = corpus.texts
    n = len(texts)
    params = ShingleParams(w=5, tokens="char" if args.char else "word")
    batch = shingle_batch(texts, params)
    priority = priority_ranks(n)
    keep_aware(2, [0], [1], [1.0], priority_ranks(2))  # compile outside the timings
    components(2, [0], [1], [1.0], priority_ranks(2))
    rows = []
    for t in (float(x) for x in args.thresholds.split(",")):
        a, b, s = exact_similar_pairs(batch, threshold=t)
        for name, policy in POLICIES.items():
            seconds = common.best_time(
                lambda p=policy, a=a, b=b, s=s: p(n, a, b, s, priority), args.repeat
            )
            kept = policy(n, a, b, s, priority).kept
            summary = removal_summary(kept, a, b, a, b)
            removed = summary["removed"]
            rows.append(
                {
                    "threshold": t,
                    "policy": name,
                    "pairs": len(a),
                    "removed": removed,
                    "unjustified": summary["unjustified_removals"],
                    "unjustified_pct": 100.0 * summary["unjustified_removals"] / max(removed, 1),
                    "residual": summary["residual_duplicates"],
                    "ms": 1000 * seconds,
                }
            )
    title = f"{corpus.name}: {n} documents, {params.tokens} {params.w}-shingles, exact pairs"
    common.print_table(
        rows,
        [
            ("threshold", "t", ""),
            ("policy", "policy", ""),
            ("pairs", "pairs", ""),
            ("removed", "removed", ""),
            ("unjustified", "unjustified", ""),
            ("unjustified_pct", "% of removed", ".1f"),
            ("residual", "residual pairs", ""),
            ("ms", "ms", ".1f"),
        ],
        title,
    )

    rng = np.random.default_rng(0)
    gn, gm = args.graph_docs, args.graph_pairs
    ga, gb, gs = rng.integers(0, gn, gm), rng.integers(0, gn, gm), rng.random(gm)
    gp = priority_ranks(gn)
    speed = [
        {
            "step": "cluster_labels + choose_representatives (before)",
            "s": common.best_time(
                lambda: choose_representatives(cluster_labels(gn, ga, gb)), args.repeat
            ),
        },
        {"step": "components", "s": common.best_time(lambda: components(gn, ga, gb, gs, gp))},
        {"step": "keep_aware", "s": common.best_time(lambda: keep_aware(gn, ga, gb, gs, gp))},
    ]
    common.print_table(
        speed,
        [("step", "step", ""), ("s", "seconds", ".3f")],
        f"random graph: {gn} docs, {gm} pairs",
    )
    if args.json:
        common.write_json(args.json, {"corpus": corpus.name, "quality": rows, "speed": speed})


if __name__ == "__main__":
    main()
