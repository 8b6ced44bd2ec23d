"""Shingle fingerprints of training texts -> benchmark items they contain, exactly.

The benchmark's distinct fingerprints live in an open-addressing table (fingerprint -> row u);
row u's postings list the items holding that shingle. A text's shingles are looked up one by
one, each distinct row found counted once for every item of its postings: the count of item b
is |S(b) n S(d)|, and the text contains b when the count reaches ``need[b]`` (the smallest
count whose containment is at least C). The matched shingles' token extents, merged where they
overlap or touch, give the character spans of the matched text.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import fmix64


@njit(cache=True, nogil=True)
def build_table(fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys uint64[P], rows int64[P]) for distinct ``fps``: row of fps[u] is u; -1 empty."""
    size = 16
    while size < 2 * fps.shape[0]:
        size *= 2
    keys = np.zeros(size, dtype=np.uint64)
    rows = np.full(size, -1, dtype=np.int64)
    mask = np.uint64(size - 1)
    for u in range(fps.shape[0]):
        i = fmix64(fps[u]) & mask
        while rows[i] >= 0:
            i = (i + np.uint64(1)) & mask
        keys[i] = fps[u]
        rows[i] = u
    return keys, rows


@njit(cache=True, inline="always")
def _row(fp: np.uint64, keys: np.ndarray, rows: np.ndarray) -> int:
    """The table row of ``fp``, -1 when the benchmark has no such shingle."""
    mask = np.uint64(keys.shape[0] - 1)
    i = fmix64(fp) & mask
    while rows[i] >= 0:
        if keys[i] == fp:
            return rows[i]
        i = (i + np.uint64(1)) & mask
    return -1


@njit(cache=True, nogil=True)
def contained_counts(
    fps: np.ndarray,
    offsets: np.ndarray,
    keys: np.ndarray,
    rows: np.ndarray,
    post_offsets: np.ndarray,
    post_items: np.ndarray,
    need: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(doc, item, shared) int64 arrays, by doc then item: every text d (shingles
    ``fps[offsets[d]:offsets[d+1]]``, repeats allowed) and item b with shared >= need[b].

    Per text, the rows of its shingles found in the table are sorted and made distinct, their
    postings gathered and sorted, and each item's run counted: work in proportion to the
    shingles found, no array the size of the benchmark."""
    n = offsets.shape[0] - 1
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    found = np.empty(longest, dtype=np.int64)
    gathered = np.empty(16, dtype=np.int64)
    cap = 16
    out_doc = np.empty(cap, dtype=np.int64)
    out_item = np.empty(cap, dtype=np.int64)
    out_shared = np.empty(cap, dtype=np.int64)
    m = 0
    for d in range(n):
        t = 0
        for p in range(offsets[d], offsets[d + 1]):
            u = _row(fps[p], keys, rows)
            if u >= 0:
                found[t] = u
                t += 1
        if t == 0:
            continue
        distinct = np.unique(found[:t])
        g = 0
        for u in distinct:
            lo = post_offsets[u]
            hi = post_offsets[u + 1]
            if g + hi - lo > gathered.shape[0]:
                gathered = _grown(gathered, 2 * (g + hi - lo))
            gathered[g : g + hi - lo] = post_items[lo:hi]
            g += hi - lo
        items = np.sort(gathered[:g])
        run = 0
        for i in range(g):
            run += 1
            if i + 1 < g and items[i + 1] == items[i]:
                continue
            b = items[i]
            if run >= need[b]:
                if m == cap:
                    cap *= 2
                    out_doc = _grown(out_doc, cap)
                    out_item = _grown(out_item, cap)
                    out_shared = _grown(out_shared, cap)
                out_doc[m] = d
                out_item[m] = b
                out_shared[m] = run
                m += 1
            run = 0
    return out_doc[:m].copy(), out_item[:m].copy(), out_shared[:m].copy()


@njit(cache=True, inline="always")
def _grown(a: np.ndarray, cap: int) -> np.ndarray:
    out = np.empty(cap, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True, inline="always")
def _put_span(
    starts: np.ndarray, ends: np.ndarray, k: int, start: int, end: int
) -> tuple[np.ndarray, np.ndarray]:
    """``starts``/``ends`` with span k set to [start, end), both doubled first when full."""
    if k == starts.shape[0]:
        starts = _grown(starts, 2 * k)
        ends = _grown(ends, 2 * k)
    starts[k] = start
    ends[k] = end
    return starts, ends


@njit(cache=True, nogil=True)
def matched_spans(
    fps: np.ndarray,
    offsets: np.ndarray,
    doc: np.ndarray,
    item: np.ndarray,
    keys: np.ndarray,
    rows: np.ndarray,
    post_offsets: np.ndarray,
    post_items: np.ndarray,
    w: int,
    tok_row: np.ndarray,
    tok_starts: np.ndarray,
    tok_ends: np.ndarray,
    tok_offsets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(span offsets int64[m+1], starts, ends): the character spans of match i (text doc[i],
    item item[i]; matches sorted by text, then item) are ``starts[k]:ends[k]`` for k in its
    offsets: the extents of the text's shingles that item holds (w tokens each; all tokens of
    a text shorter than w), merged where they overlap or touch. Text doc[i]'s tokens are row
    tok_row[i] of the token spans.

    Each text is read once for all its matches: every shingle found in the table is listed
    under each matched item of its postings, so a text holding many items (a page quoting a
    whole benchmark) costs what counting them cost, not one pass per item."""
    m = doc.shape[0]
    span_offsets = np.zeros(m + 1, dtype=np.int64)
    starts = np.empty(16, dtype=np.int64)
    ends = np.empty(16, dtype=np.int64)
    which = np.empty(16, dtype=np.int64)  # (match within the text, shingle position) found
    where = np.empty(16, dtype=np.int64)
    k = 0
    i0 = 0
    while i0 < m:
        d = doc[i0]
        i1 = i0
        while i1 < m and doc[i1] == d:
            i1 += 1
        wanted = item[i0:i1]  # sorted
        first = tok_offsets[tok_row[i0]]
        ntok = tok_offsets[tok_row[i0] + 1] - first
        f = 0
        for p in range(offsets[d], offsets[d + 1]):
            u = _row(fps[p], keys, rows)
            if u < 0:
                continue
            for j in range(post_offsets[u], post_offsets[u + 1]):
                at = np.searchsorted(wanted, post_items[j])
                if at < wanted.shape[0] and wanted[at] == post_items[j]:
                    if f == which.shape[0]:
                        which = _grown(which, 2 * f)
                        where = _grown(where, 2 * f)
                    which[f] = at
                    where[f] = p - offsets[d]
                    f += 1
        order = np.argsort(which[:f], kind="mergesort")  # by match, positions ascending
        r = 0
        for at in range(i1 - i0):
            span_offsets[i0 + at] = k
            lo = -1  # token range [lo, hi) being grown
            hi = -1
            while r < f and which[order[r]] == at:
                a = where[order[r]]
                r += 1
                e = min(a + w, ntok)
                if lo >= 0 and a <= hi:
                    hi = max(hi, e)
                    continue
                if lo >= 0:
                    starts, ends = _put_span(
                        starts, ends, k, tok_starts[first + lo], tok_ends[first + hi - 1]
                    )
                    k += 1
                lo = a
                hi = e
            if lo >= 0:
                starts, ends = _put_span(
                    starts, ends, k, tok_starts[first + lo], tok_ends[first + hi - 1]
                )
                k += 1
        i0 = i1
    span_offsets[m] = k
    return span_offsets, starts[:k].copy(), ends[:k].copy()
