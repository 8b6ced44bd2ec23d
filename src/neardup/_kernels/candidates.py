"""Numba kernels: sorted (key, document) codes -> document pairs sharing a key; pair run-lengths."""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import EMPTY, splitmix64

# Slots of the stats array filled by column_pairs (counted once, in its counting pass).
BIG_BUCKETS = 0  # buckets larger than max_bucket
BIG_SLOTS = 1  # sum of their sizes
BIG_PAIRS = 2  # pairs emitted for them
BIG_QUADRATIC = 3  # pairs all-pairs emission would have produced for them
LARGEST = 4  # largest bucket seen (any size)
N_STATS = 5


@njit(cache=True, nogil=True)
def _bucket(
    members: np.ndarray,
    max_bucket: int,
    ident: np.ndarray,
    use_ident: bool,
    out_a: np.ndarray,
    out_b: np.ndarray,
    pos: int,
    fill: bool,
    in_big: np.ndarray,
    stats: np.ndarray,
    collect: bool,
    big_members: np.ndarray,
    big_sizes: np.ndarray,
    big_pos: np.ndarray,
) -> int:
    """Emit the pairs of one bucket (documents ascending, length >= 2); return the new position.

    Up to max_bucket members: all pairs. Above: a chain of consecutive members (in document
    order), or, with identical-group ids, a chain through each id's members only; with
    ``collect`` the members are also listed (big_pos = [slots written, buckets written]).
    """
    size = members.shape[0]
    if not fill and size > stats[LARGEST]:
        stats[LARGEST] = size
    if size <= max_bucket:
        if fill:
            for x in range(size):
                for y in range(x + 1, size):
                    out_a[pos] = members[x]
                    out_b[pos] = members[y]
                    pos += 1
        else:
            pos += size * (size - 1) // 2
        return pos
    if collect:
        if fill:
            big_members[big_pos[0] : big_pos[0] + size] = members
            big_sizes[big_pos[1]] = size
        big_pos[0] += size
        big_pos[1] += 1
    start = pos
    if use_ident:
        ids = ident[members]
        order = np.argsort(ids, kind="mergesort")  # stable: documents stay ascending per id
        for x in range(size - 1):
            if ids[order[x]] == ids[order[x + 1]]:
                if fill:
                    out_a[pos] = members[order[x]]
                    out_b[pos] = members[order[x + 1]]
                pos += 1
    else:
        for x in range(size - 1):
            if fill:
                out_a[pos] = members[x]
                out_b[pos] = members[x + 1]
            pos += 1
    if not fill:
        stats[BIG_BUCKETS] += 1
        stats[BIG_SLOTS] += size
        stats[BIG_PAIRS] += pos - start
        stats[BIG_QUADRATIC] += size * (size - 1) // 2
        for x in range(size):
            in_big[members[x]] = True
    return pos


