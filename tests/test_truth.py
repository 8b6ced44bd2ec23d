"""Brute-force ground truth equals the all-pairs set reference; pair scoring arithmetic."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import InputError, ParamError
from neardup.testing.truth import (
    cluster_precision_recall,
    exact_similar_pairs,
    pairs_from_labels,
    precision_recall,
    reference_similar_pairs,
)


def to_arrays(sets: list[set[int]]) -> tuple[np.ndarray, np.ndarray]:
    fps = [np.array(sorted(s), dtype=np.uint64) for s in sets]
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(f) for f in fps])
    return (np.concatenate(fps) if fps else np.zeros(0, np.uint64)), offsets


def as_triples(a: np.ndarray, b: np.ndarray, s: np.ndarray) -> list[tuple[int, int, float]]:
    return list(zip(a.tolist(), b.tolist(), s.tolist(), strict=True))


shingle_sets = st.lists(
    st.sets(st.integers(0, 40) | st.integers(2**63, 2**64 - 1), max_size=12), max_size=30
)


@settings(max_examples=150, deadline=None)
@given(
    shingle_sets,
    st.sampled_from([0.05, 0.2, 1 / 3, 0.5, 0.8, 1.0]),
    st.sampled_from(["jaccard", "containment", "dice"]),
    st.integers(1, 500),
    st.sampled_from(["auto", "full", "prefix"]),
)
def test_sparse_brute_force_equals_all_pairs_reference(
    sets: list[set[int]], threshold: float, measure: str, block_nnz: int, method: str
) -> None:
    fps, offsets = to_arrays(sets)
    if measure == "containment" and method == "prefix":
        method = "full"
    got = exact_similar_pairs(
        fps,
        offsets,
        threshold,
        measure,  # type: ignore[arg-type]
        method=method,  # type: ignore[arg-type]
        block_nnz=block_nnz,
    )
    assert as_triples(*got) == reference_similar_pairs(sets, threshold, measure)  # type: ignore[arg-type]
    assert got[0].dtype == np.int64 and got[2].dtype == np.float64


@pytest.mark.parametrize("threshold", [0.1, 0.3, 0.7])
def test_blocks_and_methods_do_not_change_the_answer_on_a_larger_input(threshold: float) -> None:
    rng = np.random.default_rng(4)
    # a common core (like boilerplate) plus random rare shingles, some near-copies
    sets = [set(rng.integers(0, 300, rng.integers(0, 40)).tolist()) for _ in range(300)]
    sets += [set(list(s)[: max(0, len(s) - 3)]) | {1000 + k} for k, s in enumerate(sets[:100])]
    fps, offsets = to_arrays(sets)
    whole = exact_similar_pairs(fps, offsets, threshold, method="full")
    for method, block_nnz in (("full", 60), ("full", 997), ("prefix", 500), ("prefix", 10**8)):
        part = exact_similar_pairs(fps, offsets, threshold, method=method, block_nnz=block_nnz)  # type: ignore[arg-type]
        for x, y in zip(whole, part, strict=True):
            np.testing.assert_array_equal(x, y)
    assert len(whole[0]) > 0


def test_prefix_method_refuses_containment() -> None:
    fps, offsets = to_arrays([{1}, {1}])
    with pytest.raises(ParamError, match="containment"):
        exact_similar_pairs(fps, offsets, 0.5, "containment", method="prefix")


def test_accepts_a_shingle_batch_like_object() -> None:
    fps, offsets = to_arrays([{1, 2, 3}, set(), {1, 2, 3}, {2, 3, 4}])
    a, b, s = exact_similar_pairs(SimpleNamespace(fps=fps, offsets=offsets), threshold=0.5)
    assert as_triples(a, b, s) == [(0, 2, 1.0), (0, 3, 0.5), (2, 3, 0.5)]


def test_empty_documents_are_never_paired_even_with_each_other() -> None:
    fps, offsets = to_arrays([set(), set(), {5}, set()])
    a, _, _ = exact_similar_pairs(fps, offsets, 1.0)
    assert len(a) == 0


def test_unsorted_or_repeated_fingerprints_are_rejected_naming_the_document() -> None:
    fps = np.array([1, 2, 3, 9, 9], dtype=np.uint64)
    with pytest.raises(InputError, match="document 1"):
        exact_similar_pairs(fps, np.array([0, 3, 5]), 0.5)
    with pytest.raises(InputError, match="offsets"):
        exact_similar_pairs(fps, np.array([0, 3, 4]), 0.5)
    with pytest.raises(InputError, match="ShingleBatch"):
        exact_similar_pairs(fps, None, 0.5)


@pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5])
def test_threshold_outside_unit_interval_is_a_param_error(threshold: float) -> None:
    fps, offsets = to_arrays([{1}, {1}])
    with pytest.raises(ParamError, match="threshold"):
        exact_similar_pairs(fps, offsets, threshold)


def test_unknown_measure_is_a_param_error() -> None:
    fps, offsets = to_arrays([{1}, {1}])
    with pytest.raises(ParamError, match="measure"):
        exact_similar_pairs(fps, offsets, 0.5, "cosine")  # type: ignore[arg-type]


def test_precision_recall_counts_unordered_unique_pairs() -> None:
    # found: (1,2) (2,3) (3,2 again) (4,4 self) ; true: (2,1) (1,5) (6,7)
    p, r, tp, fp, fn = precision_recall([1, 2, 3, 4], [2, 3, 2, 4], [2, 1, 6], [1, 5, 7])
    assert (tp, fp, fn) == (1, 1, 2)
    assert p == 0.5 and r == pytest.approx(1 / 3)


def test_precision_recall_conventions_for_empty_sets() -> None:
    assert precision_recall([], [], [0], [1]) == (1.0, 0.0, 0, 0, 1)
    assert precision_recall([0], [1], [], []) == (0.0, 1.0, 0, 1, 0)
    assert precision_recall([], [], [], []) == (1.0, 1.0, 0, 0, 0)


def test_precision_recall_rejects_mismatched_arrays() -> None:
    with pytest.raises(InputError, match="length"):
        precision_recall([0, 1], [2], [], [])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-1, 6), max_size=40))
def test_pairs_from_labels_equals_all_pairs_within_each_label(labels: list[int]) -> None:
    a, b = pairs_from_labels(np.array(labels, dtype=np.int64))
    expected = [
        (i, j)
        for i, j in itertools.combinations(range(len(labels)), 2)
        if labels[i] >= 0 and labels[i] == labels[j]
    ]
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == expected


def test_cluster_pairs_count_chaining_as_false_positives() -> None:
    # 0~1 and 1~2 are true, so one cluster {0,1,2} also claims (0,2): a false positive.
    p, r, tp, fp, fn = cluster_precision_recall([0, 0, 0, 1], [0, 1], [1, 2])
    assert (tp, fp, fn) == (2, 1, 0) and p == pytest.approx(2 / 3) and r == 1.0


def test_pairs_from_labels_refuses_a_quadratic_blowup() -> None:
    with pytest.raises(ParamError, match="max_pairs"):
        pairs_from_labels(np.zeros(100, dtype=np.int64), max_pairs=100)


def test_ground_truth_on_a_synthetic_corpus_finds_every_exact_and_cosmetic_copy() -> None:
    """End to end with the real shingler: copies that keep canonical tokens have J = 1."""
    from neardup.params import ShingleParams
    from neardup.shingles import shingle_batch
    from neardup.testing.synth import (
        KIND_COSMETIC,
        KIND_EDITED,
        KIND_EXACT,
        KIND_ORIGINAL,
        near_duplicate_corpus,
        random_documents,
    )

    base = random_documents(300, 31, words=(30, 80))
    corpus = near_duplicate_corpus(base, 400, 0.3, seed=2, n_empty=4)
    batch = shingle_batch(corpus.texts, ShingleParams(w=3))
    a, b, s = exact_similar_pairs(batch, threshold=1.0)
    same = set(zip(a.tolist(), b.tolist(), strict=True))
    true_a, true_b = pairs_from_labels(corpus.source)
    # every pair of documents from one source whose texts are both token-identical to it
    lossless = np.isin(corpus.kind, [KIND_ORIGINAL, KIND_EXACT, KIND_COSMETIC])
    expected = {
        (i, j)
        for i, j in zip(true_a.tolist(), true_b.tolist(), strict=True)
        if lossless[i] and lossless[j]
    }
    assert expected and expected <= same
    assert all(score == 1.0 for score in s.tolist())
    # edited copies are found at lower thresholds, with precision and recall both well above 0
    a5, b5, _ = exact_similar_pairs(batch, threshold=0.3)
    p, r, *_ = precision_recall(a5, b5, true_a, true_b)
    assert p > 0.95 and 0.5 < r < 1.0
    assert (corpus.kind == KIND_EDITED).sum() > 50
