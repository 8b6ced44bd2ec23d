"""Estimator accuracy against exact resemblance: bias ~ 0 and error ~ sqrt(J(1-J)/t) per sketch kind.

Tolerances come from the theory: with N pairs per level, the mean error of an unbiased estimator
has standard deviation sigma / sqrt(N), and the sample variance s^2 of N normal-ish errors lies
within sigma^2 (1 +- z sqrt(2 / (N - 1))). We use z = 4 (a false alarm about once in 15,000 runs
per check, and the data is seeded, so the test is deterministic anyway).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from neardup.minhash import estimate_pairs, expected_error, sketch
from neardup.params import SketchParams

T = 128
PAIRS = 300
UNION = 3000
LEVELS = [0.1, 0.3, 0.5, 0.7, 0.9]
Z = 4.0


def _pairs_with_resemblance(j: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """PAIRS pairs of random fingerprint sets whose exact Jaccard is j (rounded to 1/UNION)."""
    common = round(j * UNION)
    only = (UNION - common) // 2
    sets = []
    for _ in range(PAIRS):
        values = np.unique(rng.integers(0, 2**64 - 1, size=UNION + 50, dtype=np.uint64))
        values = rng.permutation(values)[: common + 2 * only]
        shared, rest = values[:common], values[common:]
        sets.append(np.concatenate([shared, rest[:only]]))
        sets.append(np.concatenate([shared, rest[only:]]))
    fps = np.concatenate(sets)
    offsets = np.cumsum([0] + [len(s) for s in sets]).astype(np.int64)
    return fps, offsets


@pytest.mark.parametrize("kind", ["oph", "classic", "bottomk"])
def test_estimates_are_unbiased_with_the_theoretical_error(kind: str) -> None:
    rng = np.random.default_rng(20261122)
    for level in LEVELS:
        fps, offsets = _pairs_with_resemblance(level, rng)
        true_j = round(level * UNION) / (
            round(level * UNION) + 2 * ((UNION - round(level * UNION)) // 2)
        )
        sk = sketch(fps, offsets, SketchParams(kind=kind, t=T, seed=int(rng.integers(2**62))))  # type: ignore[arg-type]
        a = np.arange(0, 2 * PAIRS, 2)
        est = estimate_pairs(sk, a, a + 1, kind)  # type: ignore[arg-type]
        err = est - true_j
        sigma = float(expected_error(true_j, T))
        if kind == "bottomk":  # sampling t of |A u B| without replacement
            sigma *= math.sqrt((UNION - T) / (UNION - 1))
        bias_bound = Z * sigma / math.sqrt(PAIRS)
        assert abs(err.mean()) < bias_bound, (kind, level, err.mean(), bias_bound)
        ratio = err.var(ddof=1) / sigma**2
        band = Z * math.sqrt(2 / (PAIRS - 1))
        assert 1 - band < ratio < 1 + band, (kind, level, ratio, band)
