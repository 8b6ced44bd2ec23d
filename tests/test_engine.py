"""Deduplication end to end in the library: accuracy against brute force, invariances, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import EMPTY
from neardup.engine import Deduplicator, exact_groups
from neardup.errors import NeardupError, ParamError
from neardup.params import (
    DedupParams,
    FeatureParams,
    MinhashParams,
    SampledParams,
    SimhashMethodParams,
)
from neardup.planner import features_for, sketch_for
from neardup.shingles import content_hashes, shingle_batch
from neardup.testing.synth import near_duplicate_corpus, random_documents
from neardup.testing.truth import exact_similar_pairs, precision_recall


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    base = random_documents(1500, seed=7, words=(40, 300))
    return list(near_duplicate_corpus(base, 3000, 0.5, seed=11, n_empty=5).texts)


def reference_expansion(
    texts: list[str], a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """All document pairs implied by accepted pairs between exact-duplicate groups."""
    canonical, _ = content_hashes(texts)
    _, group = np.unique(canonical, return_inverse=True)
    group = group.ravel()
    members: dict[int, list[int]] = {}
    for i, g in enumerate(group.tolist()):
        members.setdefault(g, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        for u in members[group[x]]:
            for v in members[group[y]]:
                if u != v:
                    pairs.add((min(u, v), max(u, v)))
    out = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    return out[:, 0], out[:, 1]


def _truth(texts: list[str], threshold: float) -> tuple[np.ndarray, np.ndarray]:
    ta, tb, _ = exact_similar_pairs(shingle_batch(texts), threshold=threshold)
    return ta, tb


def test_exact_verification_has_precision_one_and_high_recall(corpus: list[str]) -> None:
    dedup = Deduplicator(DedupParams(threshold=0.8, verify="exact"), pairs="all").fit(corpus)
    fa, fb = dedup.all_pairs()[:2]
    precision, recall, *_ = precision_recall(fa, fb, *_truth(corpus, 0.8))
    assert precision == 1.0
    assert recall >= 0.98


def test_sketch_verification_is_accurate(corpus: list[str]) -> None:
    dedup = Deduplicator(DedupParams(threshold=0.8, verify="sketch"), pairs="all").fit(corpus)
    fa, fb = dedup.all_pairs()[:2]
    precision, recall, *_ = precision_recall(fa, fb, *_truth(corpus, 0.8))
    assert precision >= 0.97
    assert recall >= 0.97


def test_batch_size_changes_nothing(corpus: list[str]) -> None:
    params = DedupParams(threshold=0.7)
    small = Deduplicator(params).fit(corpus[:800], batch_size=37)
    large = Deduplicator(params).fit(corpus[:800], batch_size=5000)
    assert np.array_equal(small.clusters_, large.clusters_)
    assert np.array_equal(small.kept_, large.kept_)
    for x, y in zip(small.pairs_, large.pairs_, strict=True):
        assert np.array_equal(x, y)


def test_thousands_of_identical_documents_form_one_cluster_cheaply() -> None:
    texts = ["The same boilerplate footer, repeated on every page of the site."] * 5000
    texts += ["a genuinely different document about something else entirely, with words"]
    dedup = Deduplicator(DedupParams(threshold=0.8)).fit(texts)
    assert dedup.stats_.exact_duplicates == 4999
    assert dedup.stats_.candidate_pairs == 0  # only one representative reaches candidates
    assert set(dedup.clusters_[:5000].tolist()) == {0}
    assert dedup.kept_.sum() == 2


def test_empty_documents_are_reported_and_kept_apart() -> None:
    texts = ["", "  ...  ", "words in a real document here", ""]
    dedup = Deduplicator(DedupParams()).fit(texts)
    assert dedup.empty_.tolist() == [True, True, False, True]
    assert dedup.clusters_.tolist() == [0, 1, 2, 3]
    assert dedup.kept_.all()
    assert dedup.stats_.empty == 3


def test_keep_longest_keeps_the_most_complete_copy() -> None:
    base = " ".join(f"word{i}" for i in range(60))
    texts = [base, base + " and a longer ending", base.upper()]
    dedup = Deduplicator(DedupParams(threshold=0.8, keep="longest", verify="exact")).fit(texts)
    assert dedup.clusters_.tolist() == [0, 0, 0]
    assert dedup.kept_.tolist() == [False, True, False]


def test_unrelated_documents_are_not_clustered() -> None:
    texts = random_documents(300, seed=3, words=(50, 100))
    dedup = Deduplicator(DedupParams(threshold=0.5)).fit(texts)
    assert dedup.kept_.all()
    assert dedup.stats_.clusters == 0


def test_explicit_features_are_used_and_bottomk_is_rejected() -> None:
    params = DedupParams(method=MinhashParams(features=FeatureParams(6, 14, 2)))
    assert sketch_for(params).t == 84
    with pytest.raises(ParamError, match="bottom-k"):
        MinhashParams(sketch="bottomk")  # type: ignore[arg-type]


def test_planned_candidates_keep_recall_at_the_threshold() -> None:
    from neardup.features import acceptance

    for threshold in (0.5, 0.7, 0.8, 0.9, 0.95):
        fp = features_for(DedupParams(threshold=threshold))
        assert float(acceptance(threshold, fp.k, fp.s, fp.r)) >= 0.99
        assert fp.t <= 256


def test_simhash_method_pairs_equal_brute_force_within_k_bits(corpus: list[str]) -> None:
    from neardup.simhash import SimhashParams, simhash
    from neardup.testing import hamming_pairs_reference

    simhash_method = SimhashMethodParams(max_distance=4)
    dedup = Deduplicator(DedupParams(method=simhash_method, removal="components")).fit(corpus)
    canonical, _ = content_hashes(corpus)
    _, first = np.unique(canonical, return_index=True)
    reps = np.sort(first[canonical[first] != np.uint64(2**64 - 1)])
    fps = simhash([corpus[i] for i in reps], SimhashParams())
    ra, rb, rd = hamming_pairs_reference(fps, 4)
    a, b, score = dedup.pairs_
    near = score < 1.0  # exact-duplicate links have score 1.0; so do distance-0 simhash pairs
    want = {(int(reps[x]), int(reps[y])) for x, y, d in zip(ra, rb, rd, strict=True) if d > 0}
    assert {(int(x), int(y)) for x, y in zip(a[near], b[near], strict=True)} == want
    assert np.allclose(np.sort(1 - score[near]) * 64, np.sort(rd[rd > 0]))


def test_simhash_idf_weighting_fits_the_table_on_the_corpus(corpus: list[str]) -> None:
    from neardup.simhash import fit_idf_texts

    params = DedupParams(method=SimhashMethodParams(weighting="idf", max_distance=3))
    auto = Deduplicator(params).fit(iter(corpus[:600]))
    table = fit_idf_texts(corpus[:600], params.simhash_params())
    given = Deduplicator(params, idf=table).fit(corpus[:600])
    assert np.array_equal(auto.clusters_, given.clusters_)
    assert auto.idf is not None and auto.idf.n_docs == 600


@pytest.mark.parametrize("verify", ["exact", "sketch"])
def test_scores_do_not_depend_on_how_batches_are_gathered(corpus: list[str], verify: str) -> None:
    from neardup.resemblance import pair_scores

    params = DedupParams(threshold=0.6, verify=verify)  # type: ignore[arg-type]
    small = Deduplicator(params).fit(corpus[:900], batch_size=13)
    whole = Deduplicator(params).fit(corpus[:900], batch_size=10_000)
    for x, y in zip(small.pairs_, whole.pairs_, strict=True):
        assert np.array_equal(x, y)
    if verify == "exact":
        a, b, score = small.pairs_
        assert np.allclose(score, pair_scores(shingle_batch(corpus[:900]), a, b))


def test_hybrid_verification_rechecks_borderline_pairs_exactly(corpus: list[str]) -> None:
    dedup = Deduplicator(DedupParams(threshold=0.8, verify="hybrid"), pairs="all").fit(corpus)
    assert dedup.stats_.rechecked_pairs > 0
    fa, fb = dedup.all_pairs()[:2]
    precision, recall, *_ = precision_recall(fa, fb, *_truth(corpus, 0.8))
    assert precision >= 0.995
    assert recall >= 0.98


def test_all_pairs_needs_every_pair_asked_for_up_front(corpus: list[str]) -> None:
    dedup = Deduplicator(DedupParams(threshold=0.8)).fit(corpus[:300])
    with pytest.raises(NeardupError, match="pairs='all'"):
        dedup.all_pairs()


def test_hybrid_without_a_way_to_fetch_texts_is_a_clear_error(corpus: list[str]) -> None:
    dedup = Deduplicator(DedupParams(threshold=0.8, verify="hybrid"))
    dedup.partial_fit(corpus)
    with pytest.raises(ParamError, match="fetch"):
        dedup.finish()


def test_super_features_find_the_same_pairs_as_counting(corpus: list[str]) -> None:
    feats = FeatureParams(6, 14, 2)
    counted = Deduplicator(DedupParams(threshold=0.7, method=MinhashParams(features=feats)))
    counted.fit(corpus)
    method = MinhashParams(features=feats, super_features=True)
    looked_up = Deduplicator(DedupParams(threshold=0.7, method=method)).fit(corpus)
    for x, y in zip(counted.pairs_, looked_up.pairs_, strict=True):
        assert np.array_equal(x, y)
    with pytest.raises(ParamError, match="super features need C"):  # 1,001 keys a document
        DedupParams(method=MinhashParams(features=FeatureParams(14, 4, 4), super_features=True))


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9])
def test_planned_super_features_keep_within_their_keys_and_find_pairs_at_the_threshold(
    threshold: float,
) -> None:
    """The planner's own plan (k=38, r=3 at 0.8) would need 8,436 keys a document; with super
    features it plans within MAX_SUPER_FEATURES keys instead of refusing, and still accepts
    pairs at the threshold (a fixed small plan such as 6,14,2 finds 3% of them at 0.8)."""
    from neardup.params import MAX_SUPER_FEATURES
    from neardup.planner import evaluate, features_for

    params = DedupParams(threshold=threshold, method=MinhashParams(super_features=True))
    fp = features_for(params)
    assert math.comb(fp.k, fp.r) <= MAX_SUPER_FEATURES
    assert evaluate(fp, threshold).p_at_threshold > 0.99
    assert Deduplicator(params).method.features == fp


@pytest.mark.parametrize("verify", ["sketch", "hybrid", "exact"])
def test_an_empty_collection_gives_empty_results(verify: str) -> None:
    dedup = Deduplicator(DedupParams(verify=verify)).fit([])  # type: ignore[arg-type]
    assert dedup.clusters_.shape == dedup.kept_.shape == (0,)
    assert dedup.stats_.documents == 0 and len(dedup.pairs_[0]) == 0


def test_all_pairs_expands_exact_groups_like_the_brute_force_expansion(corpus: list[str]) -> None:
    dedup = Deduplicator(DedupParams(threshold=0.8, verify="exact"), pairs="all").fit(corpus[:1200])
    a, b, score = dedup.all_pairs()
    want_a, want_b = reference_expansion(corpus[:1200], dedup.pairs_[0], dedup.pairs_[1])
    assert np.array_equal(a, want_a) and np.array_equal(b, want_b)
    assert np.all(score >= 0.8)


def test_a_third_method_plugs_in_without_touching_the_engine() -> None:
    """Exact Jaccard over all pairs, as a method object: the engine composes it unchanged."""
    from neardup.methods import Candidates, Signatures
    from neardup.textbatch import TextBatch

    class AllPairsJaccard:
        name = "all-pairs"
        min_shared = 1

        def signatures(self, batch: TextBatch) -> Signatures:
            sets = batch.sets()
            rows = [frozenset(sets.doc(i).tolist()) for i in range(len(sets))]
            return Signatures(np.array([*rows, None], dtype=object)[:-1])

        def candidates(self, sigs: Signatures, jobs: int = 1) -> Candidates:
            n = len(sigs)
            a, b = np.triu_indices(n, k=1)
            score = np.array(
                [
                    len(sigs.data[i] & sigs.data[j]) / max(len(sigs.data[i] | sigs.data[j]), 1)
                    for i, j in zip(a.tolist(), b.tolist(), strict=True)
                ]
            )
            return Candidates(a.astype(np.int64), b.astype(np.int64), score, score >= 0.5)

        def lookup_keys(self, sigs: Signatures) -> np.ndarray:
            return np.zeros((len(sigs), 0), dtype=np.uint64)

        def score(self, x: Signatures, y: Signatures) -> np.ndarray:
            return np.ones(len(x))

        def accept(self, score: np.ndarray) -> np.ndarray:
            return score >= 0.5

        def describe(self) -> str:
            return "exact Jaccard of every pair"

    texts = random_documents(40, seed=3, words=(20, 40))
    texts = [*texts, texts[0] + " tail words here", texts[5].upper(), "x"]
    params = DedupParams(threshold=0.5, verify="none")
    dedup = Deduplicator(params, method=AllPairsJaccard(), pairs="all").fit(texts)
    truth_a, truth_b, _ = exact_similar_pairs(shingle_batch(texts), threshold=0.5)
    a, b, _ = dedup.all_pairs()
    assert {(int(x), int(y)) for x, y in zip(a, b, strict=True)} == {
        (int(x), int(y)) for x, y in zip(truth_a, truth_b, strict=True)
    }
    assert not dedup.kept_[40] and dedup.duplicate_of_[40] == 0
    assert not dedup.kept_[41] and dedup.duplicate_of_[41] == 5


def test_options_that_do_nothing_under_a_method_are_refused() -> None:
    with pytest.raises(ParamError, match="threshold does nothing"):
        DedupParams(threshold=0.7, method=SimhashMethodParams())
    verified = DedupParams(threshold=0.7, method=SimhashMethodParams(), verify="exact")
    assert verified.resolved_verify == "exact" and verified.resolved_threshold == 0.7
    assert DedupParams().resolved_verify == "hybrid"
    assert DedupParams(method=SimhashMethodParams()).resolved_verify == "none"
    assert DedupParams(threshold=1).resolved_threshold == 1.0


def test_simhash_pairs_confirmed_by_jaccard_have_precision_one(corpus: list[str]) -> None:
    params = DedupParams(threshold=0.8, method=SimhashMethodParams(max_distance=6), verify="exact")
    dedup = Deduplicator(params, pairs="all").fit(corpus[:1500])
    fa, fb = dedup.all_pairs()[:2]
    precision, *_ = precision_recall(fa, fb, *_truth(corpus[:1500], 0.8))
    assert precision == 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from([0, 1, 7, 2**63, 2**64 - 2, 2**64 - 1]), max_size=30),
    st.integers(1, 400),
)
def test_exact_groups_name_the_first_document_with_each_content_hash(
    pool: list[int], repeat: int
) -> None:
    """Few documents and thousands (``repeat`` copies of the list: the radix sort's sizes)."""
    hashes = pool * repeat
    first: dict[int, int] = {}
    want = [i if h == EMPTY else first.setdefault(h, i) for i, h in enumerate(hashes)]
    assert exact_groups(np.array(hashes, dtype=np.uint64)).tolist() == want


def test_finish_twice_raises_neardup_error() -> None:
    dd = Deduplicator().fit(["a b c"])
    with pytest.raises(NeardupError, match="has finished; create a new one"):
        dd.finish()


def test_deduplicator_refuses_params_that_are_not_dedup_params() -> None:
    with pytest.raises(ParamError, match="params must be a DedupParams, got dict"):
        Deduplicator({"threshold": 0.8}).fit(["a"])  # type: ignore[arg-type]


@pytest.mark.parametrize("texts", [[], ["", "!!"], ["one two", "three four"], ["a", "b", "c", "d"]])
def test_sampled_containment_keeps_everything_when_no_document_keeps_a_shingle(
    texts: list[str],
) -> None:
    # no fingerprint 0 mod m: the runs of equal keys were computed from none (a numpy error)
    for m in (2, 2**20):
        dedup = Deduplicator(DedupParams(method=SampledParams(m=m))).fit(texts)
        assert dedup.kept_.tolist() == [True] * len(texts)


TWO = [
    "The cat sat on the mat today and the dog slept.",
    "the cat sat on the mat today, and the dog slept!",
]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: Deduplicator(method="minhash"),
            r"method must be a Method object or None, got str",
        ),  # type: ignore[arg-type]
        (
            lambda: Deduplicator(
                DedupParams(method=SimhashMethodParams(weighting="idf")),
                idf="x",  # type: ignore[arg-type]
            ),
            r"idf must be an IdfTable or None, got str",
        ),
    ],
)
def test_constructor_refuses_a_method_or_idf_of_the_wrong_type(make: object, message: str) -> None:
    with pytest.raises(ParamError, match=message):
        make().fit(TWO)  # type: ignore[operator]