@njit(cache=True, nogil=True)
def _runs(keys: np.ndarray, sh: np.uint64) -> tuple[np.ndarray, np.ndarray, int]:
    """[lo, hi) of each run of two or more sorted keys with equal ``key >> sh``, and the
    longest run's length (at least 1)."""
    n = keys.shape[0]
    lo = np.empty(n // 2 + 1, dtype=np.int64)
    hi = np.empty(n // 2 + 1, dtype=np.int64)
    m = 0
    longest = 1
    start = 0
    prev = keys[0] >> sh if n else np.uint64(0)
    for i in range(1, n + 1):
        if i < n and (keys[i] >> sh) == prev:
            continue
        if i - start >= 2:
            lo[m] = start
            hi[m] = i
            m += 1
            longest = max(longest, i - start)
        if i < n:
            start = i
            prev = keys[i] >> sh
    return lo[:m].copy(), hi[:m].copy(), longest


@njit(cache=True, nogil=True)
def column_pairs(
    keys: np.ndarray,
    values: np.ndarray,
    shift: int,
    max_bucket: int,
    ident: np.ndarray,
    use_ident: bool,
    in_big: np.ndarray,
    stats: np.ndarray,
    collect: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (a < b) of documents with equal non-EMPTY values in one feature column.

    keys: sorted uint64 codes ``(value >> shift << shift) | doc``, one per document, so runs of
    equal high bits hold candidate buckets with documents ascending. A run whose full values
    (``values[doc]``) differ is a truncation collision: it is split by a stable sort on the full
    value. Two passes: count, allocate, fill. With ``collect``, also the members of buckets
    larger than max_bucket (flat, documents ascending per bucket) and their sizes.
    """
    mask = (np.uint64(1) << np.uint64(shift)) - np.uint64(1)
    sh = np.uint64(shift)
    # The runs of two or more equal high bits, found in one scan (most keys are alone in
    # theirs); only those are visited by the two passes. 0: EMPTY values, 1: one value,
    # 2: several (a truncation collision).
    run_lo, run_hi, longest = _runs(keys, sh)
    kind = np.zeros(run_lo.shape[0], dtype=np.int8)
    for r in range(run_lo.shape[0]):
        v0 = values[np.int64(keys[run_lo[r]] & mask)]
        kind[r] = 1
        for x in range(run_lo[r] + 1, run_hi[r]):
            if values[np.int64(keys[x] & mask)] != v0:
                kind[r] = 2
                break
        if kind[r] == 1 and v0 == EMPTY:
            kind[r] = 0
    docs = np.empty(longest, dtype=np.int64)
    no_values = np.empty(0, dtype=np.uint64)
    out_a = np.empty(0, dtype=np.int64)
    out_b = np.empty(0, dtype=np.int64)
    big_members = np.empty(0, dtype=np.int64)
    big_sizes = np.empty(0, dtype=np.int64)
    for p in range(2):
        fill = p == 1
        pos = 0
        big_pos = np.zeros(2, dtype=np.int64)
        for r in range(run_lo.shape[0]):
            if kind[r] == 0:
                continue
            i, j = run_lo[r], run_hi[r]
            m = j - i
            for x in range(i, j):
                docs[x - i] = np.int64(keys[x] & mask)
            seg = docs[:m]
            svals = no_values
            if kind[r] == 2:  # a truncation collision: split by a stable sort on the full value
                vals = values[seg]
                order = np.argsort(vals, kind="mergesort")
                seg = seg[order]
                svals = vals[order]
            u = 0
            while u < m:  # one bucket per value (the whole run when it holds one value)
                w = m
                if kind[r] == 2:
                    w = u + 1
                    while w < m and svals[w] == svals[u]:
                        w += 1
                if w - u >= 2 and (kind[r] == 1 or svals[u] != EMPTY):
                    pos = _bucket(
                        seg[u:w],
                        max_bucket,
                        ident,
                        use_ident,
                        out_a,
                        out_b,
                        pos,
                        fill,
                        in_big,
                        stats,
                        collect,
                        big_members,
                        big_sizes,
                        big_pos,
                    )
                u = w
        if not fill:
            out_a = np.empty(pos, dtype=np.int64)
            out_b = np.empty(pos, dtype=np.int64)
            big_members = np.empty(big_pos[0], dtype=np.int64)
            big_sizes = np.empty(big_pos[1], dtype=np.int64)
    return out_a, out_b, big_members, big_sizes


@njit(cache=True, nogil=True)
def count_runs(codes: np.ndarray, min_count: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of sorted `codes` that occur at least min_count times, with their counts."""
    n = codes.shape[0]
    out = np.empty(n, dtype=np.int64)
    counts = np.empty(n, dtype=np.int32)
    m = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and codes[j] == codes[i]:
            j += 1
        if j - i >= min_count:
            out[m] = codes[i]
            counts[m] = min(j - i, 2147483647)
            m += 1
        i = j
    return out[:m].copy(), counts[:m].copy()


@njit(cache=True, nogil=True)
def shared_hits(
    rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, docs: np.ndarray, n_docs: int, r: int
) -> tuple[np.ndarray, np.ndarray]:
    """(row, doc) pairs listed at least r times, sorted by row then doc: query posting i (rows
    ascending) lists documents ``docs[lo[i]:hi[i]]`` (numbered 0..n_docs-1). Counts one row's
    documents at a time in one array (its touched entries reset after), so memory follows the
    documents, not the listings, which a boilerplate key multiplies."""
    count = np.zeros(n_docs, dtype=np.int32)
    touched = np.empty(n_docs, dtype=np.int64)
    out_q = np.empty(16, dtype=np.int64)
    out_d = np.empty(16, dtype=np.int64)
    m = 0
    n = rows.shape[0]
    i = 0
    while i < n:
        row = rows[i]
        nt = 0
        j = i
        while j < n and rows[j] == row:
            for h in range(lo[j], hi[j]):
                x = docs[h]
                if count[x] == 0:
                    touched[nt] = x
                    nt += 1
                count[x] += 1
            j += 1
        kept = 0
        for t in range(nt):
            x = touched[t]
            if count[x] >= r:
                touched[kept] = x
                kept += 1
            count[x] = 0
        if kept:
            found = np.sort(touched[:kept])
            if m + kept > out_q.shape[0]:
                size = max(2 * out_q.shape[0], m + kept)
                grown_q = np.empty(size, dtype=np.int64)
                grown_d = np.empty(size, dtype=np.int64)
                grown_q[:m] = out_q[:m]
                grown_d[:m] = out_d[:m]
                out_q, out_d = grown_q, grown_d
            out_q[m : m + kept] = row
            out_d[m : m + kept] = found
            m += kept
        i = j
    return out_q[:m].copy(), out_d[:m].copy()


@njit(cache=True, nogil=True)
def lower_bound_from(ordered: np.ndarray, v: object, lo: int) -> int:
    """The first position of the ascending ``ordered`` not below ``v``, everything before
    ``lo`` being below it: galloping from ``lo`` (1, 2, 4, ... ahead), then halving, so values
    searched in ascending order cost a merge, not a binary search each."""
    m = ordered.shape[0]
    step = 1
    hi = lo
    while hi < m and ordered[hi] < v:
        lo = hi + 1
        hi = lo + step
        step *= 2
    if hi > m:
        hi = m
    while lo < hi:  # the first of ordered[lo:hi] not below v, or hi
        mid = (lo + hi) >> 1
        if ordered[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def find_in_sorted(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """For each value, its position in the ascending ``ordered``, or -1 when absent. Each
    search gallops on from where the previous one ended (back to the start when the values
    descend), so values in ascending stretches, as a store's runs hand them out, cost a merge,
    not a binary search."""
    n = values.shape[0]
    m = ordered.shape[0]
    out = np.full(n, -1, dtype=np.int64)
    if m == 0 or n == 0:
        return out
    lo = 0
    prev = values[0]
    for i in range(n):
        v = values[i]
        if v < prev:
            lo = 0
        prev = v
        lo = lower_bound_from(ordered, v, lo)
        if lo < m and ordered[lo] == v:
            out[i] = lo
    return out


@njit(cache=True, nogil=True)
def matching_positions(wanted: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions in the ascending ``keys`` (repeats allowed) of every key equal to one of
    ``wanted``, wanted by wanted, each one's equal keys in order. Each search gallops on from
    where the previous one ended (back to the start when ``wanted`` descends), so ascending
    ``wanted`` cost a merge, not a binary search each."""
    n = wanted.shape[0]
    m = keys.shape[0]
    lows = np.zeros(n, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    total = 0
    lo = 0
    for i in range(n):
        v = wanted[i]
        if i > 0 and v < wanted[i - 1]:
            lo = 0
        lo = lower_bound_from(keys, v, lo)
        end = lo
        while end < m and keys[end] == v:
            end += 1
        lows[i] = lo
        counts[i] = end - lo
        total += end - lo
    out = np.empty(total, dtype=np.int64)
    k = 0
    for i in range(n):
        for j in range(counts[i]):
            out[k] = lows[i] + j
            k += 1
    return out


@njit(cache=True, nogil=True)
def first_seen_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct, ids): the distinct int64 ``values`` in first-seen order and each value's
    index among them, through an open-addressing table (a slot holds an index into
    ``distinct``, -1 when empty; at most half full) keyed by the value's splitmix64 hash."""
    n = values.shape[0]
    slots = 16
    while slots < 2 * n:
        slots *= 2
    mask = np.uint64(slots - 1)
    table = np.full(slots, -1, dtype=np.int64)
    distinct = np.empty(n, dtype=np.int64)
    ids = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        v = values[i]
        s = splitmix64(np.uint64(v)) & mask
        while True:
            t = table[s]
            if t < 0:
                table[s] = m
                distinct[m] = v
                ids[i] = m
                m += 1
                break
            if distinct[t] == v:
                ids[i] = t
                break
            s = (s + np.uint64(1)) & mask
    return distinct[:m].copy(), ids
