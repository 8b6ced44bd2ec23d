"""Shingle fingerprints -> MinHash sketches: one-permutation (densified), classic, bottom-k.

Every kernel first re-hashes a fingerprint with a seeded bijection, g = fmix64(fp xor seed), so
sketches depend on the seed and not on how fingerprints were made (mix or Rabin).
- classic: value i is min over the set of (a_i * g + b_i) mod 2**64, a_i odd (t hash functions).
- oph: bin = top bits of g mapped to [0, t); value = min g in the bin; empty bins are filled by
  optimal densification (Shrivastava 2017): bin j borrows from the first non-empty bin in a
  seeded probe sequence that depends only on (j, attempt), so equal sets densify equally.
- bottomk: the t smallest distinct g, ascending, padded with EMPTY.
Rows of documents without shingles are all EMPTY.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import EMPTY, bucket_u64, fmix64, splitmix64


@njit(cache=True, nogil=True)
def classic_coefficients(seed: np.uint64, t: int) -> tuple[np.ndarray, np.ndarray]:
    """(a odd, b) for t hash functions, derived from the seed by SplitMix64."""
    a = np.empty(t, dtype=np.uint64)
    b = np.empty(t, dtype=np.uint64)
    for i in range(t):
        a[i] = splitmix64(seed + np.uint64(2 * i + 1)) | np.uint64(1)
        b[i] = splitmix64(seed + np.uint64(2 * i + 2))
    return a, b


@njit(cache=True, nogil=True)
def sketch_classic(
    fps: np.ndarray, offsets: np.ndarray, seed: np.uint64, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    n = offsets.shape[0] - 1
    t = a.shape[0]
    out = np.full((n, t), EMPTY, dtype=np.uint64)
    mins = np.empty(t, dtype=np.uint64)
    for d in range(n):
        if offsets[d + 1] == offsets[d]:
            continue
        mins[:] = EMPTY
        for p in range(offsets[d], offsets[d + 1]):
            g = fmix64(fps[p] ^ seed)
            for i in range(t):
                v = a[i] * g + b[i]
                if v < mins[i]:
                    mins[i] = v
        out[d, :] = mins
    return out


#: Probes per bin kept in the densification table; later probes are computed on the fly.
PROBES = 32


@njit(cache=True, inline="always")
def probe_bin(seed: np.uint64, j: np.uint64, attempt: int, t: int) -> np.uint64:
    """The bin that empty bin j copies from at its attempt-th probe (optimal densification);
    ``j`` a uint64 scalar or array (the table computes every bin at once)."""
    return bucket_u64(fmix64(seed ^ ((j << np.uint64(32)) | np.uint64(attempt))), t)


@njit(cache=True, nogil=True)
def probe_source(seed: np.uint64, j: int, attempt: int, t: int) -> np.int64:
    """``probe_bin`` of one bin, as a signed index."""
    return np.int64(probe_bin(seed, np.uint64(j), attempt, t))


@njit(cache=True, nogil=True)
def probe_table(seed: np.uint64, t: int) -> np.ndarray:
    """uint32[PROBES, t]: every bin's first probes, attempt by attempt, once per (seed, t)."""
    out = np.empty((PROBES, t), dtype=np.uint32)
    bins = np.arange(t).astype(np.uint64)
    for attempt in range(PROBES):
        out[attempt, :] = probe_bin(seed, bins, attempt, t)  # type: ignore[arg-type]
    return out


@njit(cache=True, inline="always")
def probe_on(row: np.ndarray, filled: np.ndarray, seed: np.uint64, j: int, attempt: int) -> None:
    """Empty bin j takes the first filled bin's value its probes reach from ``attempt`` on,
    each probe hashed (past a table's attempts)."""
    t = row.shape[0]
    while True:
        src = probe_source(seed, j, attempt, t)
        if filled[src]:
            row[j] = row[src]
            return
        attempt += 1


#: Attempts a first-hit table covers (``hit_table``): 255 marks "not within them".
HITS = 255
#: Densify a row through the first-hit table when it has at most this many shingles, so as
#: many filled bins at most (at most 255, the ranks' 8 bits): a short text fills few of 228
#: bins, and probing for them took 8.4 µs a row at 10 shingles, 47 µs at 2 (most probes past
#: the probe table, hashed one by one); the table took 1.9 and 6.9. Probing wins again from
#: about 35 filled bins on (``benchmarks/bench_kernels.py``: "2-32-shingle" 7.46 -> 1.22 µs).
FEW_FILLED = 32
#: The largest t given a first-hit table (t * t bytes: 1 MB).
HIT_TABLE_T = 1024


