"""Shingle fingerprints of training texts -> benchmark items they contain, exactly.

The benchmark's distinct fingerprints live in an open-addressing table (fingerprint -> row u);
row u's postings list the items holding that shingle, its prefix postings those holding it among
their ``size - need + 1`` rarest (``need[b]``: the smallest count whose containment is at least
C). A text's shingles are looked up one by one; the items of its distinct rows' prefix postings
are its candidates (prefix filtering: no other item can reach ``need``), and each candidate's
rows are looked up in the text's: the count of item b is |S(b) n S(d)|, and the text contains b
when the count reaches ``need[b]``. The matched shingles' token extents, merged where they
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
    pre_offsets: np.ndarray,
    pre_items: np.ndarray,
    item_offsets: np.ndarray,
    item_rows: np.ndarray,
    need: np.ndarray,
    first: int,
    max_pairs: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(doc, item, shared, end): int64 arrays by doc then item, every text d from ``first``
    (shingles ``fps[offsets[d]:offsets[d+1]]``, repeats allowed) and item b with shared >=
    need[b]; texts are looked up whole until ``max_pairs`` pairs are found, ``end`` the text
    after the last one looked up (the number of texts once every one is).

    Item b's rows (ascending) are ``item_rows[item_offsets[b]:item_offsets[b+1]]``; row u's
    prefix postings ``pre_items[pre_offsets[u]:pre_offsets[u+1]]`` list the items holding u
    among their ``size - need + 1`` rarest rows (prefix filtering): a text sharing ``need`` of
    an item's rows shares one of those, so the items a text's rows list there are the only
    candidates, each counted exactly by looking its rows up in the text's. A shingle that most
    items hold (a template's wording) sits in no prefix and costs nothing per text."""
    n = offsets.shape[0] - 1
    longest = 0
    for d in range(first, n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    found = np.empty(longest, dtype=np.int64)
    gathered = np.empty(16, dtype=np.int64)
    cap = 16
    out_doc = np.empty(cap, dtype=np.int64)
    out_item = np.empty(cap, dtype=np.int64)
    out_shared = np.empty(cap, dtype=np.int64)
    m = 0
    for d in range(first, n):
        if m >= max_pairs:
            return out_doc[:m].copy(), out_item[:m].copy(), out_shared[:m].copy(), d
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
            lo = pre_offsets[u]
            hi = pre_offsets[u + 1]
            if g + hi - lo > gathered.shape[0]:
                gathered = _grown(gathered, 2 * (g + hi - lo))
            gathered[g : g + hi - lo] = pre_items[lo:hi]
            g += hi - lo
        candidates = np.unique(gathered[:g])
        for b in candidates:
            shared = 0
            for j in range(item_offsets[b], item_offsets[b + 1]):
                at = np.searchsorted(distinct, item_rows[j])
                if at < distinct.shape[0] and distinct[at] == item_rows[j]:
                    shared += 1
            if shared >= need[b]:
                if m == cap:
                    cap *= 2
                    out_doc = _grown(out_doc, cap)
                    out_item = _grown(out_item, cap)
                    out_shared = _grown(out_shared, cap)
                out_doc[m] = d
                out_item[m] = b
                out_shared[m] = shared
                m += 1
    return out_doc[:m].copy(), out_item[:m].copy(), out_shared[:m].copy(), n


@njit(cache=True, nogil=True)
def prefix_postings(
    post_offsets: np.ndarray, post_items: np.ndarray, sizes: np.ndarray, need: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(item_offsets, item_rows, pre_offsets, pre_items) from the postings (row u's items
    ``post_items[post_offsets[u]:post_offsets[u+1]]``, ascending): each item's rows ascending,
    and each row's items (ascending) among whose ``sizes - need + 1`` rarest rows it is (rarity:
    fewer items, then the lower row)."""
    n_rows = post_offsets.shape[0] - 1
    n_items = sizes.shape[0]
    item_offsets = np.zeros(n_items + 1, dtype=np.int64)
    for b in range(n_items):
        item_offsets[b + 1] = item_offsets[b] + sizes[b]
    item_rows = np.empty(item_offsets[n_items], dtype=np.int64)
    fill = item_offsets[:n_items].copy()
    for u in range(n_rows):  # rows ascending: each item's rows come out ascending
        for j in range(post_offsets[u], post_offsets[u + 1]):
            b = post_items[j]
            item_rows[fill[b]] = u
            fill[b] += 1
    count = np.zeros(n_rows + 1, dtype=np.int64)
    chosen = np.empty(item_rows.shape[0], dtype=np.int64)
    c = 0
    for b in range(n_items):
        lo, hi = item_offsets[b], item_offsets[b + 1]
        k = hi - lo - need[b] + 1 if need[b] <= hi - lo else 0
        if k <= 0:
            continue
        mine = item_rows[lo:hi]
        freq = post_offsets[mine + 1] - post_offsets[mine]
        order = np.argsort(freq * n_rows + mine)  # rarest first, then the lower row
        for i in range(k):
            u = mine[order[i]]
            chosen[c] = u
            c += 1
            count[u + 1] += 1
    pre_offsets = np.cumsum(count)
    pre_items = np.empty(c, dtype=np.int64)
    fill = pre_offsets[:n_rows].copy()
    c = 0
    for b in range(n_items):  # items ascending: each row's items come out ascending
        lo, hi = item_offsets[b], item_offsets[b + 1]
        k = hi - lo - need[b] + 1 if need[b] <= hi - lo else 0
        for _ in range(max(k, 0)):
            u = chosen[c]
            c += 1
            pre_items[fill[u]] = b
            fill[u] += 1
    return item_offsets, item_rows, pre_offsets, pre_items


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
