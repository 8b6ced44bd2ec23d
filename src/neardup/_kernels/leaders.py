"""Numba kernels: key columns -> bucket records; keep-aware removal against each bucket's kept leaders.

A bucket is a run of equal keys in one column. ``column_records`` lists the members of every
bucket of two or more documents; ``leader_pass`` visits documents in keep priority and compares
each only with the documents already *kept* in its buckets (its "leaders"), never with removed
ones, so a cluster of m near-copies costs m comparisons, not m²/2.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .buffers import grown
from .hashing import EMPTY
from .minhash import bottomk_share, positional_share
from .resemblance import intersection_size

#: Verification kinds ``leader_pass`` understands (see ``neardup.verify``'s kernel forms).
BY_COUNT = 0  # the method's own score and decision from the number of shared keys
SKETCH_POSITIONAL = 1  # share of equal sketch positions (classic, one-permutation)
SKETCH_BOTTOMK = 2  # bottom-k estimate
EXACT_SETS = 3  # Jaccard of the stored shingle sets

#: Indices of ``leader_pass``'s statistics.
CHECKS, EXACT, WANTED, ACCEPTED = 0, 1, 2, 3
N_STATS = 4


@njit(cache=True, nogil=True)
def column_records(
    packed: np.ndarray, col: np.ndarray, shift: int, first_bucket: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """(document, bucket) of every member of a bucket of two or more, and the buckets made.

    packed: sorted ``(key & ~low) | document`` (the document index in the low ``shift`` bits);
    col: the full keys. Runs of equal high bits whose full keys differ are split by full key.
    Buckets are numbered from ``first_bucket`` in key order; members ascend within a bucket.
    EMPTY keys make no bucket.
    """
    n = packed.shape[0]
    low = (np.uint64(1) << np.uint64(shift)) - np.uint64(1)
    docs = np.empty(n, dtype=np.int64)
    buckets = np.empty(n, dtype=np.int64)
    out = 0
    bucket = first_bucket
    i = 0
    while i < n:
        head = packed[i] & ~low
        j = i + 1
        while j < n and (packed[j] & ~low) == head:
            j += 1
        if j - i >= 2:
            first = np.int64(packed[i] & low)
            same = True
            for q in range(i + 1, j):
                if col[np.int64(packed[q] & low)] != col[first]:
                    same = False
                    break
            if same:
                if col[first] != EMPTY:
                    for q in range(i, j):
                        docs[out] = np.int64(packed[q] & low)
                        buckets[out] = bucket
                        out += 1
                    bucket += 1
            else:  # a collision of the high bits: order the run by full key, then document
                members = np.empty(j - i, dtype=np.int64)
                for q in range(i, j):
                    members[q - i] = np.int64(packed[q] & low)
                keys = np.empty(j - i, dtype=np.uint64)
                for q in range(j - i):
                    keys[q] = col[members[q]]
                order = np.argsort(keys, kind="mergesort")  # members ascend: stable keeps them
                s = 0
                while s < j - i:
                    e = s + 1
                    while e < j - i and keys[order[e]] == keys[order[s]]:
                        e += 1
                    if e - s >= 2 and keys[order[s]] != EMPTY:
                        for q in range(s, e):
                            docs[out] = members[order[q]]
                            buckets[out] = bucket
                            out += 1
                        bucket += 1
                    s = e
        i = j
    return docs[:out].copy(), buckets[:out].copy(), bucket - first_bucket


@njit(cache=True, nogil=True)
def count_records(docs: np.ndarray, counts: np.ndarray) -> None:
    """counts[d + 1] += records of document d (the first pass of a counting sort by document)."""
    for e in range(docs.shape[0]):
        counts[docs[e] + 1] += 1


@njit(cache=True, nogil=True)
def place_records(
    docs: np.ndarray, buckets: np.ndarray, first: int, fill: np.ndarray, out: np.ndarray
) -> None:
    """out[fill[d]] = bucket (numbered from ``first``) of each record of document d, in order:
    the second pass of a stable counting sort, one column's records at a time."""
    for e in range(docs.shape[0]):
        d = docs[e]
        out[fill[d]] = buckets[e] + first
        fill[d] += 1


