"""Numba kernel: sets of token ranks -> every pair with Jaccard >= t (PPJoin: prefix, size and
positional filters; Xiao, Wang, Lin, Yu, "Efficient similarity joins for near duplicate
detection", WWW 2008, after Bayardo, Ma, Srikant, "Scaling up all pairs similarity search")."""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .buffers import grown
from .resemblance import intersection_size

#: Slack on the filters' bounds so a float threshold never rounds a true pair away.
EPS = 1e-9


@njit(cache=True, inline="always")
def _ceil(x: float) -> int:
    """ceil(x - EPS): bounds computed from a float threshold, rounded towards keeping pairs."""
    return int(np.ceil(x - EPS))


@njit(cache=True, nogil=True)
def ppjoin(
    tokens: np.ndarray, offsets: np.ndarray, order: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of records with Jaccard >= threshold, exactly.

    tokens, offsets: records as CSR, each record's tokens ascending (token = rank in a global
    order, rarest first); order: the records by size ascending (ties any way). Records are
    probed in that order against an index of the earlier ones' prefixes: a pair at >= t shares
    a token among x's first |x| - ceil(t|x|) + 1 and y's first |y| - ceil(2t/(1+t)|y|) + 1
    tokens; the size filter (|y| >= t|x|) and the positional filter (the overlap still reachable
    from the positions of a shared token) drop candidates that cannot reach
    alpha = ceil(t/(1+t) (|x| + |y|)); the rest are verified by merging. Returns (a, b, score
    (Jaccard), stats [candidates verified, index entries]) with a < b (record indices).
    """
    n = offsets.shape[0] - 1
    total = offsets[n]
    vocab = 0
    for p in range(total):
        if tokens[p] + 1 > vocab:
            vocab = tokens[p] + 1
    head = np.full(vocab, -1, dtype=np.int64)
    entry_rec = np.empty(max(total, 1), dtype=np.int64)
    entry_pos = np.empty(max(total, 1), dtype=np.int64)
    entry_next = np.empty(max(total, 1), dtype=np.int64)
    entries = 0
    overlap = np.zeros(n, dtype=np.int64)
    touched = np.empty(n, dtype=np.int64)
    out_a = np.empty(16, dtype=np.int64)
    out_b = np.empty(16, dtype=np.int64)
    out_s = np.empty(16, dtype=np.float64)
    found = 0
    verified = 0
    tf = threshold
    for q in range(n):
        x = order[q]
        lx = offsets[x + 1] - offsets[x]
        if lx == 0:
            continue
        xs = tokens[offsets[x] : offsets[x + 1]]
        probe = lx - _ceil(tf * lx) + 1
        min_size = tf * lx - EPS
        nt = 0
        for i in range(min(probe, lx)):
            e = head[xs[i]]
            while e >= 0:
                y = entry_rec[e]
                ly = offsets[y + 1] - offsets[y]
                if ly < min_size:
                    break  # older entries belong to records no larger
                if overlap[y] >= 0:
                    alpha = _ceil(tf / (1.0 + tf) * (lx + ly))
                    bound = 1 + min(lx - i - 1, ly - entry_pos[e] - 1)
                    if overlap[y] == 0:
                        touched[nt] = y
                        nt += 1
                    if overlap[y] + bound >= alpha:
                        overlap[y] += 1
                    else:
                        overlap[y] = -1  # pruned: cannot reach alpha any more
                e = entry_next[e]
        for c in range(nt):
            y = touched[c]
            if overlap[y] > 0:
                verified += 1
                ys = tokens[offsets[y] : offsets[y + 1]]
                inter = np.float64(intersection_size(xs, ys))
                score = inter / (np.float64(lx + ys.shape[0]) - inter)
                if score >= threshold:
                    out_a = grown(out_a, found + 1)
                    out_b = grown(out_b, found + 1)
                    out_s = grown(out_s, found + 1)
                    out_a[found] = min(x, y)
                    out_b[found] = max(x, y)
                    out_s[found] = score
                    found += 1
            overlap[y] = 0
        index = lx - _ceil(2.0 * tf / (1.0 + tf) * lx) + 1
        for i in range(min(index, lx)):
            w = xs[i]
            entry_rec[entries] = x
            entry_pos[entries] = i
            entry_next[entries] = head[w]
            head[w] = entries
            entries += 1
    stats = np.array([verified, entries], dtype=np.int64)
    return out_a[:found].copy(), out_b[:found].copy(), out_s[:found].copy(), stats
