"""Sketches uint64[n, t] -> Broder features (LSH bands) uint64[n, k]; P(ρ) = P[Bin(k, ρ^s) >= r].

Broder's super-shingles are what the LSH literature calls *banding*: the first k*s sketch values
are cut into k bands ("groups") of s consecutive values, and each band is hashed, together with
its band number, to one 64-bit *feature*. Two documents with resemblance ρ agree on a sketch
position with probability ρ, so on a whole band with probability ρ^s, and share at least r of the
k features with probability

    P(ρ) = Σ_{i=r}^{k} C(k, i) ρ^(s·i) (1 - ρ^s)^(k-i)            (the acceptance curve).

Documents sharing >= r features become candidate pairs (see ``candidates.py``). Broder, "Identifying
and filtering near-duplicate documents" (CPM 2000) uses k=6, s=14, r=2: 48 bytes per document.

Empty documents (sketch rows all ``EMPTY``) get no features: their feature values are ``EMPTY``,
which candidate generation skips. A real feature hash that happens to equal ``EMPTY`` is moved to
``EMPTY - 1``, so the sentinel is unambiguous.
"""

from __future__ import annotations

import itertools
import math
import reprlib

import numpy as np
import numpy.typing as npt

from ._kernels import features as _k
from ._kernels.hashing import EMPTY  # noqa: F401  (re-exported: the "no feature" sentinel)
from ._types import FloatArray
from .errors import InputError, ParamError
from .params import FeatureParams, check_int


def _as_sketches(sketches: npt.ArrayLike, need: int) -> npt.NDArray[np.uint64]:
    arr = np.asarray(sketches)
    if arr.ndim != 2:
        raise InputError(
            f"sketches must be a 2-D array (documents x values), got shape {arr.shape}"
        )
    if arr.dtype != np.uint64:
        raise InputError(
            f"sketches must have dtype uint64, got {arr.dtype}; use neardup.minhash.sketch"
        )
    if arr.shape[1] < need:
        raise ParamError(
            f"features need k*s = {need} sketch values per document but the sketches have "
            f"{arr.shape[1]}; sketch with t >= {need} or lower k or s"
        )
    return np.ascontiguousarray(arr)


def features(sketches: npt.ArrayLike, params: FeatureParams) -> npt.NDArray[np.uint64]:
    """Broder features (LSH band keys) of each document: uint64[n, k].

    Feature g of document i is a 64-bit hash (a MurmurHash3 fmix64 chain) of the band
    ``sketches[i, g*s:(g+1)*s]``, started from a state that depends on g: the band number is
    hashed in, so equal values in different bands never give equal features. A band whose values
    are all EMPTY (an empty document) gives EMPTY, meaning "no feature".
    """
    arr = _as_sketches(sketches, params.t)
    out = np.empty((arr.shape[0], params.k), dtype=np.uint64)
    if arr.shape[0]:
        _k.band_features(arr, params.k, params.s, out)
    return out


def combination_table(k: int, m: int) -> npt.NDArray[np.int64]:
    """All m-subsets of range(k) in lexicographic order, int64[C(k, m), m]."""
    check_int(
        "features per combination m", m, 1, max(k, 1), "m cannot exceed the number of features"
    )
    n_combos = math.comb(k, m)
    if n_combos > 1 << 16:
        raise ParamError(f"C({k}, {m}) = {n_combos} combinations per document is too many; lower m")
    return np.array(list(itertools.combinations(range(k), m)), dtype=np.int64).reshape(n_combos, m)


