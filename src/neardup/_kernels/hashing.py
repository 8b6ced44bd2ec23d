"""64-bit mixing primitives shared by the kernels (all arithmetic wraps modulo 2**64)."""

from __future__ import annotations

import numpy as np

from ._jit import njit

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
SHINGLE_MUL = np.uint64(0x9FB21C651E98DF25)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xFF51AFD7ED558CCD)
M2 = np.uint64(0xC4CEB9FE1A85EC53)
SM1 = np.uint64(0xBF58476D1CE4E5B9)
SM2 = np.uint64(0x94D049BB133111EB)
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def fmix64(x: np.uint64) -> np.uint64:
    """MurmurHash3's 64-bit finaliser: a bijection with full avalanche."""
    x = x ^ (x >> np.uint64(33))
    x = x * M1
    x = x ^ (x >> np.uint64(33))
    x = x * M2
    return x ^ (x >> np.uint64(33))


@njit(cache=True, inline="always")
def splitmix64(x: np.uint64) -> np.uint64:
    """SplitMix64 output function of state x (+ golden gamma): derives independent seeds."""
    z = x + GOLDEN
    z = (z ^ (z >> np.uint64(30))) * SM1
    z = (z ^ (z >> np.uint64(27))) * SM2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, inline="always")
def bucket_u64(h: np.uint64, t: int) -> np.uint64:
    """Map a 64-bit hash to [0, t) by its top 32 bits (multiply-shift, negligible bias); takes
    and gives uint64 scalars or arrays alike."""
    return ((h >> np.uint64(32)) * np.uint64(t)) >> np.uint64(32)


@njit(cache=True, inline="always")
def column_key(col: np.uint64, key: np.uint64) -> np.uint64:
    """One 64-bit key per (column, key): equal keys in different columns never collide on
    purpose (the column's odd multiple of the golden ratio, then fmix64)."""
    return fmix64(key ^ ((col + np.uint64(1)) * GOLDEN))


@njit(cache=True, inline="always")
def destination(value: np.uint64, n: np.uint64) -> np.uint64:
    """A destination in [0, n) for a 64-bit value, well mixed even when the values are
    consecutive positions (n >= 1)."""
    x = value * GOLDEN
    return (x ^ (x >> np.uint64(29))) % n
