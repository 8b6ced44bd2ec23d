"""Kept set + true pairs -> what a removal cost: unjustified removals, residual duplicates.

Against brute-force true pairs (every pair at or above the threshold, e.g. from
``exact_similar_pairs``): an *unjustified removal* is a removed document with no kept document
among its true near-duplicates (unique text lost); a *residual duplicate* is a pair of kept
documents that are still true near-duplicates (a duplicate the removal left in). Keep-aware
removal on perfect pairs has neither; connected components can remove C in A~B, B~C.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from .truth import precision_recall

__all__ = ["removal_summary", "residual_duplicates", "unjustified_removals"]

from .._types import IntArray


def _kept_and_pairs(
    kept: npt.ArrayLike, true_a: npt.ArrayLike, true_b: npt.ArrayLike
) -> tuple[npt.NDArray[np.bool_], IntArray, IntArray]:
    k = np.asarray(kept)
    if k.ndim != 1 or k.dtype != np.bool_:
        raise InputError(f"kept must be a 1-D bool array, got {k.dtype} shape {k.shape}")
    a = np.asarray(true_a, dtype=np.int64).ravel()
    b = np.asarray(true_b, dtype=np.int64).ravel()
    if a.shape != b.shape:
        raise InputError(f"pair arrays differ in length: {a.size} and {b.size}")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= k.size):
        raise InputError(f"true pairs name documents outside 0..{k.size - 1}")
    return k, a, b


def unjustified_removals(
    kept: npt.ArrayLike, true_a: npt.ArrayLike, true_b: npt.ArrayLike
) -> IntArray:
    """Removed documents with no kept document among their true near-duplicates, ascending."""
    k, a, b = _kept_and_pairs(kept, true_a, true_b)
    justified = np.zeros(k.size, dtype=np.bool_)
    justified[a[k[b]]] = True
    justified[b[k[a]]] = True
    return np.flatnonzero(~k & ~justified).astype(np.int64)


def residual_duplicates(
    kept: npt.ArrayLike, true_a: npt.ArrayLike, true_b: npt.ArrayLike
) -> tuple[IntArray, IntArray]:
    """Pairs (a < b, sorted, unique) of kept documents that are still true near-duplicates."""
    k, a, b = _kept_and_pairs(kept, true_a, true_b)
    both = k[a] & k[b] & (a != b)
    lo = np.minimum(a[both], b[both])
    hi = np.maximum(a[both], b[both])
    codes = np.unique(lo * np.int64(max(k.size, 1)) + hi)
    return codes // max(k.size, 1), codes % max(k.size, 1)


def removal_summary(
    kept: npt.ArrayLike,
    found_a: npt.ArrayLike,
    found_b: npt.ArrayLike,
    true_a: npt.ArrayLike,
    true_b: npt.ArrayLike,
) -> dict[str, Any]:
    """Pair precision/recall of the found pairs and what the kept set cost, as one dict.

    Keys: precision, recall, tp, fp, fn (pairs), documents, removed, unjustified_removals,
    justified_removals (removed documents with a kept true near-duplicate), residual_duplicates
    (pairs of kept documents still near-duplicates), residual_documents (kept documents in one).
    """
    k, a, b = _kept_and_pairs(kept, true_a, true_b)
    precision, recall, tp, fp, fn = precision_recall(found_a, found_b, a, b)
    lost = unjustified_removals(k, a, b)
    ra, rb = residual_duplicates(k, a, b)
    removed = int(k.size - k.sum())
    return {
        "precision": precision,
        "recall": recall,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "documents": int(k.size),
        "removed": removed,
        "unjustified_removals": len(lost),
        "justified_removals": removed - len(lost),
        "residual_duplicates": len(ra),
        "residual_documents": len(np.unique(np.concatenate([ra, rb]))),
    }
