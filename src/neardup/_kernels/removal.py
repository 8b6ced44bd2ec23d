"""Numba kernels: verified pairs -> keep-aware greedy kept set; big-bucket checks still to make."""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit(cache=True, nogil=True)
def greedy_keep(
    rank: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    score: np.ndarray,
    groups: np.ndarray,
    use_groups: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Visit nodes by ascending rank; keep a node unless a kept node of better rank is its pair.

    rank: int64[n], distinct values below 2n (so the visiting order is a counting scatter).
    With use_groups, every pair end x is first mapped to groups[x]. Each pair is oriented from
    the better to the worse rank and stored as an incoming edge of the worse node (a CSR built
    by counting), so one pass in rank order decides every node: all its incoming neighbours
    were decided before it. A removed node records the kept neighbour with the highest score
    (ties: the better rank) and that score. Returns (kept bool[n], duplicate_of int64[n] (-1 if
    kept), score float64[n] (NaN if kept)). O(n + pairs); self pairs are ignored.
    """
    n = rank.shape[0]
    m = a.shape[0]
    indeg = np.zeros(n + 1, dtype=np.int64)
    worse_of = np.empty(m, dtype=np.int64)  # -1 for self pairs
    better_of = np.empty(m, dtype=np.int64)
    for e in range(m):
        x = groups[a[e]] if use_groups else a[e]
        y = groups[b[e]] if use_groups else b[e]
        if x == y:
            worse_of[e] = -1
            continue
        if rank[x] < rank[y]:
            better_of[e] = x
            worse_of[e] = y
        else:
            better_of[e] = y
            worse_of[e] = x
        indeg[worse_of[e] + 1] += 1
    for i in range(n):
        indeg[i + 1] += indeg[i]
    src = np.empty(indeg[n], dtype=np.int64)
    sc = np.empty(indeg[n], dtype=np.float64)
    fill = indeg[:n].copy()
    for e in range(m):
        w = worse_of[e]
        if w < 0:
            continue
        src[fill[w]] = better_of[e]
        sc[fill[w]] = score[e]
        fill[w] += 1

    slots = np.full(2 * n, -1, dtype=np.int64)
    for v in range(n):
        slots[rank[v]] = v
    kept = np.zeros(n, dtype=np.bool_)
    dup = np.full(n, -1, dtype=np.int64)
    dscore = np.full(n, np.nan, dtype=np.float64)
    for r in range(2 * n):
        v = slots[r]
        if v < 0:
            continue
        best = -1
        best_s = 0.0
        for e in range(indeg[v], indeg[v + 1]):
            u = src[e]
            if kept[u]:
                s = sc[e]
                if best == -1 or s > best_s or (s == best_s and rank[u] < rank[best]):
                    best = u
                    best_s = s
        if best == -1:
            kept[v] = True
        else:
            dup[v] = best
            dscore[v] = best_s
    return kept, dup, dscore


@njit(cache=True, nogil=True)
def _checked(codes: np.ndarray, code: np.int64) -> bool:
    """Whether sorted `codes` holds `code` (binary search)."""
    i = np.searchsorted(codes, code)
    return i < codes.shape[0] and codes[i] == code


@njit(cache=True, nogil=True)
def bucket_checks(
    members: np.ndarray,
    offsets: np.ndarray,
    kept: np.ndarray,
    used: np.ndarray,
    checked: np.ndarray,
    n: int,
    max_checks: int,
    round_limit: int,
) -> tuple[np.ndarray, np.ndarray, np.int64]:
    """Pairs (member, leader) still to verify in big buckets, at most max_checks per slot in all.

    members: each bucket's nodes in priority order (bucket c is members[offsets[c]:offsets[c+1]]).
    A bucket's leaders are its kept members; each kept member is compared with the leaders of
    better priority, best first, skipping pairs already verified (sorted codes lo*n + hi in
    `checked`). used[slot] counts the comparisons a slot has made over all rounds and is updated;
    a slot makes at most round_limit of them in this call. Returns (member, leader, starved): starved counts kept slots whose budget is spent while a
    better kept leader of their bucket was never compared with them.
    """
    out_a = np.empty(0, dtype=np.int64)
    out_b = np.empty(0, dtype=np.int64)
    starved = np.int64(0)
    for p in range(2):
        fill = p == 1
        pos = 0
        starved = np.int64(0)
        for c in range(offsets.shape[0] - 1):
            lo = offsets[c]
            hi = offsets[c + 1]
            leaders = np.empty(hi - lo, dtype=np.int64)
            n_leaders = 0
            for j in range(lo, hi):
                x = members[j]
                if not kept[x]:
                    continue
                budget = max_checks - used[j]
                this_round = round_limit
                for q in range(n_leaders):
                    y = leaders[q]
                    if y == x:
                        continue
                    code = min(x, y) * np.int64(n) + max(x, y)
                    if _checked(checked, code):
                        continue
                    if budget <= 0:
                        starved += 1
                        break
                    if this_round <= 0:
                        break
                    if fill:
                        out_a[pos] = x
                        out_b[pos] = y
                        used[j] += 1
                    pos += 1
                    budget -= 1
                    this_round -= 1
                leaders[n_leaders] = x
                n_leaders += 1
        if not fill:
            out_a = np.empty(pos, dtype=np.int64)
            out_b = np.empty(pos, dtype=np.int64)
    return out_a, out_b, starved
