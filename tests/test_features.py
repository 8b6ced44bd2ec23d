"""Broder features (LSH bands): kernel == pure-Python reference; the acceptance curve's numbers."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import InputError, ParamError
from neardup.features import (
    EMPTY,
    FeatureParams,
    acceptance,
    combination_table,
    feature_combinations,
    features,
    rejection,
)

MASK = (1 << 64) - 1
E = int(EMPTY)
FEATURE_SEED = 0x6E65617264757066
COMBO_SEED = 0x6E656172647570C3


def ref_fmix64(x: int) -> int:
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & MASK
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & MASK
    x ^= x >> 33
    return x


def ref_chain(seed: int, number: int, values: list[int]) -> int:
    h = ref_fmix64(seed ^ (((number + 1) * 0x9E3779B97F4A7C15) & MASK))
    for v in values:
        h = ref_fmix64(h ^ v)
    return h


def ref_features(rows: list[list[int]], k: int, s: int) -> list[list[int]]:
    out = []
    for row in rows:
        feats = []
        for g in range(k):
            band = row[g * s : (g + 1) * s]
            h = ref_chain(FEATURE_SEED, g, band)
            if all(v == E for v in band):
                h = E
            elif h == E:
                h = E - 1
            feats.append(h)
        out.append(feats)
    return out


def ref_combinations(rows: list[list[int]], m: int) -> list[list[int]]:
    out = []
    for row in rows:
        keys = []
        for c, combo in enumerate(itertools.combinations(range(len(row)), m)):
            vals = [row[j] for j in combo]
            h = ref_chain(COMBO_SEED, c, vals)
            keys.append(E if E in vals else (E - 1 if h == E else h))
        out.append(keys)
    return out


values64 = st.one_of(
    st.integers(0, MASK), st.just(E), st.integers(0, 5), st.integers(MASK - 3, MASK)
)


@st.composite
def sketch_batches(draw: st.DrawFn) -> tuple[np.ndarray, int, int]:
    k = draw(st.integers(1, 6))
    s = draw(st.integers(1, 5))
    extra = draw(st.integers(0, 3))
    n = draw(st.integers(0, 8))
    rows = draw(
        st.lists(
            st.lists(values64, min_size=k * s + extra, max_size=k * s + extra),
            min_size=n,
            max_size=n,
        )
    )
    arr = np.array(rows, dtype=np.uint64).reshape(n, k * s + extra)
    if n and draw(st.booleans()):
        arr[draw(st.integers(0, n - 1))] = EMPTY  # an empty document
    return arr, k, s


@settings(max_examples=150, deadline=None)
@given(sketch_batches())
def test_features_kernel_equals_reference(batch: tuple[np.ndarray, int, int]) -> None:
    arr, k, s = batch
    got = features(arr, FeatureParams(k, s, 1))
    assert got.dtype == np.uint64 and got.shape == (arr.shape[0], k)
    want = ref_features([[int(v) for v in row] for row in arr], k, s)
    assert [[int(v) for v in row] for row in got] == want


@settings(max_examples=100, deadline=None)
@given(sketch_batches(), st.integers(1, 3))
def test_feature_combinations_kernel_equals_reference(
    batch: tuple[np.ndarray, int, int], m: int
) -> None:
    arr, k, s = batch
    feats = features(arr, FeatureParams(k, s, 1))
    m = min(m, k)
    got = feature_combinations(feats, m)
    assert got.shape == (arr.shape[0], math.comb(k, m))
    want = ref_combinations([[int(v) for v in row] for row in feats], m)
    assert [[int(v) for v in row] for row in got] == want


def test_empty_document_gets_no_features_and_others_never_equal_empty() -> None:
    rng = np.random.default_rng(5)
    sk = rng.integers(0, 2**63, (50, 84), dtype=np.int64).view(np.uint64)
    sk[7] = EMPTY
    f = features(sk, FeatureParams(6, 14, 2))
    assert (f[7] == EMPTY).all()
    assert not (np.delete(f, 7, axis=0) == EMPTY).any()


def test_band_number_is_hashed_in() -> None:
    # The same values in band 0 and band 1 must give different features.
    row = np.array([[11, 22, 11, 22]], dtype=np.uint64)
    f = features(row, FeatureParams(2, 2, 1))
    assert f[0, 0] != f[0, 1]


def test_features_use_only_first_k_times_s_values_and_match_positionally() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**63, (1, 20), dtype=np.int64).view(np.uint64)
    b = a.copy()
    b[0, 12:] += np.uint64(1)  # beyond k*s = 12: ignored
    b[0, 5] += np.uint64(1)  # inside band 1 (values 4..7): only feature 1 changes
    fa, fb = features(a, FeatureParams(3, 4, 1)), features(b, FeatureParams(3, 4, 1))
    assert list(fa[0] == fb[0]) == [True, False, True]


def test_feature_combinations_share_a_key_iff_m_features_shared() -> None:
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**63, (1, 6), dtype=np.int64).view(np.uint64)
    for mask in itertools.product([False, True], repeat=6):
        other = base.copy()
        other[0, ~np.array(mask)] ^= np.uint64(12345)
        both = np.vstack([base, other])
        for m in (1, 2, 3):
            keys = feature_combinations(both, m)
            assert bool((keys[0] == keys[1]).any()) == (sum(mask) >= m)


def test_feature_params_validate_and_fingerprint() -> None:
    p = FeatureParams(6, 14, 2)
    assert p.t == 84 and p.bytes_per_doc == 48
    assert (
        p.fingerprint()
        == FeatureParams(6, 14, 2).fingerprint()
        != FeatureParams(6, 14, 1).fingerprint()
    )
    assert "FeatureParams" in p.fingerprint()
    for bad in [
        (0, 1, 1),
        (2, 0, 1),
        (2, 2, 3),
        (2, 2, 0),
        (True, 2, 1),
        (2.0, 2, 1),
        (300, 300, 1),
    ]:
        with pytest.raises(ParamError):
            FeatureParams(*bad)  # type: ignore[arg-type]


def test_features_reject_bad_sketches_with_clear_errors() -> None:
    with pytest.raises(ParamError, match="k\\*s = 84"):
        features(np.zeros((2, 80), dtype=np.uint64), FeatureParams(6, 14, 2))
    with pytest.raises(InputError, match="uint64"):
        features(np.zeros((2, 84), dtype=np.int64), FeatureParams(6, 14, 2))
    with pytest.raises(InputError, match="2-D"):
        features(np.zeros(84, dtype=np.uint64), FeatureParams(6, 14, 2))
    with pytest.raises(ParamError):
        combination_table(4, 5)


def exact_acceptance(rho: Fraction, k: int, s: int, r: int) -> Fraction:
    p = rho**s
    return sum((math.comb(k, i) * p**i * (1 - p) ** (k - i) for i in range(r, k + 1)), Fraction(0))


@pytest.mark.parametrize("k,s,r", [(6, 14, 2), (1, 1, 1), (20, 5, 1), (10, 3, 4), (30, 8, 30)])
@pytest.mark.parametrize(
    "rho",
    [
        Fraction(0),
        Fraction(1, 10),
        Fraction(1, 2),
        Fraction(77, 100),
        Fraction(9, 10),
        Fraction(99, 100),
        Fraction(999, 1000),
        Fraction(1),
    ],
)
def test_acceptance_and_rejection_match_exact_rational_values(
    k: int, s: int, r: int, rho: Fraction
) -> None:
    want = exact_acceptance(rho, k, s, r)
    got_p = float(acceptance(float(rho), k, s, r))
    got_miss = float(rejection(float(rho), k, s, r))
    assert got_p == pytest.approx(float(want), rel=1e-9, abs=1e-300)
    assert got_miss == pytest.approx(float(1 - want), rel=1e-9, abs=1e-300)


def test_acceptance_keeps_tiny_values_instead_of_rounding_to_zero() -> None:
    # P(0.1) for k=6, s=14, r=2 is about 15e-28: far below double epsilon, must not be 0.
    got = float(acceptance(0.1, 6, 14, 2))
    want = float(exact_acceptance(Fraction(1, 10), 6, 14, 2))
    assert got > 1e-30 and got == pytest.approx(want, rel=1e-9)


def test_broder_paper_example_reproduces_its_figures() -> None:
    # Broder (2000): 6 features of 14 values, 2 must match, 48 bytes per document.
    p = FeatureParams(6, 14, 2)
    assert p.bytes_per_doc == 48
    assert float(rejection(0.99, 6, 14, 2)) < 0.00022
    assert float(acceptance(0.77, p.k, p.s, p.r)) < 0.01
    assert float(acceptance(0.5, p.k, p.s, p.r)) < 0.6e-7
    grid = np.linspace(0.85, 0.95, 100001)
    half = grid[np.argmin(np.abs(acceptance(grid, p.k, p.s, p.r) - 0.5))]
    assert half == pytest.approx(0.909, abs=0.002)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 20), st.data())
def test_acceptance_is_monotone_from_zero_to_one_and_vectorised(
    k: int, s: int, data: st.DataObject
) -> None:
    r = data.draw(st.integers(1, k))
    rho = np.linspace(0, 1, 501)
    p = acceptance(rho, k, s, r)
    assert p.shape == rho.shape
    assert p[0] == 0.0 and p[-1] == 1.0
    assert (np.diff(p) >= -1e-13).all()
    assert np.allclose(p + rejection(rho, k, s, r), 1.0, atol=1e-12)
    assert acceptance(np.array([[0.5, 0.6]]), k, s, r).shape == (1, 2)


def test_acceptance_rejects_out_of_range_resemblance() -> None:
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ParamError):
            acceptance(bad, 6, 14, 2)
