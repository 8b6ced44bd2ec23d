"""Two token sequences (int arrays) -> longest common subsequence: its length in linear memory,
and one alignment by Hirschberg's divide and conquer (O(m n) time, O(m + n) memory)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _forward(a: np.ndarray, alo: int, ahi: int, b: np.ndarray, blo: int, bhi: int) -> np.ndarray:
    """row[j] = LCS length of a[alo:ahi] and b[blo:blo+j], j = 0..bhi-blo."""
    n = bhi - blo
    prev = np.zeros(n + 1, dtype=np.int64)
    cur = np.zeros(n + 1, dtype=np.int64)
    for i in range(alo, ahi):
        ai = a[i]
        cur[0] = 0
        for j in range(n):
            if ai == b[blo + j]:
                cur[j + 1] = prev[j] + 1
            elif prev[j + 1] >= cur[j]:
                cur[j + 1] = prev[j + 1]
            else:
                cur[j + 1] = cur[j]
        prev, cur = cur, prev
    return prev


@njit(cache=True, nogil=True)
def _backward(a: np.ndarray, alo: int, ahi: int, b: np.ndarray, blo: int, bhi: int) -> np.ndarray:
    """row[j] = LCS length of a[alo:ahi] and b[bhi-j:bhi], j = 0..bhi-blo."""
    n = bhi - blo
    prev = np.zeros(n + 1, dtype=np.int64)
    cur = np.zeros(n + 1, dtype=np.int64)
    for i in range(ahi - 1, alo - 1, -1):
        ai = a[i]
        cur[0] = 0
        for j in range(n):
            if ai == b[bhi - 1 - j]:
                cur[j + 1] = prev[j] + 1
            elif prev[j + 1] >= cur[j]:
                cur[j + 1] = prev[j + 1]
            else:
                cur[j + 1] = cur[j]
        prev, cur = cur, prev
    return prev


@njit(cache=True, nogil=True)
def lcs_length(a: np.ndarray, b: np.ndarray) -> int:
    """Length of a longest common subsequence of a and b (O(len(a) len(b)) time)."""
    if a.shape[0] < b.shape[0]:
        a, b = b, a
    row = _forward(a, 0, a.shape[0], b, 0, b.shape[0])
    return int(row[b.shape[0]])


@njit(cache=True, nogil=True)
def lcs_alignment(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ia, ib): increasing positions with a[ia[k]] == b[ib[k]], as many as the LCS length.

    Common prefix and suffix are matched first (near-duplicates cost little); the middle is
    split at a's midpoint where forward and backward LCS rows sum to the maximum (Hirschberg).
    """
    m = a.shape[0]
    n = b.shape[0]
    cap = min(m, n)
    ia = np.empty(cap, dtype=np.int64)
    ib = np.empty(cap, dtype=np.int64)
    count = 0
    lo = 0
    while lo < cap and a[lo] == b[lo]:
        ia[count] = lo
        ib[count] = lo
        count += 1
        lo += 1
    ahi = m
    bhi = n
    while ahi > lo and bhi > lo and a[ahi - 1] == b[bhi - 1]:
        ahi -= 1
        bhi -= 1
        ia[count] = ahi
        ib[count] = bhi
        count += 1
    stack = np.empty((2 * (m + 2), 4), dtype=np.int64)
    top = 0
    stack[0, 0] = lo
    stack[0, 1] = ahi
    stack[0, 2] = lo
    stack[0, 3] = bhi
    top = 1
    while top > 0:
        top -= 1
        alo_ = stack[top, 0]
        ahi_ = stack[top, 1]
        blo_ = stack[top, 2]
        bhi_ = stack[top, 3]
        if alo_ >= ahi_ or blo_ >= bhi_:
            continue
        if ahi_ - alo_ == 1:
            for j in range(blo_, bhi_):
                if b[j] == a[alo_]:
                    ia[count] = alo_
                    ib[count] = j
                    count += 1
                    break
            continue
        mid = (alo_ + ahi_) // 2
        fwd = _forward(a, alo_, mid, b, blo_, bhi_)
        bwd = _backward(a, mid, ahi_, b, blo_, bhi_)
        width = bhi_ - blo_
        best = -1
        split = 0
        for j in range(width + 1):
            v = fwd[j] + bwd[width - j]
            if v > best:
                best = v
                split = j
        stack[top, 0] = alo_
        stack[top, 1] = mid
        stack[top, 2] = blo_
        stack[top, 3] = blo_ + split
        stack[top + 1, 0] = mid
        stack[top + 1, 1] = ahi_
        stack[top + 1, 2] = blo_ + split
        stack[top + 1, 3] = bhi_
        top += 2
    order = np.argsort(ia[:count], kind="mergesort")
    return ia[:count][order], ib[:count][order]
