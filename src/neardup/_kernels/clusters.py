"""Numba kernels: pairs -> component labels by array union-find (root = smallest index)."""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit(cache=True, inline="always")
def _find(parent: np.ndarray, x: np.int64) -> np.int64:
    """Root of x, halving the path on the way (each visited node skips to its grandparent)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@njit(cache=True)
def union_find_labels(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """labels[i] = smallest document index in i's connected component of the graph (a, b).

    Union always hangs the larger root under the smaller one, so every root is its component's
    minimum and parent[i] <= i holds throughout; one forward pass then resolves every label.
    """
    parent = np.arange(n, dtype=np.int64)
    for e in range(a.shape[0]):
        ra = _find(parent, a[e])
        rb = _find(parent, b[e])
        if ra < rb:
            parent[rb] = ra
        elif rb < ra:
            parent[ra] = rb
    labels = np.empty(n, dtype=np.int64)
    for i in range(n):
        p = parent[i]
        labels[i] = i if p == i else labels[p]
    return labels
