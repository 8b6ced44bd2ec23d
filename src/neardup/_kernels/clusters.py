"""Numba kernels: pairs -> component labels by array union-find (root = smallest index), of
document indices or of any 64-bit keys (numbered by a hash table as they come)."""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import splitmix64


@njit(cache=True, inline="always")
def _find(parent: np.ndarray, x: int) -> int:
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


@njit(cache=True, inline="always")
def _numbered(
    value: np.int64, table: np.ndarray, keys: np.ndarray, parent: np.ndarray, m: int
) -> tuple[int, int]:
    """(the number of ``value`` among the keys seen so far, the count after it): an
    open-addressing table (a slot: a key's number, -1 empty; a power of two) by its hash; a new
    key is appended to ``keys`` as its own root."""
    mask = np.uint64(table.shape[0] - 1)
    s = splitmix64(np.uint64(value)) & mask
    while True:
        t = table[s]
        if t < 0:
            table[s] = m
            keys[m] = value
            parent[m] = m
            return m, m + 1
        if keys[t] == value:
            return t, m
        s = (s + np.uint64(1)) & mask


@njit(cache=True, nogil=True)
def keyed_labels(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys, labels): every key of the edges (u[e], v[e]) in first-seen order and the
    smallest key of its connected component, by union-find over the keys' numbers (each found
    in a hash table as it comes, no sort); a union hangs the root with the larger key under
    the other, so every root is its component's smallest key."""
    n = u.shape[0]
    slots = 16
    while slots < 4 * n:  # two keys an edge, a table at most half full
        slots *= 2
    table = np.full(slots, -1, dtype=np.int64)
    keys = np.empty(2 * n, dtype=np.int64)
    parent = np.empty(2 * n, dtype=np.int64)
    m = 0
    for e in range(n):
        x, m = _numbered(u[e], table, keys, parent, m)
        y, m = _numbered(v[e], table, keys, parent, m)
        rx = _find(parent, x)
        ry = _find(parent, y)
        if rx != ry:
            if keys[rx] < keys[ry]:
                parent[ry] = rx
            else:
                parent[rx] = ry
    labels = np.empty(m, dtype=np.int64)
    for i in range(m):
        labels[i] = keys[_find(parent, i)]
    return keys[:m], labels
