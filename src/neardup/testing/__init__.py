"""Test and benchmark helpers, kept out of the core namespace (as ``numpy.testing``).

- ``neardup.testing.synth``: synthetic corpora with controlled edits (exact, cosmetic and near
  copies at chosen edit rates) for tests and benchmarks.
- ``neardup.testing.truth``: brute-force ground truth (every pair at or above a threshold of an
  exact measure) and precision / recall of found pairs against it.
- ``neardup.testing.measures``: what a kept set cost against true pairs (unjustified removals,
  residual duplicates) beside pair precision / recall.
- ``neardup.testing.references``: O(n^2) reference answers for the fast search paths.
- ``neardup.testing.slow_clients``: slowloris connections against ``neardup serve`` (a class, and
  ``python -m neardup.testing.slow_clients`` to run them in a process of their own).
"""

from __future__ import annotations

from .measures import removal_summary, residual_duplicates, unjustified_removals
from .references import hamming_pairs_reference
from .synth import (
    cosmetic,
    cosmetic_batch,
    edit,
    edit_batch,
    near_duplicate_corpus,
    pseudo_vocabulary,
    random_documents,
)
from .truth import (
    cluster_precision_recall,
    exact_similar_pairs,
    pairs_from_labels,
    precision_recall,
    reference_similar_pairs,
)

__all__ = [
    "cluster_precision_recall",
    "cosmetic",
    "cosmetic_batch",
    "edit",
    "edit_batch",
    "exact_similar_pairs",
    "hamming_pairs_reference",
    "near_duplicate_corpus",
    "pairs_from_labels",
    "precision_recall",
    "pseudo_vocabulary",
    "random_documents",
    "reference_similar_pairs",
    "removal_summary",
    "residual_duplicates",
    "unjustified_removals",
]
