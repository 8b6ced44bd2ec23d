"""Numba kernel: rows of (key, document) -> each row's smallest document with the same key.

The cluster backend's graph stage links every document to the smallest holder of each lookup
key it has (a star per key); an open-addressing table over the keys finds those minima in one
pass, where sorting millions of random 64-bit keys took seconds.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import splitmix64


@njit(cache=True, nogil=True)
def key_minimum(keys: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """int64[n]: for row i, the smallest ``docs[j]`` over rows j with ``keys[j] == keys[i]``
    (documents are >= 0)."""
    n = keys.shape[0]
    size = 16
    while size < 2 * n:
        size *= 2
    mask = np.uint64(size - 1)
    # one slot = (key, smallest document) side by side: one cache line per probe; -1 is empty
    table = np.full(2 * size, -1, dtype=np.int64)
    where = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = np.uint64(keys[i])
        s = splitmix64(k) & mask
        while table[2 * s + 1] >= 0 and np.uint64(table[2 * s]) != k:
            s = (s + np.uint64(1)) & mask
        at = 2 * np.int64(s)
        if table[at + 1] < 0:
            table[at] = np.int64(k)
            table[at + 1] = docs[i]
        elif docs[i] < table[at + 1]:
            table[at + 1] = docs[i]
        where[i] = at + 1
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = table[where[i]]
    return out
