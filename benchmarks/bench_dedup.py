"""neardup dedup: accuracy against brute-force Jaccard, and speed against datasketch and rensa LSH.

Run from the repository root (with the bench extras: ``pip install -e '.[bench]'``):

    python benchmarks/bench_dedup.py                     # all corpora, about 8 minutes
    python benchmarks/bench_dedup.py --json benchmarks/results/dedup.json
    python benchmarks/bench_dedup.py --near-docs 4000 --pypi-docs 0 --no-peers   # quick look

Single thread (``--threads 1`` caps Numba, BLAS and rensa's Rayon pool before they load).

Corpora (each falls back to generated text when /work/shared/data is absent):

- **near-dup**: ``--near-docs`` documents built by ``neardup.testing.synth.near_duplicate_corpus`` from
  20 Newsgroups messages: 70% distinct originals, 30% copies (exact, cosmetic, or word-edited at
  rates 0.01-0.45, so resemblances to the original span 0-1).
- **20news**: the raw 20 Newsgroups corpus (its real near-duplicates: reposts, quoted replies).
- **pypi**: ``--pypi-docs`` package summaries sampled at random, short texts, character
  5-grams (``ShingleParams(w=5, tokens="char")``); accuracy only.

Ground truth: every pair whose exact Jaccard over the same shingle sets is >= t, by brute force
(``neardup.testing.truth.exact_similar_pairs``). neardup's pairs are ``Deduplicator.all_pairs()``
(exact-duplicate groups expanded to every member x member pair). Precision and recall are
pair-level.

Accuracy tables: MinHash with exact, hybrid (the default) and sketch verification at t in
``--thresholds``, and SimHash (``SimhashMethodParams``, Hamming distance k = 1..6) scored
against the same Jaccard truth at each t, side by side, so one can see where each method fits.

Removal table (t in ``--removal-thresholds``, keep first): neardup with hybrid and exact
verification under keep-aware removal (the default) and connected components, rensa's pairs
(LSH, estimate >= t) + connected components (what a peer pipeline does), and keep-aware removal
on the brute-force pairs themselves (the oracle). Columns: removed documents, true duplicates
removed (a kept document resembles them at >= t), unjustified removals (no kept document at
>= t: unique text lost), residual duplicates (pairs of kept documents at >= t), and the share of
documents whose kept/removed status equals the oracle's. Nonzero unjustified or residual counts
of a keep-aware run are explained (``testing.measures``; candidates listed by a ``verify="none"``
run with the same features).

Speed table (near-dup and 20news corpora, threshold ``--peer-threshold``): end-to-end seconds
on the same raw texts for neardup (library ``Deduplicator.fit`` and the ``neardup dedup`` CLI on
the same data as JSONL, process start-up included), datasketch ``MinHash.bulk`` +
``MinHashLSH`` and rensa ``RMinHash.from_token_sets`` + ``RMinHashLSH``. Peers are fed the word
5-shingles a user writes in Python (lowercase, ``\\w+`` runs, 5 words joined by a space) and
that time counts; each inserts every document, queries every document, keeps candidate pairs
whose sketch estimate is >= t (vectorised NumPy) and clusters by connected components. Peak
memory is the growth of resident memory during the run; bytes/doc divides it by the documents.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common

# Cap the native thread pools before NumPy, Numba or the peers load; hence the late imports.
common.limit_threads(common.threads_from_argv(sys.argv, default=1))
common.ensure_neardup()

import numpy as np  # noqa: E402  (after limit_threads)
import numpy.typing as npt  # noqa: E402

from neardup.engine import Deduplicator  # noqa: E402
from neardup.params import (  # noqa: E402
    DedupParams,
    MinhashParams,
    ShingleParams,
    SimhashMethodParams,
)
from neardup.planner import features_for  # noqa: E402
from neardup.removal import keep_aware, priority_ranks  # noqa: E402
from neardup.resemblance import pair_scores  # noqa: E402
from neardup.shingles import shingle_batch  # noqa: E402
from neardup.testing.measures import (  # noqa: E402
    removal_summary,
    residual_duplicates,
    unjustified_removals,
)
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402
from neardup.testing.truth import exact_similar_pairs, precision_recall  # noqa: E402

PYPI = Path("/work/shared/data/pypi_summaries/docs.jsonl.gz")
THRESHOLDS = (0.5, 0.7, 0.8, 0.9)
REMOVAL_THRESHOLDS = (0.5, 0.8, 0.9)
SIMHASH_K = (1, 2, 3, 4, 5, 6)
NUM_PERM = 128
_WORD = re.compile(r"\w+")

#: The clock of every timing: "cpu" (process CPU time, all threads; default) or "wall".
#: Single-threaded CPU time equals wall time on an idle machine and is not inflated when other
#: processes share the cores; set by ``--clock`` in main().
CLOCK = ["cpu"]


def clock() -> float:
    """Seconds on the chosen clock (see ``CLOCK``)."""
    return common.CLOCKS[CLOCK[0]]()


IntArray = npt.NDArray[np.int64]
Pairs = tuple[IntArray, IntArray]


# ---------------------------------------------------------------- truth


class Truth:
    """Brute-force similar pairs at the lowest threshold, filtered per threshold on demand."""

    def __init__(self, texts: Sequence[str], sp: ShingleParams, lowest: float) -> None:
        t0 = clock()
        self.batch = shingle_batch(texts, sp)
        self.a, self.b, self.score = exact_similar_pairs(
            self.batch.fps, self.batch.offsets, threshold=lowest
        )
        self.seconds = clock() - t0

    def at(self, t: float) -> Pairs:
        keep = self.score >= t
        return self.a[keep], self.b[keep]

    def count(self, t: float) -> int:
        return int((self.score >= t).sum())

    def errors_near(
        self, found: Pairs, t: float, margin: float = 0.05
    ) -> tuple[int, int, int, int]:
        """(false negatives, of them with J < t + margin, false positives, with J >= t - margin).

        Shows whether misses are the sketch estimate's unavoidable error near the threshold
        (standard deviation sqrt(J(1-J)/t_sketch)) or something else.
        """
        width = len(self.batch)
        true_a, true_b = self.at(t)
        true_keys = true_a * width + true_b
        found_keys = found[0] * width + found[1]
        fn = ~np.isin(true_keys, found_keys)
        fn_j = self.score[self.score >= t][fn]
        fp = ~np.isin(found_keys, true_keys)
        fp_j = pair_scores(self.batch, found[0][fp], found[1][fp], "jaccard")
        return (
            int(fn.sum()),
            int((fn_j < t + margin).sum()),
            int(fp.sum()),
            int((fp_j >= t - margin).sum()),
        )


def score(found: Pairs, truth: Pairs) -> tuple[float, float]:
    p, r, _, _, _ = precision_recall(found[0], found[1], truth[0], truth[1])
    return p, r


# ---------------------------------------------------------------- corpora


def load_corpora(args: argparse.Namespace) -> list[tuple[str, list[str], ShingleParams, bool]]:
    """(name, texts, shingle params, run peers?) for every corpus of the run."""
    base_path = common.default_corpus()
    word = ShingleParams()
    out: list[tuple[str, list[str], ShingleParams, bool]] = []
    if base_path is not None:
        base = list(common.iter_texts(base_path))
        base_name = "20news"
    else:
        base = common.synthetic_texts(max(args.near_docs, 2000))
        base_name = "synthetic"
    if args.near_docs:
        missing = args.near_docs - round(0.3 * args.near_docs) - len(base)
        near_base = base
        if missing > 0:  # more originals needed than base texts: generated ones fill the gap
            near_base = base + random_documents(missing, args.seed)
        corpus = near_duplicate_corpus(near_base, args.near_docs, 0.3, seed=args.seed)
        out.append((f"near-dup ({base_name} + edits)", corpus.texts, word, True))
    if args.raw_docs:
        out.append((f"{base_name} raw", base[: args.raw_docs], word, True))
    if args.pypi_docs:
        if PYPI.exists():
            texts = list(common.iter_texts(PYPI))
            texts = random.Random(args.seed).sample(texts, min(args.pypi_docs, len(texts)))
            out.append(("pypi summaries (char 5-grams)", texts, ShingleParams(5, "char"), False))
        else:
            print(f"{PYPI} absent: pypi corpus skipped")
    return out


# ---------------------------------------------------------------- neardup


def run_neardup(texts: Sequence[str], params: DedupParams) -> tuple[Deduplicator, float, float]:
    """(fitted Deduplicator, seconds, peak RSS growth MB) of one end-to-end fit."""
    common.release_memory()
    with common.PeakRSS() as mem:
        t0 = clock()
        d = Deduplicator(params).fit(texts)
        seconds = clock() - t0
    return d, seconds, mem.growth_mb


def found_pairs(d: Deduplicator, texts: Sequence[str]) -> Pairs:
    """Every document pair neardup accepts, exact-duplicate groups expanded (``all_pairs``):
    from ``d`` when it listed every pair, else from a fit of the same parameters that does
    (keep-aware removal alone compares documents with kept ones only)."""
    every = d if d.pairs == "all" else Deduplicator(d.params, pairs="all").fit(texts)
    a, b, _ = every.all_pairs()
    return a, b


def first_per_component(labels: IntArray) -> npt.NDArray[np.bool_]:
    """Connected components, keep the first document of each: what a peer pipeline does."""
    _, first = np.unique(labels, return_index=True)
    kept = np.zeros(len(labels), dtype=np.bool_)
    kept[first] = True
    return kept


def removal_row(
    method: str,
    t: float,
    kept: npt.NDArray[np.bool_],
    found: Pairs,
    truth: Truth,
    oracle: npt.NDArray[np.bool_] | None = None,
) -> dict[str, Any]:
    """Pair precision/recall and what the kept set cost, against the brute-force pairs at t."""
    ta, tb = truth.at(t)
    s = removal_summary(kept, found[0], found[1], ta, tb)
    return {
        "method": method,
        "t": t,
        "precision": s["precision"],
        "recall": s["recall"],
        "removed": s["removed"],
        "justified": s["justified_removals"],
        "unjustified": s["unjustified_removals"],
        "residual": s["residual_duplicates"],
        "agree": None if oracle is None else 100.0 * float(np.mean(kept == oracle)),
    }


def explain(
    d: Deduplicator, texts: Sequence[str], truth: Truth, t: float
) -> tuple[str, dict[str, int]]:
    """Why a keep-aware run has unjustified removals or residual duplicates, if it has any.

    Unjustified removals come from accepted pairs below t (the removed document's kept target
    has J < t). Residual duplicates are true pairs of kept documents that neardup did not accept:
    either no candidate (the features missed them: a second run with ``verify="none"`` and the
    same features lists every candidate) or a candidate rejected by the verification.
    """
    kept = d.kept_
    ta, tb = truth.at(t)
    lost = unjustified_removals(kept, ta, tb)
    ra, rb = residual_duplicates(kept, ta, tb)
    counts = {"fp_targets": 0, "not_candidates": 0, "rejected": 0, "starved": 0}
    if not len(lost) and not len(ra):
        return "", counts
    notes = []
    if len(lost):
        target = d.duplicate_of_[lost]
        j = pair_scores(truth.batch, lost, target, "jaccard")
        counts["fp_targets"] = int((j < t).sum())
        notes.append(
            f"{len(lost)} unjustified: kept target at J {j.min():.3f}-{j.max():.3f} "
            f"({counts['fp_targets']} below t: accepted false positives)"
        )
    if len(ra):
        p = d.params
        m = p.method
        assert isinstance(m, MinhashParams)  # explained for MinHash runs only
        cand_params = DedupParams(
            threshold=t,
            shingle=p.shingle,
            method=MinhashParams(features=features_for(p), sketch=m.sketch),
            verify="none",
            removal="components",
            seed=p.seed,
        )
        ca, cb = found_pairs(Deduplicator(cand_params, pairs="all").fit(texts), texts)
        width = np.int64(len(texts))
        is_cand = np.isin(ra * width + rb, ca * width + cb)
        counts["rejected"] = int(is_cand.sum())
        counts["not_candidates"] = int((~is_cand).sum())
        counts["starved"] = d.stats_.bucket_unresolved
        j = truth.score[np.isin(truth.a * width + truth.b, ra * width + rb)]
        notes.append(
            f"{len(ra)} residual (J {j.min():.3f}-{j.max():.3f}): "
            f"{counts['not_candidates']} never candidates, {counts['rejected']} candidates "
            f"rejected by verification; {counts['starved']} big-bucket members unresolved"
        )
    return "; ".join(notes), counts


def accuracy(
    name: str, texts: list[str], sp: ShingleParams, args: argparse.Namespace
) -> dict[str, Any]:
    """MinHash (exact/hybrid/sketch verification) and SimHash rows against brute-force truth,
    and what each removal policy costs (neardup keep-aware and components, peers)."""
    thresholds = args.thresholds
    truth = Truth(texts, sp, min(thresholds + args.removal_thresholds))
    n = len(texts)
    long_rows: list[dict[str, Any]] = []
    wide: list[dict[str, Any]] = []
    removal_rows: list[dict[str, Any]] = []
    oracles: dict[float, npt.NDArray[np.bool_]] = {}
    for verify in ("exact", "hybrid", "sketch"):
        w: dict[str, Any] = {"method": f"minhash verify={verify}"}
        for t in sorted(set(thresholds) | set(args.removal_thresholds)):
            d, sec, mem = run_neardup(texts, DedupParams(threshold=t, verify=verify, shingle=sp))
            found = found_pairs(d, texts)
            if t in args.removal_thresholds and verify in ("exact", "hybrid"):
                if t not in oracles:  # keep-aware removal on the brute-force pairs
                    keep = truth.score >= t
                    oracles[t] = keep_aware(
                        n,
                        truth.a[keep],
                        truth.b[keep],
                        truth.score[keep],
                        priority_ranks(n),
                        groups=d.groups_,
                    ).kept
                    removal_rows.append(
                        removal_row(
                            "keep-aware on exact pairs (oracle)", t, oracles[t], truth.at(t), truth
                        )
                    )
                row = removal_row(
                    f"neardup {verify} keep-aware", t, d.kept_, found, truth, oracles[t]
                )
                row["note"], row["why"] = explain(d, texts, truth, t)
                removal_rows.append(row)
                dc, _, _ = run_neardup(
                    texts, DedupParams(threshold=t, verify=verify, shingle=sp, removal="components")
                )
                removal_rows.append(
                    removal_row(
                        f"neardup {verify} components", t, dc.kept_, found_pairs(dc, texts), truth
                    )
                )
            if t not in thresholds:
                continue
            p, r = score(found, truth.at(t))
            fn, fn_near, fp, fp_near = truth.errors_near(found, t)
            f = features_for(d.params)
            long_rows.append(
                {
                    "method": f"minhash {verify}",
                    "t": t,
                    "features": f"{f.k},{f.s},{f.r}",
                    "true": truth.count(t),
                    "candidates": d.stats_.candidate_pairs,
                    "found": len(found[0]),
                    "precision": p,
                    "recall": r,
                    "fn": f"{fn} ({fn_near})",
                    "fp": f"{fp} ({fp_near})",
                    "seconds": sec,
                    "mem_mb": mem,
                }
            )
            w[f"p{t}"], w[f"r{t}"] = p, r
            if t == 0.8 or "seconds" not in w:
                w["seconds"] = sec
        wide.append(w)
    if not args.no_peers:
        removal_rows += peer_removal(texts, sp, truth, args.removal_thresholds)
    for feats in args.simhash_features:
        for k in SIMHASH_K:
            params = DedupParams(
                method=SimhashMethodParams(max_distance=k, features=feats), shingle=sp
            )
            d, sec, mem = run_neardup(texts, params)
            found = found_pairs(d, texts)
            label = f"simhash {feats} k={k}"
            w = {"method": label, "seconds": sec, "found": len(found[0])}
            for t in thresholds:
                w[f"p{t}"], w[f"r{t}"] = score(found, truth.at(t))
            wide.append(w)
    cols = [("method", "method", ""), ("t", "t", ".1f"), ("features", "k,s,r", "")]
    cols += [("true", "true pairs", ","), ("candidates", "candidates", ",")]
    cols += [("found", "found", ","), ("precision", "precision", ".4f")]
    cols += [("recall", "recall", ".4f"), ("fn", "FN (J<t+.05)", ""), ("fp", "FP (J>=t-.05)", "")]
    cols += [("seconds", "s", ".2f"), ("mem_mb", "peak MB", ".0f")]
    mb = common.utf8_mb(texts)
    title = f"[{name}] {len(texts):,} docs, {mb:.1f} MB; brute-force truth {truth.seconds:.1f} s"
    common.print_table(long_rows, cols, title)
    wcols = [("method", "method", "")]
    for t in thresholds:
        wcols += [(f"p{t}", f"P@{t}", ".3f"), (f"r{t}", f"R@{t}", ".3f")]
    wcols.append(("seconds", "s", ".2f"))
    common.print_table(wide, wcols, f"[{name}] side by side: pair precision P / recall R at t")
    removal_rows.sort(key=lambda r: r["t"])
    rcols = [("t", "t", ".1f"), ("method", "removal", ""), ("precision", "P", ".4f")]
    rcols += [
        ("recall", "R", ".4f"),
        ("removed", "removed", ","),
        ("justified", "true dups removed", ","),
    ]
    rcols += [("unjustified", "unjustified", ","), ("residual", "residual pairs", ",")]
    rcols += [("agree", "% = oracle", ".3f"), ("note", "why (if not 0)", "")]
    common.print_table(
        removal_rows,
        rcols,
        f"[{name}] removal against brute-force pairs (keep first): unjustified = removed with no "
        "kept document at >= t; residual = pairs of kept documents at >= t; % = oracle = "
        "documents whose kept/removed status equals keep-aware removal on the exact pairs",
    )
    return {
        "corpus": name,
        "docs": len(texts),
        "mb": mb,
        "truth_seconds": truth.seconds,
        "true_pairs": {str(t): truth.count(t) for t in thresholds + args.removal_thresholds},
        "minhash": long_rows,
        "side_by_side": wide,
        "removal": removal_rows,
    }


# ---------------------------------------------------------------- peers


def py_shingles(text: str, w: int = 5) -> set[str]:
    """What a datasketch/rensa user writes: lowercase, ``\\w+`` runs, w words joined by spaces."""
    words = _WORD.findall(text.lower())
    if len(words) < w:
        return {" ".join(words)} if words else set()
    return set(map(" ".join, zip(*(words[i:] for i in range(w)), strict=False)))


def candidates_to_pairs(lists: Sequence[Sequence[int]], ids: IntArray) -> Pairs:
    """Query results (list of candidate keys per queried document) -> unique (a < b) pairs."""
    lens = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    flat = np.fromiter((k for c in lists for k in c), dtype=np.int64, count=int(lens.sum()))
    q = np.repeat(ids, lens)
    c = ids[flat]
    keep = q < c
    width = int(ids.max()) + 1 if len(ids) else 1
    keys = np.unique(q[keep] * width + c[keep])
    return keys // width, keys % width


def verify_and_cluster(
    n: int, pairs: Pairs, sketches: npt.NDArray[Any], threshold: float
) -> tuple[Pairs, IntArray]:
    """Keep candidate pairs whose estimated Jaccard >= threshold; connected components."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    a, b = pairs
    est = np.empty(len(a))
    for lo in range(0, len(a), 100_000):  # bounded temporaries
        hi = lo + 100_000
        est[lo:hi] = (sketches[a[lo:hi]] == sketches[b[lo:hi]]).mean(axis=1)
    ok = est >= threshold
    a, b = a[ok], b[ok]
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return (a, b), labels.astype(np.int64)