@njit(cache=True, nogil=True)
def distinct_values(rows: np.ndarray) -> np.ndarray:
    """Distinct values in each row of 16-bit sketch values (a one-permutation sketch's filled
    bins: densified bins copy a filled bin's value), int64[n]."""
    n = rows.shape[0]
    out = np.zeros(n, dtype=np.int64)
    if n * rows.shape[1] < 8192:  # a few rows: sorting each beats zeroing a 512 KB table
        for d in range(n):
            r = np.sort(rows[d])
            c = 1 if r.shape[0] else 0
            for j in range(1, r.shape[0]):
                c += r[j] != r[j - 1]
            out[d] = c
        return out
    stamp = np.zeros(65536, dtype=np.int64)
    for d in range(n):
        c = 0
        for j in range(rows.shape[1]):
            v = np.int64(rows[d, j])
            if stamp[v] != d + 1:
                stamp[v] = d + 1
                c += 1
        out[d] = c
    return out


@njit(cache=True, inline="always")
def _push(
    a: np.ndarray, b: np.ndarray, n: int, x: int, y: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """(x, y) appended at n to the growable pair arrays a, b: (a, b, n + 1)."""
    a = grown(a, n + 1)
    b = grown(b, n + 1)
    a[n] = x
    b[n] = y
    return a, b, n + 1


@njit(cache=True, inline="always")
def set_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two ascending sets, as ``resemblance.pair_scores`` computes it."""
    inter = np.float64(intersection_size(a, b))
    denom = np.float64(a.shape[0] + b.shape[0]) - inter
    if denom > 0:
        return inter / denom
    return 0.0


#: How ``check_pair`` scored a pair.
BY_METHOD_OR_SKETCH, BY_EXACT, WANTS_EXACT = 0, 1, 2


@njit(cache=True, inline="always")
def exact_range(check: tuple, d: int, m: int) -> tuple[int, int]:
    """Where document d's pairs lie in ``check``'s sorted exact codes ``d * m + x``: [lo, hi)."""
    codes = check[9]
    if codes.shape[0] == 0:
        return 0, 0
    lo = np.searchsorted(codes, d * np.int64(m))
    return int(lo), int(np.searchsorted(codes, (d + 1) * np.int64(m)))


@njit(cache=True, inline="always")
def check_pair(check: tuple, d: int, x: int, c: int, m: int, lo: int, hi: int) -> tuple[float, int]:
    """(score, how) of pair (d, x) sharing c keys, by the verifier's rule in kernel form.

    check = (kind, threshold, count_score, rows, set_fps, set_off, band_lo, band_hi, size,
    exact_codes, exact_scores, held_fps, held_off, held_row) (``verify.PairCheck.kernel_args``):
    by the method's score from the count, exact Jaccard of stored sets, or a sketch estimate
    from ``rows``. An estimate with ``band_lo[n] <= estimate <= band_hi[n]`` (n = min(size[d],
    size[x])) is replaced by the pair's exact Jaccard, looked up by code ``d * m + x`` in
    ``exact_codes[lo:hi]`` (d's range of the sorted codes, ``exact_range``), or computed here
    when both documents' sets are held (``held_row[d]``: d's set in the CSR ``held_fps``,
    ``held_off``; -1 or an empty ``held_row``: not held); else the estimate stands for now and
    ``how`` says the pair wants an exact score. The codes are pairs whose estimate was in the
    band (they were wanted), so a pair found there is exact without estimating it again.
    """
    kind = check[0]
    if kind == BY_COUNT:
        return check[2][c], BY_METHOD_OR_SKETCH
    if kind == EXACT_SETS:
        fps = check[4]
        off = check[5]
        return set_jaccard(fps[off[d] : off[d + 1]], fps[off[x] : off[x + 1]]), BY_EXACT
    if hi > lo:
        codes = check[9]
        code = d * np.int64(m) + x
        at = lo + np.searchsorted(codes[lo:hi], code)
        if at < hi and codes[at] == code:
            return check[10][at], BY_EXACT
    rows = check[3]
    if kind == SKETCH_POSITIONAL:
        s = positional_share(rows[d], rows[x])
    else:
        s = bottomk_share(rows[d], rows[x])
    size = check[8]
    eff = min(size[d], size[x])
    if check[6][eff] <= s <= check[7][eff]:
        held = check[13]
        if held.shape[0] > 0 and held[d] >= 0 and held[x] >= 0:
            fps = check[11]
            off = check[12]
            a, b = held[d], held[x]
            return set_jaccard(fps[off[a] : off[a + 1]], fps[off[b] : off[b + 1]]), BY_EXACT
        return s, WANTS_EXACT
    return s, BY_METHOD_OR_SKETCH


@njit(cache=True, inline="always")
def _lead(
    d: int,
    offsets: np.ndarray,
    buckets: np.ndarray,
    slots: np.ndarray,
    leaders: np.ndarray,
    pool: np.ndarray,
) -> None:
    """Kept document d made a leader of its buckets with room: appended to each one's slab
    ``pool[slots[b]:slots[b + 1]]``, of which ``leaders[b]`` are filled."""
    for e in range(offsets[d], offsets[d + 1]):
        b = buckets[e]
        if leaders[b] < slots[b + 1] - slots[b]:
            pool[slots[b] + leaders[b]] = d
            leaders[b] += 1


@njit(cache=True, nogil=True)
def leader_pass(
    order: np.ndarray,
    rank: np.ndarray,
    offsets: np.ndarray,
    buckets: np.ndarray,
    slots: np.ndarray,
    min_shared: int,
    count_ok: np.ndarray,
    check: tuple,
    run: np.ndarray,
    fresh: np.ndarray,
    redone: np.ndarray,
    kept: np.ndarray,
    dup: np.ndarray,
    dscore: np.ndarray,
    keep_pairs: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Keep-aware removal of m documents against the kept leaders of their buckets.

    order: the documents (0..m-1) in keep priority; rank[d]: d's position in it (ties between
    equal scores go to the better rank). offsets, buckets: each document's buckets (CSR).
    slots: bucket b's leaders are held in slab ``slots[b]:slots[b + 1]`` of one array, sized
    for the most leaders it may take (its members, at most ``max_leaders``: ``leader_slots``),
    so a document reads each bucket's leaders in one run of memory.
    A document's candidates are the kept documents sharing at least ``min_shared`` of its
    buckets with ``count_ok[count]``; each is scored by ``check_pair`` and accepted when the
    score reaches the threshold (under ``BY_COUNT``, the method's count decides alone). A
    document with an accepted candidate is removed as a duplicate of the best (highest score,
    then better rank); else it is kept and becomes a leader of its buckets. A pair wanting an
    exact score is decided by its estimate for now and returned, so the caller can score it and
    run the pass again.

    Only documents with ``run[d]`` are visited (whole components of the bucket graph, which
    are independent), and of those only the ones whose decision may differ from the one held
    in ``kept``, ``dup`` (duplicate_of, -1 if kept) and ``dscore`` (NaN if kept) are decided
    again: a ``fresh`` document (its scores changed: the first pass, or new exact scores), or
    one with a bucket whose leaders changed earlier in this pass (a document decided again
    changed sides while the bucket had room for leaders). Any other document meets the same
    leaders with the same scores as when it was last decided, so its decision stands; it only
    becomes a leader again if kept. Documents decided are marked in ``redone``. A bucket takes
    as many leaders as its slab holds (the first kept): a boilerplate key shared by thousands
    of distinct documents would otherwise make each compared with all of them. Returns the
    accepted pairs (doc, leader, score) of the documents decided when ``keep_pairs``, the
    wanted pairs (doc, leader), stats[N_STATS].
    """
    m = order.shape[0]
    kind = check[0]
    threshold = check[1]
    n_buckets = slots.shape[0] - 1
    leaders = np.zeros(n_buckets, dtype=np.int64)
    pool = np.empty(slots[n_buckets], dtype=np.int64)
    count = np.zeros(m, dtype=np.int64)
    touched = np.empty(m, dtype=np.int64)
    pa = np.empty(16, dtype=np.int64)
    pb = np.empty(16, dtype=np.int64)
    ps = np.empty(16, dtype=np.float64)
    n_pairs = 0
    wa = np.empty(16, dtype=np.int64)
    wb = np.empty(16, dtype=np.int64)
    n_want = 0
    stats = np.zeros(N_STATS, dtype=np.int64)
    changed = np.zeros(n_buckets, dtype=np.bool_)
    for pos in range(m):
        d = order[pos]
        if not run[d]:
            continue
        again = fresh[d]
        for e in range(offsets[d], offsets[d + 1]):
            again = again or changed[buckets[e]]
        if not again:
            if kept[d]:
                _lead(d, offsets, buckets, slots, leaders, pool)
            continue
        redone[d] = True
        nt = 0
        for e in range(offsets[d], offsets[d + 1]):
            b = buckets[e]
            for i in range(slots[b] + leaders[b] - 1, slots[b] - 1, -1):  # the newest first
                x = pool[i]
                if count[x] == 0:
                    touched[nt] = x
                    nt += 1
                count[x] += 1
        best = -1
        best_s = 0.0
        lo, hi = exact_range(check, d, m)
        for q in range(nt):
            x = touched[q]
            c = count[x]
            count[x] = 0
            if c < min_shared or not count_ok[c]:
                continue
            stats[CHECKS] += 1
            s, how = check_pair(check, d, x, c, m, lo, hi)
            if how == BY_EXACT:
                stats[EXACT] += 1
            elif how == WANTS_EXACT:
                wa, wb, n_want = _push(wa, wb, n_want, d, x)
            if kind != BY_COUNT and s < threshold:
                continue
            stats[ACCEPTED] += 1
            if keep_pairs:
                ps = grown(ps, n_pairs + 1)
                ps[n_pairs] = s
                pa, pb, n_pairs = _push(pa, pb, n_pairs, d, x)
            if best == -1 or s > best_s or (s == best_s and rank[x] < rank[best]):
                best = x
                best_s = s
        if kept[d] != (best == -1):  # d changed sides: later members of its buckets
            for e in range(offsets[d], offsets[d + 1]):  # with room for leaders see it
                b = buckets[e]
                if leaders[b] < slots[b + 1] - slots[b]:
                    changed[b] = True
        if best == -1:
            kept[d] = True
            dup[d] = -1
            dscore[d] = np.nan
            _lead(d, offsets, buckets, slots, leaders, pool)
        else:
            kept[d] = False
            dup[d] = best
            dscore[d] = best_s
    stats[WANTED] = n_want
    return (
        pa[:n_pairs].copy(),
        pb[:n_pairs].copy(),
        ps[:n_pairs].copy(),
        wa[:n_want].copy(),
        wb[:n_want].copy(),
        stats,
    )


@njit(cache=True, nogil=True)
def score_pairs(
    a: np.ndarray, b: np.ndarray, count: np.ndarray, m: int, check: tuple
) -> tuple[np.ndarray, np.ndarray]:
    """``check_pair`` of each pair (a[i], b[i]) sharing count[i] keys: (score, how)."""
    score = np.empty(a.shape[0], dtype=np.float64)
    how = np.empty(a.shape[0], dtype=np.int8)
    for i in range(a.shape[0]):
        lo, hi = exact_range(check, a[i], m)
        s, h = check_pair(check, a[i], b[i], count[i], m, lo, hi)
        score[i] = s
        how[i] = h
    return score, how


@njit(cache=True, nogil=True)
def cross_jaccard(
    a_fps: np.ndarray,
    a_off: np.ndarray,
    a_rows: np.ndarray,
    b_fps: np.ndarray,
    b_off: np.ndarray,
    b_rows: np.ndarray,
) -> np.ndarray:
    """Exact Jaccard of set ``a_rows[i]`` of one CSR with set ``b_rows[i]`` of another."""
    out = np.empty(a_rows.shape[0], dtype=np.float64)
    for i in range(a_rows.shape[0]):
        x = a_rows[i]
        y = b_rows[i]
        out[i] = set_jaccard(a_fps[a_off[x] : a_off[x + 1]], b_fps[b_off[y] : b_off[y + 1]])
    return out


@njit(cache=True, nogil=True)
def bucket_components(offsets: np.ndarray, buckets: np.ndarray, n_buckets: int) -> np.ndarray:
    """Connected components of documents sharing buckets: the smallest document of each
    document's component (documents of different components never meet in ``leader_pass``)."""
    m = offsets.shape[0] - 1
    parent = np.arange(m, dtype=np.int64)
    first = np.full(n_buckets, -1, dtype=np.int64)
    for d in range(m):
        for e in range(offsets[d], offsets[d + 1]):
            b = buckets[e]
            if first[b] < 0:
                first[b] = d
                continue
            x = first[b]
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            y = d
            while parent[y] != y:
                parent[y] = parent[parent[y]]
                y = parent[y]
            if x < y:
                parent[y] = x
            elif y < x:
                parent[x] = y
    for d in range(m):
        x = d
        while parent[x] != x:
            x = parent[x]
        parent[d] = x
    return parent
