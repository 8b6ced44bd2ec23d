"""Numba kernels for permuted-table Hamming search: block permutation, radix grouping, run walks.

Every fingerprint is a uint64. A *table* permutes the bits so that its leading blocks sit at the
top of the word; grouping by the top ``p`` bits then puts fingerprints that agree on those blocks
next to each other, and each run of equal keys is checked pair by pair with a popcount. The pure
references these kernels are proven equal to live in ``neardup.hamming`` (brute-force popcount).
"""

from __future__ import annotations

import numpy as np

from ._jit import mode, njit
from .hashing import EMPTY, GOLDEN, fmix64

_U64 = np.uint64

if mode() == "numba":
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _ctpop(typingctx, x):  # type: ignore[no-untyped-def]  # numba intrinsic signature
        """LLVM's ctpop on a uint64, typed int64 (so comparisons with int counts stay integer):
        one POPCNT instruction on x86-64."""
        sig = types.int64(types.uint64)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            return builder.ctpop(args[0])

        return sig, codegen

    @njit(cache=True, inline="always")
    def popcount64(x: np.uint64) -> int:
        """Number of one bits in a uint64."""
        return _ctpop(x)  # type: ignore[call-arg]  # numba supplies typingctx

else:

    def popcount64(x: np.uint64) -> int:
        """Number of one bits in a uint64 (interpreted kernels)."""
        return int(x).bit_count()


