"""Benchmark: all pairs within k bits among n random 64-bit fingerprints, and SimHash throughput.

Run (single thread, about a minute):

    python benchmarks/bench_simhash_search.py \
        --n 1000000 --k 3 --subset 100000

Reports neardup's permuted-table batch search (``hamming_pairs``) against the 1.6 s that
simhash-py publishes for 1,000,000 fingerprints at k=3 on one core, and against the pure-Python
``simhash`` package's ``SimhashIndex`` on the first ``--subset`` fingerprints (it is slow: one
index probe per fingerprint, in the interpreter), checking that both find the same pairs there.
Also times the growable ``HammingIndex`` (build, then queries of unseen fingerprints) and
SimHash fingerprinting throughput in MB/s on the MinHash benchmark's texts (20news when present,
else generated text; ``--corpus``), end to end and for the fingerprint kernel alone (the rest is
shingling).
Times exclude the one-time Numba compilation: every kernel is warmed up on a small input first.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # before numba is imported: one thread

import argparse
import time
from pathlib import Path

import numpy as np

import common
from neardup.hamming import HammingIndex, hamming_pairs, plan_tables

PUBLISHED_SIMHASH_PY_S = 1.6


def make_fingerprints(n: int, k: int, seed: int) -> np.ndarray:
    """n random fingerprints; 1% of them replaced by copies, with 0..k bits flipped, of one of the
    1000 fingerprints before them (so every prefix used as a subset holds planted pairs too)."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    planted = n // 100
    dst = rng.integers(1, max(n, 2), planted)
    src = np.maximum(dst - rng.integers(1, 1001, planted), 0)
    near = fps[src].copy()
    nflip = rng.integers(0, k + 1, planted)
    for j in range(k):
        bit = np.uint64(1) << rng.integers(0, 64, planted).astype(np.uint64)
        near ^= np.where(nflip > j, bit, np.uint64(0))
    fps[dst] = near
    return fps


def best_of(fn, repeats: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    best = float("inf")
    out = None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def simhash_index_pairs(fps: np.ndarray, k: int) -> tuple[float, set[tuple[int, int]]]:
    """All pairs via the `simhash` package: build a SimhashIndex, then probe every fingerprint."""
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)
    t = time.perf_counter()
    objs = [(str(i), Simhash(int(v))) for i, v in enumerate(fps.tolist())]
    index = SimhashIndex(objs, f=64, k=k)
    pairs = set()
    for i, s in objs:
        for j in index.get_near_dups(s):
            a, b = int(i), int(j)
            if a < b:
                pairs.add((a, b))
    return time.perf_counter() - t, pairs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="number of fingerprints")
    ap.add_argument("--k", type=int, default=3, help="maximum Hamming distance")
    ap.add_argument("--subset", type=int, default=100_000, help="size run through SimhashIndex")
    ap.add_argument("--queries", type=int, default=100_000, help="HammingIndex queries")
    ap.add_argument(
        "--corpus",
        type=Path,
        help="JSONL(.gz) for SimHash MB/s [the MinHash benchmark's corpus: 20news when present]",
    )
    ap.add_argument("--docs", type=int, help="limit the documents for SimHash MB/s [all]")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    fps = make_fingerprints(args.n, args.k, args.seed)
    hamming_pairs(fps[:2000], args.k)  # warm-up: compile or load cached kernels
    plan = plan_tables(args.k, args.n)
    print(plan.describe())
    rows: list[tuple[str, str, str]] = []

    secs, (a, _, _) = best_of(lambda: hamming_pairs(fps, args.k, plan), args.repeats)
    rows.append(
        (
            f"neardup hamming_pairs n={args.n:,} k={args.k}",
            f"{secs:.3f} s",
            f"{len(a):,} pairs; {PUBLISHED_SIMHASH_PY_S / secs:.1f}x faster than simhash-py's "
            f"published {PUBLISHED_SIMHASH_PY_S} s",
        )
    )

    sub = fps[: args.subset]
    ours_s, (sa, sb, _) = best_of(lambda: hamming_pairs(sub, args.k), args.repeats)
    theirs_s, theirs = simhash_index_pairs(sub, args.k)
    ours = set(zip(sa.tolist(), sb.tolist(), strict=True))
    same = "same pairs" if ours == theirs else f"DIFFERENT: {len(ours ^ theirs)} pairs differ"
    rows.append((f"neardup hamming_pairs n={len(sub):,}", f"{ours_s:.3f} s", f"{len(sa):,} pairs"))
    rows.append(
        (
            f"simhash.SimhashIndex n={len(sub):,} (build + probe all)",
            f"{theirs_s:.3f} s",
            f"{len(theirs):,} pairs, {same}; neardup {theirs_s / ours_s:.0f}x faster",
        )
    )

    rng = np.random.default_rng(args.seed + 1)
    queries = fps[rng.integers(0, args.n, args.queries)] ^ (
        np.uint64(1) << rng.integers(0, 64, args.queries).astype(np.uint64)
    )
    warm = HammingIndex(args.k)
    warm.add(fps[:5000])
    warm.query_batch(queries[:10])
    warm.add(fps[5000:5010])
    warm.query_batch(queries[:10])
    index = HammingIndex(args.k)
    t = time.perf_counter()
    index.add(fps)
    build_s = time.perf_counter() - t
    assert index.plan_ is not None
    rows.append(
        (
            f"HammingIndex build n={args.n:,} ({index.plan_.num_tables} tables)",
            f"{build_s:.3f} s",
            "",
        )
    )
    qs, (qi, _, _) = best_of(lambda: index.query_batch(queries), args.repeats)
    rows.append(
        (
            f"HammingIndex query {args.queries:,} (1 bit off stored)",
            f"{qs:.3f} s",
            f"{args.queries / qs:,.0f} queries/s, {len(qi):,} hits",
        )
    )

    from neardup.shingles import shingle_sequence
    from neardup.simhash import SimhashParams, simhash, simhash_from_features

    corpus = common.load_corpus(args.corpus, limit=args.docs)
    docs = corpus.texts
    print(f"SimHash throughput corpus: {corpus.name}")
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    for features in ("char", "word", "shingle"):
        params = SimhashParams(features=features)
        simhash(docs[:20], params)
        secs, _ = best_of(lambda p=params: simhash(docs, p), args.repeats)
        rows.append(
            (
                f"simhash end to end, {features} features, {len(docs):,} docs",
                f"{secs:.3f} s",
                f"{mb / secs:.1f} MB/s of text ({mb:.1f} MB)",
            )
        )
        fps, offsets = shingle_sequence(docs, params.shingle_params())
        secs, _ = best_of(lambda f=fps, o=offsets: simhash_from_features(f, o), args.repeats)
        rows.append(
            (
                f"  of which simhash_from_features ({len(fps):,} features)",
                f"{secs:.3f} s",
                f"{mb / secs:.1f} MB/s of text, {secs / max(len(fps), 1) * 1e9:.1f} ns/feature",
            )
        )

    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print()
    print(f"{'what':<{w0}}  {'time':>{w1}}  notes")
    for r in rows:
        print(f"{r[0]:<{w0}}  {r[1]:>{w1}}  {r[2]}")


if __name__ == "__main__":
    main()