def py_char_grams(text: str, q: int = 5) -> set[str]:
    """Character q-grams a peer user writes: lowercase word characters joined, every q-window."""
    chars = "".join(_WORD.findall(text.lower()))
    if len(chars) < q:
        return {chars} if chars else set()
    return {chars[i : i + q] for i in range(len(chars) - q + 1)}


def rensa_bands(t: float) -> int:
    """Bands a rensa user picks for threshold t: the S-curve (1/b)^(1/r) well below t."""
    return NUM_PERM // 4 if t < 0.7 else 16


def peer_removal(
    texts: Sequence[str], sp: ShingleParams, truth: Truth, thresholds: Sequence[float]
) -> list[dict[str, Any]]:
    """rensa pairs (LSH, estimate >= t) + connected components keeping the first, at each t."""
    import rensa

    grams = py_char_grams if sp.tokens == "char" else py_shingles
    sets = [grams(t, sp.w) for t in texts]
    ids = np.flatnonzero([bool(s) for s in sets]).astype(np.int64)
    mhs = rensa.RMinHash.from_token_sets([sets[i] for i in ids], NUM_PERM, 42)
    sk = np.full((len(texts), NUM_PERM), -1, dtype=np.int64)
    sk[ids] = np.array([m.digest() for m in mhs], dtype=np.uint32)
    rows = []
    for t in thresholds:
        nb = rensa_bands(t)
        lsh = rensa.RMinHashLSH(t, NUM_PERM, nb)
        lsh.insert_many(mhs)
        cand = candidates_to_pairs(lsh.query_all(mhs), ids)
        pairs, labels = verify_and_cluster(len(texts), cand, sk, t)
        kept = first_per_component(labels)
        rows.append(
            removal_row(f"rensa b={nb},r={NUM_PERM // nb} + components", t, kept, pairs, truth)
        )
    return rows