@njit(cache=True)
def popcount_array(x: np.ndarray) -> np.ndarray:
    """Element-wise popcount of a uint64 array -> int64 array."""
    out = np.empty(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        out[i] = popcount64(x[i])
    return out


@njit(cache=True)
def permute_blocks(
    fps: np.ndarray, src: np.ndarray, size: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    """Move block j (bits src[j]..src[j]+size[j]) of each fingerprint to bit dst[j].

    The blocks are disjoint and cover the fingerprint, so the map is a bit permutation: it keeps
    Hamming distances, and XOR commutes with it.
    """
    n = fps.shape[0]
    nb = src.shape[0]
    out = np.empty(n, np.uint64)
    masks = np.empty(nb, np.uint64)
    for j in range(nb):
        masks[j] = (_U64(1) << _U64(size[j])) - _U64(1) if size[j] < 64 else ~_U64(0)
    for i in range(n):
        x = fps[i]
        y = _U64(0)
        for j in range(nb):
            y |= ((x >> _U64(src[j])) & masks[j]) << _U64(dst[j])
        out[i] = y
    return out


#: Bits per counting-sort pass: 256 buckets keep the scatter within cache (measured faster than
#: 11 or 16 bits a pass on 1e6 fingerprints).
RADIX_BITS = 8


@njit(cache=True)
def radix_sort_top_into(
    vals: np.ndarray,
    idx: np.ndarray,
    nbits: int,
    out_v: np.ndarray,
    out_i: np.ndarray,
    tmp_v: np.ndarray,
    tmp_i: np.ndarray,
) -> None:
    """Stable LSD radix sort of (vals, idx) by the top ``nbits`` bits of vals into (out_v, out_i).

    Only the top bits matter to grouping, so a table keyed on 16 bits costs two counting passes.
    The inputs are not modified; the caller provides the buffers so that repeated sorts do not
    pay for fresh memory. Passes alternate between out and tmp and end in out.
    """
    n = vals.shape[0]
    if nbits <= 0:
        out_v[:n] = vals
        out_i[:n] = idx
        return
    npass = (nbits + RADIX_BITS - 1) // RADIX_BITS
    src_v = vals
    src_i = idx
    shift = 64 - nbits
    q = 0
    counts = np.zeros((1 << RADIX_BITS) + 1, np.int64)
    while shift < 64:
        r = min(RADIX_BITS, 64 - shift)
        if (npass - 1 - q) % 2 == 0:
            dv = out_v
            di = out_i
        else:
            dv = tmp_v
            di = tmp_i
        nbuckets = 1 << r
        mask = _U64(nbuckets - 1)
        counts[:] = 0
        sh = _U64(shift)
        for i in range(n):
            counts[int((src_v[i] >> sh) & mask) + 1] += 1
        for d in range(nbuckets):
            counts[d + 1] += counts[d]
        for i in range(n):
            v = src_v[i]
            d = int((v >> sh) & mask)
            pos = counts[d]
            dv[pos] = v
            di[pos] = src_i[i]
            counts[d] = pos + 1
        src_v = dv
        src_i = di
        shift += r
        q += 1


@njit(cache=True)
def block_mask_of(d: np.uint64, dst: np.ndarray, size: np.ndarray, block: np.ndarray) -> int:
    """Bit set of the original blocks in which a permuted XOR difference ``d`` is non-zero."""
    m = 0
    for j in range(dst.shape[0]):
        bm = (_U64(1) << _U64(size[j])) - _U64(1) if size[j] < 64 else ~_U64(0)
        if (d >> _U64(dst[j])) & bm:
            m |= 1 << block[j]
    return m


@njit(cache=True)
def _table_walk(
    pv: np.ndarray,
    ids: np.ndarray,
    p: int,
    k: int,
    dst: np.ndarray,
    size: np.ndarray,
    block: np.ndarray,
    canon: np.ndarray,
    table: int,
    oa: np.ndarray,
    ob: np.ndarray,
    od: np.ndarray,
    fill: bool,
) -> int:
    """One walk over the runs; counts the hits, and writes them when ``fill`` (two passes keep
    the hot loop free of array reallocation, which would put reference counting in it)."""
    n = pv.shape[0]
    shift = _U64(64 - p)
    m = 0
    i = 0
    while i < n:
        key = pv[i] >> shift
        j = i + 1
        while j < n and (pv[j] >> shift) == key:
            j += 1
        for x in range(i, j - 1):
            vx = pv[x]
            for y in range(x + 1, j):
                d = vx ^ pv[y]
                c = popcount64(d)
                if c <= k and canon[block_mask_of(d, dst, size, block)] == table:
                    if fill:
                        a = ids[x]
                        b = ids[y]
                        if a > b:
                            a, b = b, a
                        oa[m] = a
                        ob[m] = b
                        od[m] = c
                    m += 1
        i = j
    return m


@njit(cache=True)
def table_run_pairs(
    pv: np.ndarray,
    ids: np.ndarray,
    p: int,
    k: int,
    dst: np.ndarray,
    size: np.ndarray,
    block: np.ndarray,
    canon: np.ndarray,
    table: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs within k bits among runs of equal top-p bits of the sorted permuted values ``pv``.

    A pair is emitted only by its *canonical* table, the first table whose kept blocks are all
    equal for the pair (``canon[block difference mask] == table``), so no global dedupe is needed.
    Returns (ids[i], ids[j], distance) with the smaller id first, in no particular order.
    """
    e64 = np.empty(0, np.int64)
    m = _table_walk(
        pv, ids, p, k, dst, size, block, canon, table, e64, e64, np.empty(0, np.int8), False
    )
    oa = np.empty(m, np.int64)
    ob = np.empty(m, np.int64)
    od = np.empty(m, np.int8)
    if m:
        _table_walk(pv, ids, p, k, dst, size, block, canon, table, oa, ob, od, True)
    return oa, ob, od


@njit(cache=True)
def build_directory(sorted_v: np.ndarray, dbits: int) -> np.ndarray:
    """Start of each top-``dbits`` prefix in a table sorted by its top bits: int64[2**dbits + 1].

    Prefix g occupies ``sorted_v[dir[g]:dir[g + 1]]``, so a query finds its run without a
    binary search over the whole table (a cache miss per step on large tables).
    """
    size = 1 << dbits
    out = np.zeros(size + 1, np.int64)
    sh = _U64(64 - dbits)
    for i in range(sorted_v.shape[0]):
        out[int(sorted_v[i] >> sh) + 1] += 1
    for g in range(size):
        out[g + 1] += out[g]
    return out


@njit(cache=True)
def _query_walk(
    qv: np.ndarray,
    tables_v: np.ndarray,
    tables_id: np.ndarray,
    dirs: np.ndarray,
    dbits: int,
    p: np.ndarray,
    k: int,
    dst: np.ndarray,
    size: np.ndarray,
    block: np.ndarray,
    canon: np.ndarray,
    oq: np.ndarray,
    oi: np.ndarray,
    od: np.ndarray,
    fill: bool,
) -> int:
    nt = tables_v.shape[0]
    nq = qv.shape[1]
    dsh = _U64(64 - dbits)
    m = 0
    for i in range(nq):
        for t in range(nt):
            x = qv[t, i]
            g = int(x >> dsh)
            lo = dirs[t, g]
            hi = dirs[t, g + 1]
            tv = tables_v[t]
            if p[t] > dbits and hi > lo:
                # tables are sorted by their top p bits only: "v < low" and "v <= high" are
                # still monotone along them, so a binary search finds the run sharing x's key
                shift = _U64(64 - p[t])
                low = (x >> shift) << shift
                high = low | ((_U64(1) << shift) - _U64(1))
                seg = tv[lo:hi]
                hi = lo + np.searchsorted(seg, high, side="right")
                lo = lo + np.searchsorted(seg, low, side="left")
            for j in range(lo, hi):
                d = x ^ tv[j]
                c = popcount64(d)
                if c <= k and canon[block_mask_of(d, dst[t], size[t], block[t])] == t:
                    if fill:
                        oq[m] = i
                        oi[m] = tables_id[t, j]
                        od[m] = c
                    m += 1
    return m


@njit(cache=True)
def query_tables(
    qv: np.ndarray,
    tables_v: np.ndarray,
    tables_id: np.ndarray,
    dirs: np.ndarray,
    dbits: int,
    p: np.ndarray,
    k: int,
    dst: np.ndarray,
    size: np.ndarray,
    block: np.ndarray,
    canon: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Probe every table for each query: find the run sharing the query's top p[t] bits (prefix
    directory, then binary search within it) and popcount-check it. ``qv[t, i]`` is query i
    permuted for table t; ``tables_v[t]`` is sorted by its top p[t] bits; ``dbits <= min(p)``.

    Each match is reported once, by its canonical table. Returns (query index, id, distance).
    """
    e64 = np.empty(0, np.int64)
    e8 = np.empty(0, np.int8)
    args = (qv, tables_v, tables_id, dirs, dbits, p, k, dst, size, block, canon)
    m = _query_walk(*args, e64, e64, e8, False)
    oq = np.empty(m, np.int64)
    oi = np.empty(m, np.int64)
    od = np.empty(m, np.int8)
    if m:
        _query_walk(*args, oq, oi, od, True)
    return oq, oi, od


@njit(cache=True)
def _scan_walk(
    q: np.ndarray,
    fps: np.ndarray,
    ids: np.ndarray,
    k: int,
    oq: np.ndarray,
    oi: np.ndarray,
    od: np.ndarray,
    fill: bool,
) -> int:
    m = 0
    for i in range(q.shape[0]):
        x = q[i]
        for j in range(fps.shape[0]):
            c = popcount64(x ^ fps[j])
            if c <= k:
                if fill:
                    oq[m] = i
                    oi[m] = ids[j]
                    od[m] = c
                m += 1
    return m


@njit(cache=True)
def scan_pairs(
    q: np.ndarray, fps: np.ndarray, ids: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Linear popcount scan of an unsorted buffer: every (query index, id, distance) within k."""
    e64 = np.empty(0, np.int64)
    m = _scan_walk(q, fps, ids, k, e64, e64, np.empty(0, np.int8), False)
    oq = np.empty(m, np.int64)
    oi = np.empty(m, np.int64)
    od = np.empty(m, np.int8)
    if m:
        _scan_walk(q, fps, ids, k, oq, oi, od, True)
    return oq, oi, od


@njit(cache=True, nogil=True)
def table_keys(fps: np.ndarray, masks: np.ndarray, out: np.ndarray) -> None:
    """out[i, t] = fmix64((fps[i] & masks[t]) ^ salt(t)): one lookup key per permuted table.

    Two fingerprints share key t exactly when they agree on table t's kept blocks (up to 64-bit
    collisions); the salt keeps equal masked values of different tables apart. A key equal to
    the EMPTY sentinel is moved to EMPTY - 1.
    """
    for t in range(masks.shape[0]):
        salt = fmix64(GOLDEN * _U64(t + 1))
        for i in range(fps.shape[0]):
            h = fmix64((fps[i] & masks[t]) ^ salt)
            out[i, t] = h - _U64(1) if h == EMPTY else h
