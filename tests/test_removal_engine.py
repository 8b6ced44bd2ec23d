"""Keep-aware removal inside the engine: the same kept set and duplicates whatever the batching."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.engine import Deduplicator
from neardup.params import DedupParams, MinhashParams
from neardup.testing.synth import near_duplicate_corpus, random_documents


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    base = random_documents(250, seed=3, words=(30, 200))
    return list(near_duplicate_corpus(base, 420, 0.5, seed=5, n_empty=3).texts)


@pytest.mark.parametrize(
    "params",
    [
        DedupParams(threshold=0.7),
        DedupParams(threshold=0.5, keep="longest"),
        DedupParams(threshold=0.7, verify="exact"),
        DedupParams(threshold=0.7, method=MinhashParams(max_bucket=2)),
        DedupParams(threshold=0.7, removal="components", method=MinhashParams(max_bucket=2)),
    ],
    ids=["hybrid", "longest", "exact", "tiny-max-bucket", "components-big-buckets"],
)
def test_keep_aware_answer_does_not_depend_on_the_batch_size(
    corpus: list[str], params: DedupParams
) -> None:
    runs = [Deduplicator(params).fit(corpus, batch_size=size) for size in (1, 7, 1000)]
    first = runs[0]
    assert 0 < first.stats_.removed < len(corpus)  # the corpus has duplicates to remove
    assert np.array_equal(first.duplicate_of_ >= 0, ~first.kept_)
    if params.removal == "components":  # pairs listed: tiny buckets are chained
        assert first.stats_.big_buckets > 0
    for other in runs[1:]:
        assert np.array_equal(first.kept_, other.kept_)
        assert np.array_equal(first.duplicate_of_, other.duplicate_of_)
        assert np.array_equal(first.duplicate_score_, other.duplicate_score_, equal_nan=True)
        assert np.array_equal(first.clusters_, other.clusters_)
        for x, y in zip(first.pairs_, other.pairs_, strict=True):
            assert np.array_equal(x, y)


def test_keep_aware_removal_ignores_the_bucket_size_limit(corpus: list[str]) -> None:
    # Leaders are found in buckets of any size: nothing is chained, so the limit on listed
    # bucket pairs changes nothing for keep-aware removal.
    small = Deduplicator(DedupParams(threshold=0.7, method=MinhashParams(max_bucket=2)))
    default = Deduplicator(DedupParams(threshold=0.7))
    a, b = small.fit(corpus), default.fit(corpus)
    assert np.array_equal(a.kept_, b.kept_)
    assert np.array_equal(a.duplicate_of_, b.duplicate_of_)
    assert np.array_equal(a.duplicate_score_, b.duplicate_score_, equal_nan=True)
