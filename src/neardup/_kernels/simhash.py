"""Numba kernels for Charikar's SimHash: weighted feature hashes -> one 64-bit fingerprint per doc.

Each feature hash is re-mixed with a seed (``fmix64(fp ^ splitmix64(seed))``) so that the 64 bits
used as signs are independent of how the shingle hash was built. A vector V of 64 counters gets
+w where the mixed bit is 1 and -w where it is 0; the fingerprint's bit i is 1 where V[i] > 0.
Repeated features simply add their weight again, which is exactly count weighting.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import fmix64, splitmix64

_ONE = np.uint64(1)


@njit(cache=True, nogil=True)
def seed_mix(seed: int) -> np.uint64:
    """The value XOR-ed into every feature before mixing: splitmix64 of the seed."""
    return splitmix64(np.uint64(seed))


def spread_table() -> np.ndarray:
    """SPREAD[b]: the 8 bits of byte b moved into 8 byte lanes (bit j -> bit 8j) of a uint64."""
    out = np.zeros(256, np.uint64)
    for b in range(256):
        out[b] = sum(((b >> j) & 1) << (8 * j) for j in range(8))
    return out


@njit(cache=True, nogil=True)
def _flush(acc: np.ndarray, ones: np.ndarray) -> None:
    for k in range(8):
        a = acc[k]
        for j in range(8):
            ones[8 * k + j] += np.int64((a >> np.uint64(8 * j)) & np.uint64(255))
        acc[k] = 0


@njit(cache=True, nogil=True)
def simhash_counts(
    fps: np.ndarray, offsets: np.ndarray, seed: int, spread: np.ndarray
) -> np.ndarray:
    """Count-weighted SimHash of each document ``fps[offsets[i]:offsets[i+1]]`` -> uint64[n].

    With unit weights per occurrence, V[i] = 2 * ones[i] - m (m features, ones[i] of them with bit
    i set), so bit i is 1 iff 2 * ones[i] > m: integer arithmetic, no ties lost to rounding.
    ones[] is counted SIMD-within-a-register: each hash byte indexes ``spread`` (its bits in 8
    byte lanes), added to one of 8 accumulators of 8 lane counters, flushed every 255 features
    before a lane can overflow.
    """
    n = offsets.shape[0] - 1
    out = np.zeros(n, np.uint64)
    mix = seed_mix(seed)
    ones = np.zeros(64, np.int64)
    acc = np.zeros(8, np.uint64)
    for d in range(n):
        lo = offsets[d]
        hi = offsets[d + 1]
        ones[:] = 0
        c = 0
        for j in range(lo, hi):
            h = fmix64(fps[j] ^ mix)
            for k in range(8):
                acc[k] += spread[(h >> np.uint64(8 * k)) & np.uint64(255)]
            c += 1
            if c == 255:
                _flush(acc, ones)
                c = 0
        _flush(acc, ones)
        m = hi - lo
        v = np.uint64(0)
        for i in range(64):
            if 2 * ones[i] > m:
                v |= _ONE << np.uint64(i)
        out[d] = v
    return out


@njit(cache=True, nogil=True)
def simhash_weighted(
    fps: np.ndarray, offsets: np.ndarray, weights: np.ndarray, seed: int
) -> np.ndarray:
    """SimHash with a float64 weight per feature occurrence (e.g. its IDF) -> uint64[n].

    V[i] accumulates +w or -w in document order (w * (+-1) is exact, so the sums round exactly
    as the reference's do); bit i is 1 iff V[i] > 0.
    """
    n = offsets.shape[0] - 1
    out = np.zeros(n, np.uint64)
    mix = seed_mix(seed)
    acc = np.zeros(64, np.float64)
    for d in range(n):
        acc[:] = 0.0
        for j in range(offsets[d], offsets[d + 1]):
            h = fmix64(fps[j] ^ mix)
            w = weights[j]
            for i in range(64):
                acc[i] += w * (2.0 * np.float64((h >> np.uint64(i)) & _ONE) - 1.0)
        v = np.uint64(0)
        for i in range(64):
            if acc[i] > 0.0:
                v |= _ONE << np.uint64(i)
        out[d] = v
    return out
