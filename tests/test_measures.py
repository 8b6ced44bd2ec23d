"""Unjustified removals and residual duplicates on hand-made graphs with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from neardup.errors import InputError
from neardup.params import ShingleParams
from neardup.removal import components, keep_aware, priority_ranks
from neardup.shingles import shingle_batch
from neardup.testing import (
    exact_similar_pairs,
    removal_summary,
    residual_duplicates,
    unjustified_removals,
)
from neardup.testing.synth import near_duplicate_corpus, random_documents


def test_chain_components_remove_c_unjustified_keep_aware_does_not() -> None:
    a, b, s = np.array([0, 1]), np.array([1, 2]), np.array([0.9, 0.8])  # A~B, B~C, A!~C
    pr = priority_ranks(3)
    comp = components(3, a, b, s, pr)
    assert unjustified_removals(comp.kept, a, b).tolist() == [2]
    ka = keep_aware(3, a, b, s, pr)
    assert unjustified_removals(ka.kept, a, b).tolist() == []
    assert [x.tolist() for x in residual_duplicates(ka.kept, a, b)] == [[], []]


def test_residual_duplicates_are_kept_pairs_still_similar_once_each() -> None:
    kept = np.array([True, True, False, True])
    a, b = np.array([1, 0, 3, 2]), np.array([0, 1, 1, 3])  # (0, 1) twice, reversed
    ra, rb = residual_duplicates(kept, a, b)
    assert ra.tolist() == [0, 1] and rb.tolist() == [1, 3]
    assert unjustified_removals(kept, a, b).tolist() == []  # 2 has kept neighbour 3


def test_removed_document_without_true_pairs_is_unjustified() -> None:
    kept = np.array([True, False, False])
    assert unjustified_removals(kept, [0], [1]).tolist() == [2]


def test_summary_counts_pairs_and_removal_costs() -> None:
    kept = np.array([True, False, False, True])
    true_a, true_b = np.array([0, 1, 0]), np.array([1, 2, 3])
    found_a, found_b = np.array([0, 1]), np.array([1, 3])
    summary = removal_summary(kept, found_a, found_b, true_a, true_b)
    assert summary == {
        "precision": 0.5,
        "recall": 1 / 3,
        "tp": 1,
        "fp": 1,
        "fn": 2,
        "documents": 4,
        "removed": 2,
        "unjustified_removals": 1,  # 2's only true neighbour (1) is removed
        "justified_removals": 1,
        "residual_duplicates": 1,  # (0, 3)
        "residual_documents": 2,
    }


def test_keep_aware_on_exact_pairs_has_no_unjustified_removal_or_residual_duplicate() -> None:
    base = random_documents(200, seed=3, words=(30, 80))
    texts = list(near_duplicate_corpus(base, 400, 0.5, seed=5).texts)
    batch = shingle_batch(texts, ShingleParams(w=3))
    a, b, s = exact_similar_pairs(batch, threshold=0.5)
    r = keep_aware(len(texts), a, b, s, priority_ranks(len(texts)))
    summary = removal_summary(r.kept, a, b, a, b)
    assert summary["removed"] > 0
    assert summary["unjustified_removals"] == 0 and summary["residual_duplicates"] == 0


def test_bad_inputs_raise() -> None:
    with pytest.raises(InputError, match="bool"):
        unjustified_removals(np.array([1, 0]), [0], [1])
    with pytest.raises(InputError, match="outside"):
        residual_duplicates(np.array([True, False]), [0], [2])
