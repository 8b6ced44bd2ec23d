"""The set-similarity join lists exactly the pairs brute force finds, with the same scores."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.resemblance import pair_scores
from neardup.setjoin import similar_pairs
from neardup.shingles import ShingleBatch


def _batch(sets: list[list[int]]) -> ShingleBatch:
    arrays = [np.unique(np.array(s, dtype=np.uint64)) for s in sets]
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in arrays], out=offsets[1:])
    return ShingleBatch(np.concatenate([np.zeros(0, dtype=np.uint64), *arrays]), offsets)


def brute_force(batch: ShingleBatch, t: float) -> list[tuple[int, int, float]]:
    """Every pair's Jaccard, the way resemblance.pair_scores computes it."""
    n = len(batch)
    out = []
    for a in range(n):
        for b in range(a + 1, n):
            s = float(pair_scores(batch, np.array([a]), np.array([b]))[0])
            if s >= t and batch.offsets[a + 1] > batch.offsets[a]:
                out.append((a, b, s))
    return out


# Small alphabets make many overlapping sets; big values (like real fingerprints) too.
tokens = st.one_of(st.integers(0, 12), st.integers(2**63, 2**63 + 5))


@settings(max_examples=300)
@given(
    st.lists(st.lists(tokens, max_size=14), max_size=24),
    st.sampled_from([0.2, 0.5, 0.6, 0.8, 0.9, 1.0, 1 / 3, 2 / 3]),
)
def test_join_equals_brute_force(sets: list[list[int]], t: float) -> None:
    batch = _batch(sets)
    j = similar_pairs(batch, t)
    got = list(zip(j.a.tolist(), j.b.tolist(), j.score.tolist(), strict=True))
    assert got == brute_force(batch, t)


def test_a_bucket_of_near_copies_lists_every_pair() -> None:
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**62, size=200)
    sets = []
    for i in range(300):  # 300 copies, each with its own 4 tokens: pairwise J = 196/204
        own = base.copy()
        own[rng.choice(200, 4, replace=False)] = 2**62 + 4 * i + np.arange(4)
        sets.append(own.tolist())
    j = similar_pairs(_batch(sets), 0.9)
    assert len(j.a) == 300 * 299 // 2 and (j.score >= 0.9).all()


def test_documents_sharing_a_template_are_not_all_compared() -> None:
    # 1,000 documents: one 150-token template and 60 tokens of their own (J ~ 0.55 between
    # any two): at t = 0.8 the rare prefixes never meet, so almost nothing is verified.
    rng = np.random.default_rng(6)
    template = rng.integers(0, 2**62, size=150).tolist()
    sets = [template + (2**62 + 60 * i + np.arange(60)).tolist() for i in range(1000)]
    j = similar_pairs(_batch(sets), 0.8)
    assert len(j.a) == 0 and j.verified < 1000
