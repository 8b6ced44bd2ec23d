"""Numba kernels: sketch value bands -> 64-bit Broder features (LSH band keys), fmix64 chains."""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import EMPTY, fmix64
from .hashing import GOLDEN as _GOLDEN

#: Start of every band chain; distinct from the start used for feature combinations.
FEATURE_SEED = np.uint64(0x6E65617264757066)  # b"neardupf"
COMBO_SEED = np.uint64(0x6E656172647570C3)
_ONE = np.uint64(1)


@njit(cache=True, inline="always")
def chain_start(seed: np.uint64, group: int) -> np.uint64:
    """The hash state before the first value of group `group`: the group number is hashed in."""
    return fmix64(seed ^ ((np.uint64(group) + _ONE) * _GOLDEN))


@njit(cache=True, nogil=True)
def band_features(sketches: np.ndarray, k: int, s: int, out: np.ndarray) -> None:
    """out[i, g] = fmix64 chain over sketches[i, g*s:(g+1)*s], started from the group number g.

    A group whose values are all EMPTY gives EMPTY (no feature); a real feature equal to EMPTY is
    moved to EMPTY - 1 so the sentinel stays unambiguous.
    """
    n = sketches.shape[0]
    for i in range(n):
        for g in range(k):
            h = chain_start(FEATURE_SEED, g)
            all_empty = True
            base = g * s
            for j in range(s):
                v = sketches[i, base + j]
                if v != EMPTY:
                    all_empty = False
                h = fmix64(h ^ v)
            if all_empty:
                out[i, g] = EMPTY
            elif h == EMPTY:
                out[i, g] = EMPTY - _ONE
            else:
                out[i, g] = h


@njit(cache=True, nogil=True)
def combine_features(features: np.ndarray, combos: np.ndarray, out: np.ndarray) -> None:
    """out[i, c] = fmix64 chain over features[i, combos[c, :]], started from combination number c.

    Any EMPTY member feature makes the combination EMPTY.
    """
    n = features.shape[0]
    n_combos, m = combos.shape
    for i in range(n):
        for c in range(n_combos):
            h = chain_start(COMBO_SEED, c)
            any_empty = False
            for j in range(m):
                v = features[i, combos[c, j]]
                if v == EMPTY:
                    any_empty = True
                h = fmix64(h ^ v)
            if any_empty:
                out[i, c] = EMPTY
            elif h == EMPTY:
                out[i, c] = EMPTY - _ONE
            else:
                out[i, c] = h
