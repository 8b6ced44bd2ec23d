"""Pairs (a, b) -> cluster labels int64[n] (connected components by union-find) and representatives.

A cluster is a connected component of the graph whose vertices are documents 0..n-1 and whose
edges are the given pairs. Its label is its smallest document index, so labels do not depend on
the order or repetition of the pairs, nor on how the work was batched.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from ._kernels import clusters as _k
from ._types import IntArray
from .errors import InputError, ParamError
from .priority import Strategy, priority_ranks


def _as_index_array(name: str, values: npt.ArrayLike, n: int) -> IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a 1-D array of document indices, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{name} must hold integer document indices, got dtype {arr.dtype}")
    out = arr.astype(np.int64, copy=False)
    lo, hi = int(out.min()), int(out.max())
    if lo < 0 or hi >= n:
        raise InputError(f"{name} holds document index {lo if lo < 0 else hi}, outside 0..{n - 1}")
    return np.ascontiguousarray(out)


def cluster_labels(n: int, a: npt.ArrayLike, b: npt.ArrayLike) -> IntArray:
    """Label every document with the smallest index of its connected component: int64[n].

    Array union-find in Numba with path halving; unions hang the larger root under the smaller,
    which makes each root its component's minimum. Documents in no pair are their own cluster.
    Pairs need not be sorted, unique or have a < b.
    """
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 0:
        raise ParamError(f"number of documents n must be a non-negative integer, got {n!r}")
    n = int(n)
    aa = _as_index_array("a", a, n)
    bb = _as_index_array("b", b, n)
    if aa.shape != bb.shape:
        raise InputError(f"pair arrays differ in length: a has {aa.size}, b has {bb.size}")
    return np.asarray(_k.union_find_labels(n, aa, bb), dtype=np.int64)


def cluster_sizes(labels: npt.ArrayLike) -> IntArray:
    """Size of each document's cluster, int64[n] (1 for a document alone)."""
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise InputError(f"labels must be a 1-D array, got shape {lab.shape}")
    if lab.size == 0:
        return np.zeros(0, dtype=np.int64)
    _, inverse, counts = np.unique(lab, return_inverse=True, return_counts=True)
    return counts[inverse.ravel()].astype(np.int64)


def cluster_members(labels: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """Clusters as a CSR layout: (members, offsets).

    Cluster c (in order of label) is ``members[offsets[c]:offsets[c+1]]``, documents ascending.
    """
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise InputError(f"labels must be a 1-D array, got shape {lab.shape}")
    order = np.argsort(lab, kind="stable").astype(np.int64)
    sorted_lab = lab[order]
    starts = np.flatnonzero(np.r_[True, sorted_lab[1:] != sorted_lab[:-1]])[: lab.size]
    offsets = np.append(starts, lab.size).astype(np.int64)
    return order, offsets


def choose_representatives(
    labels: npt.ArrayLike,
    strategy: Strategy = "first",
    *,
    lengths: npt.ArrayLike | None = None,
    key: npt.ArrayLike | None = None,
    prefer: Literal["max", "min"] = "max",
) -> npt.NDArray[np.bool_]:
    """Which document each cluster keeps: bool[n] with exactly one True per cluster.

    strategy:
      "first"   keep the smallest document index (the earliest seen; the cluster label).
      "longest" keep the document with the largest ``lengths`` value (e.g. characters), so the
                most complete copy survives.
      "field"   keep the document whose ``key`` (numbers, strings or datetimes, e.g. a quality
                score or a date) is largest, or smallest with ``prefer="min"`` (e.g. the oldest).
    Ties are always broken by the smallest document index, so the choice is deterministic.
    """
    lab = np.asarray(labels)
    if lab.ndim != 1:
        raise InputError(f"labels must be a 1-D array, got shape {lab.shape}")
    n = lab.size
    rank = priority_ranks(n, strategy, lengths=lengths, key=key, prefer=prefer)
    kept = np.zeros(n, dtype=np.bool_)
    if n == 0:
        return kept
    # Sort by label, then priority (ties already broken by index); keep each label run's first.
    order = np.lexsort((rank, lab))
    sorted_lab = lab[order]
    first = np.r_[True, sorted_lab[1:] != sorted_lab[:-1]]
    kept[order[first]] = True
    return kept
