"""Numba kernel: byte ranges of a buffer -> one contiguous buffer (pass 2's kept lines).

Copying the kept runs of a read chunk in one call replaces a Python slice, list append and join
per run (about 110,000 runs at 1M documents). The reference is ``b"".join`` of the slices
(``tests/reference.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def gather_ranges(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, out: np.ndarray) -> int:
    """Copy ``data[starts[i]:ends[i]]`` for each i, in order, to the front of ``out`` (which
    must have room for them all); returns the number of bytes copied."""
    n = 0
    for i in range(starts.shape[0]):
        a = starts[i]
        m = ends[i] - a
        # Views and an index loop: LLVM vectorises it. A slice assignment costs ~0.4 us a
        # range in Numba (its overlap check and generic copy), 8x this on 600-byte lines.
        src = data[a : a + m]
        dst = out[n : n + m]
        for p in range(m):
            dst[p] = src[p]
        n += m
    return n
