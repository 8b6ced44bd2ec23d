"""Shingle sets -> every pair with Jaccard >= t, exactly: a set-similarity join (PPJoin).

Tokens (shingle fingerprints) are ranked by global frequency, rarest first, so the prefixes a
pair at >= t must share hold the rarest tokens and few records meet there; size and positional
filters drop candidates that cannot reach the threshold, and the rest are verified by merging
(``_kernels/setjoin.ppjoin``). The work follows the output and the rare-token collisions, not
the number of pairs: it is how every pair inside a bucket of thousands of near-copies is listed
without comparing all of them. Scores are the same float64 Jaccard ``resemblance`` computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._kernels import setjoin as _k
from ._types import FloatArray, IntArray
from .errors import ParamError
from .shingles import ShingleBatch


def frequency_ranks(sets: ShingleBatch) -> IntArray:
    """Each set's tokens as ranks in the global order (rarest first, ties by value), each set's
    ranks ascending; the same CSR offsets as ``sets``."""
    fps = np.asarray(sets.fps, dtype=np.uint64)
    if len(fps) == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inverse, counts = np.unique(fps, return_inverse=True, return_counts=True)
    rank_of = np.empty(len(uniq), dtype=np.int64)
    rank_of[np.lexsort((uniq, counts))] = np.arange(len(uniq), dtype=np.int64)
    ranks = rank_of[inverse.ravel()]
    doc = np.repeat(np.arange(len(sets), dtype=np.int64), np.diff(sets.offsets))
    return ranks[np.lexsort((ranks, doc))]


@dataclass(frozen=True)
class Join:
    """Every pair at or above the threshold (a < b, sorted) and the candidates verified."""

    a: IntArray
    b: IntArray
    score: FloatArray
    verified: int


def similar_pairs(sets: ShingleBatch, threshold: float) -> Join:
    """Every pair of sets whose Jaccard is at or above ``threshold``, exactly."""
    t = float(threshold)
    if not 0.0 < t <= 1.0:
        raise ParamError(f"threshold must be in (0, 1], got {threshold!r}")
    offsets = np.ascontiguousarray(sets.offsets, dtype=np.int64)
    tokens = frequency_ranks(sets)
    order = np.argsort(np.diff(offsets), kind="stable").astype(np.int64)
    a, b, score, stats = _k.ppjoin(tokens, offsets, order, t)
    o = np.lexsort((b, a))
    return Join(a[o], b[o], score[o], int(stats[0]))
