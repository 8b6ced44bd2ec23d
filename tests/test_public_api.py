"""The public names are re-exported on purpose: this list changes only deliberately."""

from __future__ import annotations

import neardup

EXPECTED = {
    "EMPTY", "FORMAT_VERSION", "CandidateResult", "DedupParams", "DedupStats", "Deduplicator",
    "FeatureParams", "HammingIndex", "IndexCorrupt", "IndexMismatchError", "InputError", "NeardupError",
    "OutputError",
    "ParamError", "ParamTypeError", "Plan", "ShingleBatch", "ShingleParams", "SketchParams", "__version__",
    "acceptance", "candidate_pairs", "canonical_tokens", "choose_representatives",
    "cluster_labels", "containment", "content_hashes", "dice", "estimate", "estimate_pairs",
    "expected_error", "features", "hamming_pairs", "jaccard", "pair_scores", "plan", "plan_tables",
    "shingle_batch", "shingle_sequence", "sketch", "sketch_texts",
    "IdfTable", "SimhashParams", "fit_idf_texts", "simhash",
    "Method", "MinHashMethod", "SimHashMethod", "Signatures", "MinhashParams",
    "SimhashMethodParams",
    "Index", "Match", "SampledMethod", "SampledParams",
    "Client",
    "BenchmarkMatch", "DecontaminateParams", "Decontaminator",
}  # fmt: skip


def test_all_lists_exactly_the_public_api() -> None:
    assert set(neardup.__all__) == EXPECTED
    for name in neardup.__all__:
        assert hasattr(neardup, name), name


def test_every_error_is_a_neardup_error() -> None:
    for cls in (
        neardup.ParamError,
        neardup.InputError,
        neardup.IndexMismatchError,
        neardup.IndexCorrupt,
        neardup.OutputError,
        neardup.ParamTypeError,
    ):
        assert issubclass(cls, neardup.NeardupError)
    assert issubclass(neardup.ParamTypeError, TypeError)  # what a wrong type raised before


def test_readme_library_example_runs() -> None:
    texts = ["The cat sat on the mat today.", "the cat sat on the mat, today!", "Something else."]
    dedup = neardup.Deduplicator(neardup.DedupParams(threshold=0.8)).fit(texts)
    assert dedup.clusters_.tolist() == [0, 0, 2]
    assert dedup.kept_.tolist() == [True, False, True]