def peer_datasketch(
    texts: Sequence[str], threshold: float, bands: Sequence[tuple[int, int] | None]
) -> list[dict[str, Any]]:
    """datasketch MinHash.bulk + MinHashLSH for each banding (None = datasketch's own choice)."""
    from datasketch import MinHash, MinHashLSH

    rows = []
    common.release_memory()
    with common.PeakRSS() as mem:
        t0 = clock()
        sets = [{s.encode("utf-8") for s in py_shingles(t)} for t in texts]
        ids = np.flatnonzero([bool(s) for s in sets]).astype(np.int64)
        t1 = clock()
        mhs = MinHash.bulk([sets[i] for i in ids], num_perm=NUM_PERM)
        sk = np.full((len(texts), NUM_PERM), -1, dtype=np.int64)
        sk[ids] = np.array([m.hashvalues for m in mhs], dtype=np.int64)
        t2 = clock()
        base = {"shingle_s": t1 - t0, "sketch_s": t2 - t1}
        for params in bands:
            t3 = clock()
            lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM, params=params)
            with lsh.insertion_session() as session:
                for key, m in enumerate(mhs):
                    session.insert(key, m, check_duplication=False)
            cand = candidates_to_pairs([lsh.query(m) for m in mhs], ids)
            pairs, labels = verify_and_cluster(len(texts), cand, sk, threshold)
            t4 = clock()
            b, r = lsh.b, lsh.r
            del lsh
            rows.append(
                {
                    "method": f"datasketch b={b},r={r}" + (" (default)" if params is None else ""),
                    "seconds": base["shingle_s"] + base["sketch_s"] + t4 - t3,
                    **base,
                    "candidates": len(cand[0]),
                    "pairs": pairs,
                    "labels": labels,
                    "kept_bytes": NUM_PERM * 8,
                }
            )
    for row in rows:
        row["mem_mb"] = mem.growth_mb
    return rows