@pytest.mark.parametrize("nbytes", ["10", -5, 2.5, True])
def test_partial_fit_refuses_nbytes_that_is_not_a_non_negative_integer(nbytes: object) -> None:
    with pytest.raises(ParamError, match=r"nbytes must be an integer from 0"):
        Deduplicator().partial_fit(TWO, nbytes=nbytes)  # type: ignore[arg-type]
    assert Deduplicator().partial_fit(TWO, nbytes=0).finish().stats_.bytes_in == 0


def test_fit_refuses_a_progress_that_is_not_callable() -> None:
    with pytest.raises(ParamError, match=r"progress must be None or a callable"):
        Deduplicator().fit(TWO, progress=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("jobs", ["2", 0, -1, 2.5])
def test_feed_checks_jobs_as_the_constructor_does(jobs: object) -> None:
    with pytest.raises(ParamError, match=r"jobs must be an integer from 1 to 1024"):
        Deduplicator().feed([TWO], lambda b: b, lambda b: None, jobs=jobs)  # type: ignore[arg-type]


@pytest.mark.parametrize("texts", [np.array("one text"), np.array([["a b c", "d e f"]])])
def test_fit_refuses_an_array_that_is_not_one_dimensional(texts: np.ndarray) -> None:
    with pytest.raises(TypeError, match=r"texts must be a list of strings, got a \d-d array"):
        Deduplicator().fit(texts)


@pytest.mark.parametrize(
    ("fetch", "message"),
    [
        (lambda docs: None, r"it returned NoneType"),
        (lambda docs: [], r"it returned 0 texts"),
        (lambda docs: [b"x"] * len(docs), r"item 0 \(document \d+\) is bytes"),
    ],
)
def test_finish_says_fetch_texts_must_return_one_string_per_document(
    corpus: list[str], fetch: object, message: str
) -> None:
    dedup = Deduplicator(DedupParams(threshold=0.8, verify="hybrid")).partial_fit(corpus)
    with pytest.raises(NeardupError, match=r"one string per document asked for .*" + message):
        dedup.finish(fetch_texts=fetch)  # type: ignore[arg-type]


def test_finish_refuses_a_fetch_texts_that_is_not_callable() -> None:
    with pytest.raises(ParamError, match=r"fetch_texts must be None or a callable"):
        Deduplicator().partial_fit(TWO).finish(fetch_texts="texts.jsonl")  # type: ignore[arg-type]