@njit(cache=True, nogil=True)
def hit_table(seed: np.uint64, t: int) -> np.ndarray:
    """uint8[t, t]: entry (s, j) is the first attempt (< ``HITS``) at which bin j's probe
    sequence reaches bin s, or ``HITS`` when none of its first ``HITS`` attempts does. The
    filled bin an empty bin j's probes reach first is the filled s of the smallest entry in
    column j; a row per s, so that one filled bin updates every column in one sweep."""
    out = np.full((t, t), HITS, dtype=np.uint8)
    bins = np.arange(t).astype(np.uint64)
    for attempt in range(HITS - 1, -1, -1):  # the smallest attempt written last
        src: np.ndarray = probe_bin(seed, bins, attempt, t)  # type: ignore[arg-type,assignment]
        for j in range(t):
            out[src[j], j] = attempt
    return out


@njit(cache=True, nogil=True)
def densify_few(
    row: np.ndarray,
    filled: np.ndarray,
    seed: np.uint64,
    hits: np.ndarray,
    where: np.ndarray,
    best: np.ndarray,
) -> None:
    """``densify`` for a row with few filled bins (at most 255), through ``hit_table``: each
    empty bin takes the value of the filled bin its probes reach first (the smallest entry;
    one attempt reaches one bin, so there are no ties), probing on past the table only when
    no filled bin is within it. (attempt, filled rank) is one number, its minimum taken over
    the filled bins' rows one sweep each (vectorised: no branch, no gather).
    ``where``, ``best``: uint32[t] scratch."""
    t = row.shape[0]
    m = 0
    for j in range(t):
        where[m] = j
        m += filled[j]
    if m == 1:  # every probe ends at the one filled bin
        row[:] = row[where[0]]
        return
    best[:] = np.uint32(0xFFFFFFFF)
    for i in range(m):
        at = hits[where[i]]
        rank = np.uint32(i)
        for j in range(t):
            best[j] = min(best[j], (np.uint32(at[j]) << np.uint32(8)) | rank)
    for j in range(t):
        if filled[j]:
            continue
        if best[j] >> np.uint32(8) < HITS:
            row[j] = row[where[best[j] & np.uint32(0xFF)]]
            continue
        probe_on(row, filled, seed, j, HITS)


@njit(cache=True, nogil=True)
def densify(
    row: np.ndarray,
    filled: np.ndarray,
    seed: np.uint64,
    probes: np.ndarray,
    pending: np.ndarray,
    spare: np.ndarray,
) -> None:
    """Fill empty bins of one OPH row in place by optimal densification: bin j takes the value
    of the first filled bin in its probe sequence (the first PROBES from the table).

    Attempt by attempt over the bins still empty, without a branch on the data: a bin whose
    probe is filled takes its value, the others go on to the next list (``pending`` and
    ``spare``, uint32[t], alternate). A short document leaves most of the 228 bins empty, and a
    branch per probe mispredicted often: 2.7 -> 1.8 µs a row. Indices are unsigned (uint32
    lists and table) so that Numba adds no negative-index fix-up to each of the four lookups
    of a probe: 20% less. The order does not change the result: bins borrow only from bins
    filled by the document itself. With one bin filled, all take its value at once (probing
    would take t * t probes: 0.3 ms compiled, 0.4 s interpreted, a document)."""
    t = row.shape[0]
    k = np.uint32(0)
    for j in range(t):
        pending[k] = j
        k += np.uint32(not filled[j])
    if k == t - 1:  # one filled bin (a text of at most w tokens): every probe ends there
        for j in range(t):
            if filled[j]:
                row[:] = row[j]
                return
    attempt = 0
    now, nxt = pending, spare
    while k > 0 and attempt < PROBES:
        at = probes[attempt]
        m = np.uint32(0)
        for i in range(k):
            j = now[i]
            src = at[j]
            hit = filled[src]
            row[j] = row[src] if hit else row[j]
            nxt[m] = j
            m += np.uint32(not hit)
        k = m
        now, nxt = nxt, now
        attempt += 1
    for i in range(k):  # beyond the table (probability 0.65**32 a bin at a third filled)
        probe_on(row, filled, seed, now[i], PROBES)