def peer_rensa(
    texts: Sequence[str], threshold: float, bands: Sequence[int]
) -> list[dict[str, Any]]:
    """rensa RMinHash.from_token_sets + RMinHashLSH (insert_many, query_all) per band count."""
    import rensa

    rows = []
    common.release_memory()
    with common.PeakRSS() as mem:
        t0 = clock()
        sets = [py_shingles(t) for t in texts]
        ids = np.flatnonzero([bool(s) for s in sets]).astype(np.int64)
        t1 = clock()
        mhs = rensa.RMinHash.from_token_sets([sets[i] for i in ids], NUM_PERM, 42)
        sk = np.full((len(texts), NUM_PERM), -1, dtype=np.int64)
        sk[ids] = np.array([m.digest() for m in mhs], dtype=np.uint32)
        t2 = clock()
        base = {"shingle_s": t1 - t0, "sketch_s": t2 - t1}
        for nb in bands:
            t3 = clock()
            lsh = rensa.RMinHashLSH(threshold, NUM_PERM, nb)
            lsh.insert_many(mhs)
            cand = candidates_to_pairs(lsh.query_all(mhs), ids)
            pairs, labels = verify_and_cluster(len(texts), cand, sk, threshold)
            t4 = clock()
            del lsh
            rows.append(
                {
                    "method": f"rensa b={nb},r={NUM_PERM // nb}",
                    "seconds": base["shingle_s"] + base["sketch_s"] + t4 - t3,
                    **base,
                    "candidates": len(cand[0]),
                    "pairs": pairs,
                    "labels": labels,
                    "kept_bytes": NUM_PERM * 4,
                }
            )
    for row in rows:
        row["mem_mb"] = mem.growth_mb
    return rows


