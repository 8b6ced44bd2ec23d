"""Estimator accuracy: MinHash estimates vs exact resemblance on document pairs spanning J in 0..1.

    python benchmarks/bench_estimators.py                 # 20news when present, else synthetic
    python benchmarks/bench_estimators.py --pairs 4000 --t 128 --json benchmarks/results/est.json

Pairs are (document, edited copy) at word edit rates from 0 to 0.6 (``neardup.testing.synth.edit``), so exact
Jaccard of the word 5-shingle sets spans the whole range. For each sketch kind the table shows,
per resemblance bin: pairs, mean error (bias), its standard error, the empirical standard
deviation of the error, and the theory sqrt(J(1-J)/t) averaged over the bin's pairs. A bias
within ~2-3 standard errors of 0 and an empirical/theory ratio near 1 is what unbiased MinHash
should show (bottom-k and one-permutation hashing of small sets sample without replacement and
come out slightly below 1).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import common

common.limit_threads(common.threads_from_argv(sys.argv))
common.ensure_neardup()

import numpy as np  # noqa: E402

from neardup.minhash import estimate_pairs, sketch  # noqa: E402
from neardup.params import ShingleParams, SketchParams  # noqa: E402
from neardup.resemblance import pair_scores  # noqa: E402
from neardup.shingles import shingle_batch  # noqa: E402
from neardup.testing.synth import edit_batch  # noqa: E402

BINS = np.linspace(0.0, 1.0, 11)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, help="JSONL(.gz) with a text field")
    ap.add_argument("--pairs", type=int, default=3000, help="document pairs [3000]")
    ap.add_argument("--t", type=int, default=128, help="sketch length [128]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()

    corpus = common.load_corpus(args.corpus, limit=None, synthetic_docs=args.pairs)
    rng = np.random.default_rng(args.seed)
    # Documents with at least 100 words, so sets are much larger than nothing and edits matter.
    pool = [t for t in corpus.texts if len(t.split()) >= 100]
    base = [pool[i] for i in rng.choice(len(pool), size=args.pairs, replace=len(pool) < args.pairs)]
    rates = 0.6 * rng.uniform(0.0, 1.0, size=args.pairs) ** 2  # J falls fast with edits: skew low
    edited = edit_batch(base, rates, seed=args.seed)
    texts = [t for pair in zip(base, edited, strict=True) for t in pair]
    batch = shingle_batch(texts, ShingleParams())
    a = np.arange(0, 2 * args.pairs, 2)
    b = a + 1
    exact = pair_scores(batch, a, b, "jaccard")
    print(f"corpus: {corpus.name}; {args.pairs} pairs; t = {args.t}; word 5-shingles")
    results = {}
    for kind in ("oph", "classic", "bottomk"):
        sk = sketch(batch.fps, batch.offsets, SketchParams(kind=kind, t=args.t, seed=args.seed))  # type: ignore[arg-type]
        est = estimate_pairs(sk, a, b, kind)  # type: ignore[arg-type]
        err = est - exact
        theory = np.sqrt(exact * (1 - exact) / args.t)
        rows = []
        for lo, hi in itertools.pairwise(BINS):
            sel = (exact >= lo) & ((exact < hi) | (hi == 1.0))
            m = int(sel.sum())
            if m < 5:
                continue
            e = err[sel]
            sd_theory = float(np.sqrt(np.mean(theory[sel] ** 2)))
            rows.append(
                {
                    "bin": f"{lo:.1f}-{hi:.1f}",
                    "pairs": m,
                    "bias": float(e.mean()),
                    "bias_se": float(e.std(ddof=1) / np.sqrt(m)),
                    "sd": float(e.std(ddof=1)),
                    "theory": sd_theory,
                    "ratio": float(e.std(ddof=1) / sd_theory) if sd_theory > 0 else float("nan"),
                }
            )
        overall = {
            "bias": float(err.mean()),
            "rmse": float(np.sqrt(np.mean(err**2))),
            "theory_rms": float(np.sqrt(np.mean(theory**2))),
        }
        results[kind] = {"bins": rows, "overall": overall}
        common.print_table(
            rows,
            [
                ("bin", "J bin", ""),
                ("pairs", "pairs", "d"),
                ("bias", "mean error", "+.4f"),
                ("bias_se", "+-se", ".4f"),
                ("sd", "sd(error)", ".4f"),
                ("theory", "sqrt(J(1-J)/t)", ".4f"),
                ("ratio", "sd/theory", ".2f"),
            ],
            title=f"{kind}: overall bias {overall['bias']:+.4f}, RMSE {overall['rmse']:.4f} "
            f"(theory {overall['theory_rms']:.4f})",
        )
    if args.json:
        common.write_json(args.json, {"corpus": corpus.name, "t": args.t, "results": results})


if __name__ == "__main__":
    main()