@njit(cache=True, nogil=True)
def sketch_oph(fps: np.ndarray, offsets: np.ndarray, seed: np.uint64, t: int) -> np.ndarray:
    n = offsets.shape[0] - 1
    out = np.full((n, t), EMPTY, dtype=np.uint64)
    filled = np.zeros(t, dtype=np.bool_)
    pending = np.empty(t, dtype=np.uint32)
    spare = np.empty(t, dtype=np.uint32)
    best = np.empty(t, dtype=np.uint32)
    dseed = splitmix64(seed)
    # t * PROBES hashes per call (microseconds): no table to pass in, no kernel to load for it
    probes = probe_table(dseed, t)
    # t * HITS hashes (0.1 ms at t = 228), made at the first row that needs them
    hits = np.empty((0, 0), dtype=np.uint8)
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        if hi == lo:
            continue
        row = out[d]  # EMPTY already: filled in place
        filled[:] = False
        for p in range(np.uint64(lo), np.uint64(hi)):
            g = fmix64(fps[p] ^ seed)
            j = bucket_u64(g, t)  # unsigned: no negative-index fix-up
            filled[j] = True
            if g < row[j]:
                row[j] = g
        if hi - lo <= FEW_FILLED and t <= HIT_TABLE_T:  # so at most FEW_FILLED bins filled
            if hits.shape[0] == 0:
                hits = hit_table(dseed, t)
            densify_few(row, filled, dseed, hits, pending, best)
        else:
            densify(row, filled, dseed, probes, pending, spare)
    return out


@njit(cache=True, nogil=True)
def sketch_bottomk(fps: np.ndarray, offsets: np.ndarray, seed: np.uint64, t: int) -> np.ndarray:
    n = offsets.shape[0] - 1
    out = np.full((n, t), EMPTY, dtype=np.uint64)
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        if hi == lo:
            continue
        g = np.empty(hi - lo, dtype=np.uint64)
        for p in range(lo, hi):
            g[p - lo] = fmix64(fps[p] ^ seed)
        g.sort()
        k = 0
        for i in range(g.shape[0]):
            if k == t:
                break
            if i == 0 or g[i] != g[i - 1]:
                out[d, k] = g[i]
                k += 1
    return out


@njit(cache=True, inline="always")
def positional_share(x: np.ndarray, y: np.ndarray) -> float:
    """Share of equal positions of two sketch rows (classic, OPH); 0 when either is empty."""
    t = x.shape[0]
    if x[0] == EMPTY or y[0] == EMPTY:  # only rows of empty documents hold EMPTY
        return 0.0
    eq = 0
    for j in range(t):
        eq += x[j] == y[j]
    return eq / t


@njit(cache=True, inline="always")
def bottomk_share(x: np.ndarray, y: np.ndarray) -> float:
    """|S_k(A u B) n S_k(A) n S_k(B)| / |S_k(A u B)| by merging two ascending bottom-k rows."""
    t = x.shape[0]
    p = 0
    q = 0
    union = 0
    both = 0
    while union < t:
        vx = x[p] if p < t else EMPTY
        vy = y[q] if q < t else EMPTY
        if vx == EMPTY and vy == EMPTY:
            break
        if vx == vy:
            both += 1
            p += 1
            q += 1
        elif vx < vy:
            p += 1
        else:
            q += 1
        union += 1
    if union > 0:
        return both / union
    return 0.0


@njit(cache=True, nogil=True)
def estimate_positional(sketches: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Share of equal positions for each pair (classic and OPH); 0 when either row is empty."""
    out = np.zeros(a.shape[0], dtype=np.float64)
    for i in range(a.shape[0]):
        out[i] = positional_share(sketches[a[i]], sketches[b[i]])
    return out


@njit(cache=True, nogil=True)
def estimate_bottomk(sketches: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bottom-k estimate for each pair (``bottomk_share``)."""
    out = np.zeros(a.shape[0], dtype=np.float64)
    for i in range(a.shape[0]):
        out[i] = bottomk_share(sketches[a[i]], sketches[b[i]])
    return out