def run_cli(texts: Sequence[str], threshold: float, workdir: Path) -> dict[str, Any]:
    """``neardup dedup in.jsonl -o out.jsonl`` in a child process: wall time and its peak RSS."""
    src = workdir / "in.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": str(i), "text": t}, ensure_ascii=False) + "\n")
    summary = workdir / "summary.json"
    cmd = [sys.executable, "-m", "neardup.cli", "dedup", str(src), "-o", str(workdir / "out.jsonl")]
    cmd += ["--threshold", str(threshold), "--summary-json", str(summary), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(common.REPO / "src")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    cpu = usage.ru_utime + usage.ru_stime
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"neardup dedup failed with exit code {proc.returncode}: {' '.join(cmd)}")
    s = json.loads(summary.read_text())
    return {
        "seconds": cpu if CLOCK[0] == "cpu" else wall,
        "wall_s": wall,
        "cpu_s": cpu,
        "inner_s": s["seconds"],
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "file_mb": src.stat().st_size / 1e6,
        "kept": s["kept"],
    }


def speed(
    name: str, texts: list[str], args: argparse.Namespace, workdir: Path
) -> list[dict[str, Any]]:
    """End-to-end speed, accuracy and memory of neardup and the peers at one threshold."""
    t = args.peer_threshold
    sp = ShingleParams()
    truth_pairs = Truth(texts, sp, t)
    truth = truth_pairs.at(t)
    mb = common.utf8_mb(texts)
    n = len(texts)
    rows: list[dict[str, Any]] = []

    def add(
        method: str,
        seconds: float,
        pairs: Pairs,
        kept: npt.NDArray[np.bool_],
        mem_mb: float | None,
        **extra: Any,
    ) -> None:
        p, r = score(pairs, truth)
        lost = removal_row(method, t, kept, pairs, truth_pairs)
        rows.append(
            {
                "method": method,
                "seconds": seconds,
                "docs_per_s": n / seconds,
                "mbps": mb / seconds,
                "precision": p,
                "recall": r,
                "mem_mb": mem_mb,
                "mem_per_doc": mem_mb * 1e6 / n if mem_mb is not None else None,
                "unjustified": lost["unjustified"],
                "residual": lost["residual"],
                **extra,
            }
        )

    for verify in ("hybrid", "sketch", "exact"):
        params = DedupParams(threshold=t, verify=verify)
        best: tuple[Deduplicator, float, float] | None = None
        for _ in range(args.repeat):
            run = run_neardup(texts, params)
            if best is None or run[1] < best[1]:
                best = run
        assert best is not None  # repeat >= 1 (checked in main)
        d, sec, mem = best
        label = f"neardup verify={verify}" + (" (default)" if verify == "hybrid" else "")
        kept_bytes = d.stats_.bytes_per_doc_in_memory
        add(label, sec, found_pairs(d, texts), d.kept_, mem, kept_bytes=kept_bytes)
    if not args.no_cli:
        cli = run_cli(texts, t, workdir)
        rows.append(
            {
                "method": "neardup CLI (defaults: hybrid, keep-aware)",
                "seconds": cli["seconds"],
                "docs_per_s": n / cli["seconds"],
                "mbps": mb / cli["seconds"],
                "mem_mb": cli["peak_rss_mb"],
                "mem_per_doc": None,
                "note": f"whole process (start-up included), peak RSS; wall {cli['wall_s']:.1f} s, "
                f"{cli['inner_s']:.2f} s wall in cmd_dedup",
            }
        )
    if not args.no_peers:
        for peer in peer_datasketch(texts, t, [None, (NUM_PERM // 4, 4)]) + peer_rensa(
            texts, t, [16, NUM_PERM // 4]
        ):
            note = f"shingle {peer['shingle_s']:.1f} s, sketch {peer['sketch_s']:.1f} s"
            note += f", {peer['candidates']:,} candidates"
            add(
                peer["method"],
                peer["seconds"],
                peer["pairs"],
                first_per_component(peer["labels"]),
                peer["mem_mb"],
                kept_bytes=peer["kept_bytes"],
                note=note,
            )
    ref = rows[0]["seconds"]
    for row in rows:
        row["speedup"] = row["seconds"] / ref
    cols = [("method", "method", ""), ("seconds", "s", ".2f"), ("docs_per_s", "docs/s", ",.0f")]
    cols += [("mbps", "MB/s", ".2f"), ("precision", "precision", ".4f")]
    cols += [("recall", "recall", ".4f"), ("unjustified", "unjustified", ",")]
    cols += [("residual", "residual", ","), ("mem_mb", "peak MB", ".0f")]
    cols += [("mem_per_doc", "peak B/doc", ",.0f"), ("kept_bytes", "kept B/doc", ",.0f")]
    cols += [("speedup", "neardup x", ".1f"), ("note", "note", "")]
    title = f"[{name}] speed at t={t}, single thread, {CLOCK[0]} seconds: {n:,} docs, {mb:.1f} MB, "
    title += f"{len(truth[0]):,} true pairs ('neardup x' = its time / neardup's default)"
    common.print_table(rows, cols, title)
    for row in rows:
        row["corpus"] = name
    return rows


# ---------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--threads", type=int, default=1, help="native threads (read before imports)")
    p.add_argument("--near-docs", type=int, default=15000, help="near-dup corpus size (0: skip)")
    p.add_argument("--raw-docs", type=int, default=None, help="raw 20news docs [all] (0: skip)")
    p.add_argument("--pypi-docs", type=int, default=10000, help="pypi summaries sample (0: skip)")
    p.add_argument(
        "--thresholds", type=lambda s: tuple(float(x) for x in s.split(",")), default=THRESHOLDS
    )
    p.add_argument(
        "--simhash-features",
        type=lambda s: tuple(s.split(",")),
        default=("shingle", "char"),
        help="SimHash feature kinds to score: shingle (the same w-shingles as MinHash), char "
        "(q-grams, the engine's default), word [shingle,char]",
    )
    p.add_argument(
        "--removal-thresholds",
        type=lambda s: tuple(float(x) for x in s.split(",")),
        default=REMOVAL_THRESHOLDS,
        help="thresholds of the removal table (hybrid and exact, both policies, rensa) "
        "[0.5,0.8,0.9]",
    )
    p.add_argument("--peer-threshold", type=float, default=0.8, help="threshold of speed runs")
    p.add_argument("--no-peers", action="store_true", help="skip datasketch and rensa")
    p.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess run")
    p.add_argument("--no-accuracy", action="store_true", help="skip the accuracy tables")
    p.add_argument("--repeat", type=int, default=2, help="neardup runs per speed row (best kept)")
    p.add_argument(
        "--clock", choices=sorted(common.CLOCKS), default="cpu", help="timing clock [cpu]"
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=Path, help="write all results as JSON here")
    args = p.parse_args(argv)
    if args.raw_docs is None:
        args.raw_docs = 10**9
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    CLOCK[0] = args.clock
    started = time.perf_counter()
    print("machine:", common.machine())
    warm = common.synthetic_texts(300)  # compile / load every Numba kernel before timing
    for params in (
        DedupParams(verify="sketch"),
        DedupParams(verify="exact"),
        DedupParams(verify="hybrid"),
        DedupParams(removal="components"),
        DedupParams(method=SimhashMethodParams()),
    ):
        Deduplicator(params).fit(warm)
    results: dict[str, Any] = {"machine": common.machine(), "accuracy": [], "speed": []}
    corpora = load_corpora(args)
    with tempfile.TemporaryDirectory(prefix="neardup_bench_") as tmp:
        for name, texts, sp, peers in corpora:
            if not args.no_accuracy:
                results["accuracy"].append(accuracy(name, texts, sp, args))
            if peers:
                rows = speed(name, texts, args, Path(tmp))
                results["speed"] += [
                    {k: v for k, v in r.items() if k not in ("pairs", "labels")} for r in rows
                ]
    total = time.perf_counter() - started
    print(f"\ntotal benchmark time {total:.0f} s; peak RSS {_self_peak_mb():.0f} MB")
    if args.json:
        common.write_json(args.json, results)
    return 0


def _self_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    sys.exit(main())
