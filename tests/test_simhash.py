"""SimHash fingerprints equal a pure-Python Charikar reference, are batch-invariant and pinned."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.errors import IndexMismatchError, InputError, ParamError
from neardup.hamming import hamming_pairs
from neardup.params import ShingleParams
from neardup.shingles import shingle_batch, shingle_sequence
from neardup.simhash import (
    IdfTable,
    SimhashParams,
    fit_idf,
    fit_idf_texts,
    simhash,
    simhash_batch,
    simhash_from_features,
)
from tests.reference import fmix64, splitmix64

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MASK = 2**64 - 1
U64 = st.integers(min_value=0, max_value=MASK)


# -- an independent pure-Python reference ---------------------------------------------------


def simhash_reference(features: list[int], weights: list[float] | None, seed: int) -> int:
    """Charikar: V[i] += w where bit i of the (seeded) feature hash is 1, -= w where it is 0."""
    mix = splitmix64(seed)
    v: list[float] = [0] * 64  # ints when unweighted: exact
    for j, fp in enumerate(features):
        h = fmix64(fp ^ mix)
        w = 1 if weights is None else weights[j]
        for i in range(64):
            v[i] += w if (h >> i) & 1 else -w
    return sum(1 << i for i in range(64) if v[i] > 0)


@st.composite
def feature_docs(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """Feature hashes with repeats, split into documents (some empty)."""
    pool = draw(st.lists(U64, min_size=1, max_size=12))
    fps = draw(st.lists(st.sampled_from(pool), max_size=300))
    cuts = sorted(draw(st.lists(st.integers(0, len(fps)), max_size=6)))
    return fps, [0, *cuts, len(fps)]


def split_docs(fps: list[int], offsets: list[int]) -> list[list[int]]:
    return [fps[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


@SETTINGS
@given(feature_docs(), st.integers(0, 2**63 - 1))
def test_count_weighted_kernel_equals_reference(
    docs: tuple[list[int], list[int]], seed: int
) -> None:
    fps, offsets = docs
    got = simhash_from_features(np.array(fps, np.uint64), np.array(offsets), seed=seed)
    want = [simhash_reference(d, None, seed) for d in split_docs(fps, offsets)]
    assert got.tolist() == want


@SETTINGS
@given(feature_docs(), st.data())
def test_float_weighted_kernel_equals_reference(
    docs: tuple[list[int], list[int]], data: st.DataObject
) -> None:
    fps, offsets = docs
    weights = data.draw(
        st.lists(st.floats(0.01, 50.0), min_size=len(fps), max_size=len(fps)), label="w"
    )
    got = simhash_from_features(np.array(fps, np.uint64), np.array(offsets), weights, seed=3)
    want = [
        simhash_reference(d, weights[offsets[i] : offsets[i + 1]], 3)
        for i, d in enumerate(split_docs(fps, offsets))
    ]
    assert got.tolist() == want


def test_count_kernel_is_exact_past_the_255_feature_lane_flush() -> None:
    rng = np.random.default_rng(5)
    pool = rng.integers(0, 2**64, 7, dtype=np.uint64)
    fps = pool[rng.integers(0, 7, 5000)]
    offsets = np.array([0, 254, 255, 256, 1000, 5000])
    got = simhash_from_features(fps, offsets, seed=9)
    want = [simhash_reference(d, None, 9) for d in split_docs(fps.tolist(), offsets.tolist())]
    assert got.tolist() == want
    # unit float weights are count weighting
    assert simhash_from_features(fps, offsets, np.ones(5000), seed=9).tolist() == want


@SETTINGS
@given(
    st.lists(st.text(max_size=60), max_size=12),
    st.integers(1, 12),
    st.sampled_from(["char", "word", "shingle"]),
    st.sampled_from(["binary", "count"]),
)
def test_texts_match_reference_on_their_features_and_batching_changes_nothing(
    texts: list[str], batch: int, features: str, weighting: str
) -> None:
    params = SimhashParams(features=features, weighting=weighting)  # type: ignore[arg-type]
    whole = simhash_batch(texts, params)
    fps, offsets = shingle_sequence(texts, params.shingle_params())
    docs = split_docs(fps.tolist(), offsets.tolist())
    if weighting == "binary":  # each distinct feature once
        docs = [list(dict.fromkeys(d)) for d in docs]
    want = [simhash_reference(d, None, 1) for d in docs]
    assert whole.fps.tolist() == want
    parts = [simhash(texts[i : i + batch], params) for i in range(0, len(texts), batch)]
    joined = np.concatenate(parts) if parts else np.empty(0, np.uint64)
    assert joined.tolist() == whole.fps.tolist()
    assert whole.empty.tolist() == [offsets[i] == offsets[i + 1] for i in range(len(texts))]


def test_char_features_ignore_case_spacing_and_punctuation() -> None:
    a, b, c = simhash(["kk really rocks!", "KK, really... ROCKS", "kk really rolls"])
    assert a == b
    assert a != c


UNICODE = "Größe — ÉTÉ naïve café 東京 straße"
GOLDEN = {
    # (features, text, q, seed) -> fingerprint, format version 1: catches silent hash drift.
    ("char", "kk really rocks!", 4, 1): 0xC0C31A20DC874FE6,
    ("word", "kk really rocks!", 4, 1): 0xA3FCF72287271C63,
    ("shingle", "kk really rocks!", 4, 1): 0x881CE746D0A6ABA9,
    ("char", "kk really rocks!", 3, 7): 0xA156791AC6CC86E0,
    ("char", UNICODE, 4, 1): 0xC6B4F19C58483000,
    ("word", UNICODE, 4, 1): 0x022C810C340A7885,
    ("shingle", UNICODE, 4, 1): 0x171469C60180A900,
}


@pytest.mark.parametrize(("key", "want"), list(GOLDEN.items()))
def test_golden_fingerprints_do_not_drift(key: tuple[str, str, int, int], want: int) -> None:
    features, text, q, seed = key
    params = SimhashParams(features=features, q=q, seed=seed)  # type: ignore[arg-type]
    assert int(simhash([text], params)[0]) == want


def test_unicode_case_folding_and_punctuation_do_not_change_fingerprints() -> None:
    a, b = simhash(["Größe — ÉTÉ naïve café 東京", "größe, été NAÏVE café東京"])
    assert a == b


def test_empty_documents_get_zero_and_are_reported_not_paired() -> None:
    texts = ["", "  !!  ", "real words here", "real words here"]
    batch = simhash_batch(texts)
    assert batch.fps[:2].tolist() == [0, 0]
    assert batch.empty.tolist() == [True, True, False, False]
    a, b, _ = hamming_pairs(batch.fps, 3, ignore=batch.empty)
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(2, 3)]


def test_near_duplicates_are_few_bits_apart_and_unrelated_texts_about_half() -> None:
    rng = np.random.default_rng(2)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    vocab = ["".join(rng.choice(letters, int(rng.integers(3, 9)))) for _ in range(3000)]
    near, far = [], []
    for _ in range(60):
        words = [vocab[j] for j in rng.integers(0, 3000, 300)]
        edited = list(words)
        edited[int(rng.integers(0, 300))] = "changed"
        other = [vocab[j] for j in rng.integers(0, 3000, 300)]
        fa, fb, fc = simhash([" ".join(words), " ".join(edited), " ".join(other)])
        near.append(bin(int(fa) ^ int(fb)).count("1"))
        far.append(bin(int(fa) ^ int(fc)).count("1"))
    assert np.mean(near) < 4
    assert 24 < np.mean(far) < 40


def test_seed_changes_fingerprints_and_is_deterministic() -> None:
    texts = ["one two three four five", "six seven eight"]
    a = simhash(texts, SimhashParams(seed=1))
    assert simhash(texts, SimhashParams(seed=1)).tolist() == a.tolist()
    assert simhash(texts, SimhashParams(seed=2)).tolist() != a.tolist()


# -- IDF -----------------------------------------------------------------------------------


@SETTINGS
@given(st.lists(feature_docs(), min_size=1, max_size=4))
def test_fit_idf_counts_documents_per_feature_across_batches(
    batches: list[tuple[list[int], list[int]]],
) -> None:
    table = fit_idf((np.array(f, np.uint64), np.array(o)) for f, o in batches)
    want: Counter[int] = Counter()
    n_docs = 0
    for fps, offsets in batches:
        for d in split_docs(fps, offsets):
            want.update(set(d))
            n_docs += 1
    assert dict(zip(table.keys.tolist(), table.df.tolist(), strict=True)) == dict(want)
    assert table.n_docs == n_docs
    # one batch or many: the same table
    fps_all = [x for f, _ in batches for x in f]
    offs: list[int] = [0]
    for _, o in batches:
        base = offs[-1]
        offs.extend([base + x for x in o[1:]])
    one = fit_idf([(np.array(fps_all, np.uint64), np.array(offs))])
    assert one.keys.tolist() == table.keys.tolist() and one.df.tolist() == table.df.tolist()


def test_idf_weights_lookup_and_idf_fingerprints_match_reference() -> None:
    corpus = ["the cat sat", "the dog sat", "the bird flew", "a cat flew"]
    params = SimhashParams(features="word", weighting="idf")
    table = fit_idf_texts(corpus, params, batch_size=3)
    the = shingle_sequence(["the"], params.shingle_params())[0]
    unseen = shingle_sequence(["zebra"], params.shingle_params())[0]
    assert table.lookup(the).tolist() == pytest.approx([np.log(5 / 4) + 1])
    assert table.lookup(unseen).tolist() == pytest.approx([np.log(5) + 1])
    texts = ["the cat sat on the mat", "zebra"]
    fps, offsets = shingle_sequence(texts, params.shingle_params())
    w = table.lookup(fps).tolist()
    want = [
        simhash_reference(d, w[offsets[i] : offsets[i + 1]], 1)
        for i, d in enumerate(split_docs(fps.tolist(), offsets.tolist()))
    ]
    assert simhash(texts, params, table).tolist() == want


def test_fit_idf_accepts_shingle_batches() -> None:
    sb = shingle_batch(["a b c", "a b"], ShingleParams(w=1))
    table = fit_idf([sb])
    assert sorted(table.df.tolist()) == [1, 2, 2] and table.n_docs == 2


def test_idf_misuse_is_refused_with_a_fix() -> None:
    table = fit_idf_texts(["a b c"], SimhashParams(features="word", weighting="idf"))
    with pytest.raises(ParamError, match="fit_idf_texts"):
        simhash(["x"], SimhashParams(weighting="idf"))
    with pytest.raises(ParamError, match="weighting='idf'"):
        simhash(["x"], SimhashParams(features="word"), table)
    with pytest.raises(IndexMismatchError, match="refit"):
        simhash(["x"], SimhashParams(features="char", weighting="idf"), table)
    with pytest.raises(ParamError, match="sorted"):
        IdfTable(np.array([3, 1], np.uint64), np.array([1, 1], np.int64), 2)


@pytest.mark.parametrize(
    "kwargs",
    [{"features": "bytes"}, {"q": 0}, {"w": 65}, {"weighting": "tfidf"}, {"seed": -1}],
)
def test_bad_params_are_refused(kwargs: dict) -> None:
    with pytest.raises(ParamError):
        SimhashParams(**kwargs)


def test_bad_feature_arrays_are_refused() -> None:
    fps = np.array([1, 2, 3], np.uint64)
    with pytest.raises(InputError, match="offsets"):
        simhash_from_features(fps, np.array([0, 2]))
    with pytest.raises(InputError, match="uint64"):
        simhash_from_features(np.array([1.0]), np.array([0, 1]))
    with pytest.raises(InputError, match="one value per feature"):
        simhash_from_features(fps, np.array([0, 3]), np.ones(2))
    with pytest.raises(InputError, match="not one string"):
        simhash("a text")  # type: ignore[arg-type]


def test_binary_weighting_sees_the_feature_set_so_repeats_cannot_dominate() -> None:
    once = "alpha beta gamma delta epsilon"
    repeated = once + " epsilon" * 50
    binary = SimhashParams(features="word", weighting="binary")
    counted = SimhashParams(features="word", weighting="count")
    assert simhash([once], binary)[0] == simhash([repeated], binary)[0]
    assert simhash([once], counted)[0] != simhash([repeated], counted)[0]