def feature_combinations(feats: npt.ArrayLike, m: int) -> npt.NDArray[np.uint64]:
    """Broder's *megashingles*: one key per m-subset of a document's k features, uint64[n, C(k, m)].

    Key c of a document hashes features ``combination_table(k, m)[c]`` together with c. Two
    documents share at least one key exactly when they share at least m features in the same
    positions (up to 64-bit hash collisions), so "share >= r features" becomes a plain key lookup
    (r = 1) with m = r: what an index that can only look keys up needs. Combinations with an
    EMPTY member are EMPTY.
    """
    arr = np.asarray(feats)
    if arr.ndim != 2 or arr.dtype != np.uint64:
        raise InputError(
            f"features must be a uint64[n, k] array, got {arr.dtype} shape {arr.shape}"
        )
    combos = combination_table(arr.shape[1], m)
    out = np.empty((arr.shape[0], combos.shape[0]), dtype=np.uint64)
    if arr.shape[0]:
        _k.combine_features(np.ascontiguousarray(arr), combos, out)
    return out


def binomial_term(log_p: npt.ArrayLike, log_q: npt.ArrayLike, k: int, i: int) -> FloatArray:
    """C(k, i) p^i q^(k-i) from log p and log q = log(1 - p), in log space (0^0 = 1)."""
    log_c = math.lgamma(k + 1) - math.lgamma(i + 1) - math.lgamma(k - i + 1)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.where(i == 0, 0.0, i * np.asarray(log_p))
        b = np.where(k - i == 0, 0.0, (k - i) * np.asarray(log_q))
        return np.exp(log_c + a + b)


def _tails(rho: npt.ArrayLike, k: int, s: int, r: int) -> tuple[FloatArray, FloatArray]:
    """(P, 1 - P) at ρ: the upper (i >= r) and lower (i < r) tails of Binomial(k, p = ρ^s).

    Each term C(k,i) p^i (1-p)^(k-i) is computed in log space with p = exp(s ln ρ) and
    1 - p = -expm1(s ln ρ), which avoids cancellation for ρ near 1. Each tail is summed from
    positive terms (no cancellation: accurate down to the smallest normal float), and the larger
    tail is then taken as 1 minus the smaller one so that P + (1 - P) = 1 exactly.
    """
    try:
        x = np.asarray(rho, dtype=np.float64)
    except (TypeError, ValueError):  # "x": the conversion's own message named no argument
        x = np.full(1, np.nan)
    if np.any(~np.isfinite(x)) or np.any((x < 0) | (x > 1)):
        raise ParamError(
            f"rho must be a resemblance in [0, 1] or an array of them, got {reprlib.repr(rho)}"
        )
    with np.errstate(divide="ignore"):
        log_p = s * np.log(x)  # -inf at ρ = 0
        log_q = np.log(-np.expm1(log_p))  # -inf at ρ = 1
    upper = np.zeros_like(x)
    lower = np.zeros_like(x)
    for i in range(k + 1):
        term = binomial_term(log_p, log_q, k, i)
        if i >= r:
            upper += term
        else:
            lower += term
    small_upper = upper <= lower
    accept = np.where(small_upper, upper, 1.0 - lower)
    reject = np.where(small_upper, 1.0 - upper, lower)
    return accept, reject


def acceptance(rho: npt.ArrayLike, k: int, s: int, r: int) -> FloatArray:
    """P(ρ) = Σ_{i>=r} C(k,i) ρ^(s·i) (1-ρ^s)^(k-i): chance that documents of resemblance ρ
    share at least r of their k features (LSH bands of s values). Vectorised over ρ; accurate
    for tiny values (ρ far below the threshold). Use :func:`rejection` for 1 - P near ρ = 1.
    """
    FeatureParams(k, s, r)
    return _tails(rho, k, s, r)[0]


def rejection(rho: npt.ArrayLike, k: int, s: int, r: int) -> FloatArray:
    """1 - P(ρ) = Σ_{i<r} C(k,i) ρ^(s·i) (1-ρ^s)^(k-i): chance that a pair of resemblance ρ is
    missed. Computed directly (no 1 - P cancellation), accurate for tiny miss rates near ρ = 1.
    """
    FeatureParams(k, s, r)
    return _tails(rho, k, s, r)[1]
