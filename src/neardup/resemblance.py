"""Shingle sets -> exact resemblance (Jaccard), containment and Dice, one pair or many at once.

resemblance r(A, B) = |A n B| / |A u B|; containment c(A, B) = |A n B| / |A|;
Dice d(A, B) = 2 |A n B| / (|A| + |B|). Sets are sorted unique uint64 arrays; measures involving an
empty set are 0 (an empty document resembles nothing, not even another empty one).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ._checks import pair_indices
from ._kernels import resemblance as _k
from .errors import ParamError
from .shingles import ShingleBatch

Measure = Literal["jaccard", "containment", "dice"]


def _measure(inter: np.ndarray, size_a: np.ndarray, size_b: np.ndarray, measure: str) -> np.ndarray:
    inter = inter.astype(np.float64)
    if measure == "jaccard":
        denom = (size_a + size_b).astype(np.float64) - inter
    elif measure == "containment":
        denom = size_a.astype(np.float64)
    elif measure == "dice":
        inter = 2 * inter
        denom = (size_a + size_b).astype(np.float64)
    else:
        raise ParamError(f"measure must be 'jaccard', 'containment' or 'dice', got {measure!r}")
    out = np.zeros_like(inter)
    np.divide(inter, denom, out=out, where=denom > 0)
    return out


def _fingerprints(x: object, name: str) -> np.ndarray:
    """x as uint64, refused unless it holds integers from 0 to 2**64 - 1: casting would
    truncate floats, wrap negatives or fail on strings with NumPy's own error."""
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and isinstance(x, list | tuple):
        arr = np.asarray(x, dtype=object)  # [1, 2**64 - 1] would be float64, rounded
    need = f"{name} must hold integer fingerprints from 0 to 2**64 - 1 (uint64)"
    if arr.size and arr.dtype.kind == "O":
        items = arr.ravel().tolist()
        ok = [isinstance(v, int) and not isinstance(v, bool) for v in items]
        if not all(ok):
            bad = items[ok.index(False)]
            raise ParamError(f"{need}, got {type(bad).__name__} {bad!r}")
        if min(items) < 0 or max(items) >= 2**64:
            raise ParamError(f"{need}, got {min(items) if min(items) < 0 else max(items)}")
        return np.ascontiguousarray(np.array(items, dtype=np.uint64).reshape(arr.shape))
    if arr.size and arr.dtype.kind not in "iu":
        raise ParamError(f"{need}, got {arr.dtype} values; pass shingle fingerprints")
    if arr.size and arr.dtype.kind == "i" and arr.min() < 0:
        raise ParamError(f"{need}, got {arr.min()}")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def _sorted_set(x: object, name: str) -> np.ndarray:
    """x as a 1-d uint64 array, refused unless sorted and unique: the kernel merges them as such."""
    x = _fingerprints(x, name)
    if x.ndim != 1:
        raise ParamError(f"{name} must be a 1-d array of fingerprints, got shape {x.shape}")
    if not np.all(x[1:] > x[:-1]):
        raise ParamError(f"{name} must be sorted and unique; pass np.unique({name})")
    return x


def _pair(x: np.ndarray, y: np.ndarray, measure: Measure) -> float:
    """One measure of two fingerprint sets, checked sorted and unique."""
    x, y = _sorted_set(x, "x"), _sorted_set(y, "y")
    inter = np.array([_k.intersection_size(x, y)])
    return float(_measure(inter, np.array([len(x)]), np.array([len(y)]), measure)[0])


def jaccard(x: np.ndarray, y: np.ndarray) -> float:
    """Resemblance |A n B| / |A u B| of two sorted unique fingerprint arrays."""
    return _pair(x, y, "jaccard")


def containment(x: np.ndarray, y: np.ndarray) -> float:
    """Containment of A in B, |A n B| / |A|: how much of x appears in y."""
    return _pair(x, y, "containment")


def dice(x: np.ndarray, y: np.ndarray) -> float:
    """Dice coefficient 2 |A n B| / (|A| + |B|)."""
    return _pair(x, y, "dice")


def pair_scores(
    batch: ShingleBatch, a: np.ndarray, b: np.ndarray, measure: Measure = "jaccard"
) -> np.ndarray:
    """Exact measure for each pair (a[i], b[i]) of documents in ``batch`` -> float64[m]."""
    a, b = pair_indices(a, b, len(batch))
    inter, size_a, size_b = _k.pair_intersections(batch.fps, batch.offsets, a, b)
    return _measure(inter, size_a, size_b, measure)
