"""Every pair at or above the threshold: buckets' pairs verified, big buckets joined exactly."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.engine import Deduplicator
from neardup.params import DedupParams, MinhashParams
from neardup.shingles import shingle_batch
from neardup.testing import exact_similar_pairs, precision_recall
from neardup.testing.synth import near_duplicate_corpus, random_documents


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    """Near-copies by the hundred (one big family) among ordinary near-duplicates."""
    base = random_documents(300, seed=61, words=(20, 150))
    texts = list(near_duplicate_corpus(base, 600, 0.5, seed=62, n_empty=2).texts)
    words = random_documents(1, seed=63, words=(120, 120))[0].split()
    rng = np.random.default_rng(64)
    for _ in range(300):
        w = list(words)
        for i in rng.choice(len(w), int(rng.integers(1, 8)), replace=False).tolist():
            w[i] = f"w{int(rng.integers(10**6))}"
        texts.append(" ".join(w))
    order = np.random.default_rng(65).permutation(len(texts))
    return [texts[i] for i in order.tolist()]


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9])
@pytest.mark.parametrize("verify", ["hybrid", "exact"])
@pytest.mark.parametrize("removal", ["keep-aware", "components"])
def test_all_pairs_are_exact_and_complete_with_big_buckets_joined(
    corpus: list[str], threshold: float, verify: str, removal: str
) -> None:
    params = DedupParams(
        threshold=threshold, verify=verify, removal=removal, method=MinhashParams(max_bucket=20)
    )
    dedup = Deduplicator(params, pairs="all").fit(corpus)
    assert dedup.stats_.joined_docs > 0  # the family's buckets were joined, not listed
    a, b, score = dedup.all_pairs()
    ta, tb, ts = exact_similar_pairs(shingle_batch(corpus), threshold=threshold)
    precision, recall, *_ = precision_recall(a, b, ta, tb)
    assert precision == 1.0 and recall >= 0.995
    truth = dict(zip(zip(ta.tolist(), tb.tolist(), strict=True), ts.tolist(), strict=True))
    exact = [truth[x, y] for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    if verify == "exact":
        assert np.array_equal(score, exact)
    assert (score >= threshold).all()


def test_the_big_bucket_limit_changes_no_pair(corpus: list[str]) -> None:
    def pairs(limit: int) -> tuple[np.ndarray, ...]:
        params = DedupParams(threshold=0.8, verify="exact", method=MinhashParams(max_bucket=limit))
        return Deduplicator(params, pairs="all").fit(corpus).all_pairs()

    for x, y in zip(pairs(20), pairs(10**6), strict=True):
        assert np.array_equal(x, y)


def test_keep_aware_removal_is_the_same_with_or_without_every_pair(corpus: list[str]) -> None:
    params = DedupParams(threshold=0.8)
    alone = Deduplicator(params).fit(corpus)
    listed = Deduplicator(params, pairs="all").fit(corpus)
    assert np.array_equal(alone.kept_, listed.kept_)
    assert np.array_equal(alone.duplicate_of_, listed.duplicate_of_)
