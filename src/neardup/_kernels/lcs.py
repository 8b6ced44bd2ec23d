"""Two token sequences (int arrays) -> longest common subsequence: its length, bit-parallel
(Hyyrö: 64 cells of the dynamic-programming table per word operation), and one alignment by
Hirschberg's divide and conquer over bit-parallel rows (O(m n / 64) time, O(m + n) memory)."""

from __future__ import annotations

import numpy as np

from ._jit import njit

_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)


@njit(cache=True, nogil=True)
def _dense(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Dense symbol ids of a and b (equal values, equal ids), and b's positions per symbol
    (CSR: symbol s occurs at pos_list[pos_start[s]:pos_start[s+1]], ascending)."""
    both = np.concatenate((a, b))
    order = np.argsort(both, kind="mergesort")
    ids = np.empty(both.shape[0], dtype=np.int64)
    k = -1
    for idx in range(order.shape[0]):
        j = order[idx]
        if idx == 0 or both[j] != both[order[idx - 1]]:
            k += 1
        ids[j] = k
    ia = ids[: a.shape[0]]
    ib = ids[a.shape[0] :]
    pos_start = np.zeros(k + 2, dtype=np.int64)
    for j in range(ib.shape[0]):
        pos_start[ib[j] + 1] += 1
    for s in range(k + 1):
        pos_start[s + 1] += pos_start[s]
    fill = pos_start[:-1].copy()
    pos_list = np.empty(ib.shape[0], dtype=np.int64)
    for j in range(ib.shape[0]):
        pos_list[fill[ib[j]]] = j
        fill[ib[j]] += 1
    return ia, ib, pos_start, pos_list


@njit(cache=True, nogil=True)
def _row(
    sa: np.ndarray,
    first: int,
    stop: int,
    step: int,
    pos_start: np.ndarray,
    pos_list: np.ndarray,
    blo: int,
    bhi: int,
    backward: bool,
) -> np.ndarray:
    """LCS row of a[first], a[first+step], ... (until stop) against b[blo:bhi] (reversed when
    ``backward``), bit-parallel (Hyyrö 2004): bit j of V is 0 where the row steps up at j, so
    row[j] = number of zero bits among V's first j. V' = (V + (V & M)) | (V & ~M), M = the bits
    where b holds the row's symbol."""
    n = bhi - blo
    words = (n + 63) >> 6
    v = np.full(words, _ONES, dtype=np.uint64)
    m = np.zeros(words, dtype=np.uint64)
    i = first
    while i != stop:
        s = sa[i]
        lo = pos_start[s]
        hi = pos_start[s + 1]
        lo += np.searchsorted(pos_list[lo:hi], blo)
        hi = pos_start[s] + np.searchsorted(pos_list[pos_start[s] : hi], bhi)
        if lo < hi:
            for k in range(lo, hi):
                bit = (bhi - 1 - pos_list[k]) if backward else (pos_list[k] - blo)
                m[bit >> 6] |= _ONE << np.uint64(bit & 63)
            carry = _ZERO
            for w in range(words):
                x = v[w]
                u = x & m[w]
                t = x + u
                total = t + carry
                carry = _ONE if (t < x or total < t) else _ZERO
                v[w] = total | (x & ~m[w])
            for k in range(lo, hi):
                bit = (bhi - 1 - pos_list[k]) if backward else (pos_list[k] - blo)
                m[bit >> 6] = _ZERO
        i += step
    row = np.zeros(n + 1, dtype=np.int64)
    count = 0
    for j in range(n):
        if ((v[j >> 6] >> np.uint64(j & 63)) & _ONE) == _ZERO:
            count += 1
        row[j + 1] = count
    return row


@njit(cache=True, nogil=True)
def lcs_length(a: np.ndarray, b: np.ndarray) -> int:
    """Length of a longest common subsequence of a and b (O(len(a) len(b) / 64) time)."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        return 0
    sa, _, pos_start, pos_list = _dense(a, b)
    row = _row(sa, 0, a.shape[0], 1, pos_start, pos_list, 0, b.shape[0], False)
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
    sa, _, pos_start, pos_list = _dense(a, b)
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
        fwd = _row(sa, alo_, mid, 1, pos_start, pos_list, blo_, bhi_, False)
        bwd = _row(sa, ahi_ - 1, mid - 1, -1, pos_start, pos_list, blo_, bhi_, True)
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
