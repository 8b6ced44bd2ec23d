"""Shingle fingerprints: the fused kernel equals the reference on arbitrary Unicode text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ParamError
from neardup.params import ShingleParams, SketchParams
from neardup.shingles import ShingleBatch, content_hashes, shingle_batch, shingle_sequence
from tests import reference as ref
from tests.strategies import texts

PARAMS = [
    ShingleParams(),
    ShingleParams(w=1),
    ShingleParams(w=3, hash="rabin"),
    ShingleParams(w=4, tokens="char"),
    ShingleParams(w=2, tokens="char", hash="rabin"),
    ShingleParams(w=5, nfkc=True),
]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: p.fingerprint())
@settings(max_examples=60, deadline=None)
@given(docs=st.lists(texts, max_size=6))
def test_fast_shingles_equal_reference(params: ShingleParams, docs: list[str]) -> None:
    fps, offsets = shingle_sequence(docs, params)
    for i, doc in enumerate(docs):
        expected = ref.shingles(doc, params.w, params.tokens, params.hash, params.nfkc)
        assert fps[offsets[i] : offsets[i + 1]].tolist() == expected


@settings(max_examples=80, deadline=None)
@given(docs=st.lists(texts, max_size=6))
def test_content_hashes_equal_reference(docs: list[str]) -> None:
    canonical, raw = content_hashes(docs)
    assert canonical.tolist() == [ref.canonical_hash(d) for d in docs]
    assert raw.tolist() == [ref.raw_hash(d) for d in docs]


@settings(max_examples=40, deadline=None)
@given(docs=st.lists(texts, min_size=1, max_size=12), cut=st.integers(min_value=0, max_value=12))
def test_batching_changes_nothing(docs: list[str], cut: int) -> None:
    whole = shingle_batch(docs)
    left, right = shingle_batch(docs[:cut]), shingle_batch(docs[cut:])
    assert np.array_equal(whole.fps, np.concatenate([left.fps, right.fps]))
    assert [whole.doc(i).tolist() for i in range(len(docs))] == [
        left.doc(i).tolist() for i in range(len(left))
    ] + [right.doc(i).tolist() for i in range(len(right))]


def test_shingle_batch_is_a_sorted_set_per_document() -> None:
    batch = shingle_batch(["a b a b a b a b a b", "x y z"], ShingleParams(w=2))
    first = batch.doc(0)
    assert first.tolist() == sorted(set(first.tolist()))
    assert len(first) == 2  # "a b" and "b a"
    assert batch.sizes.tolist() == [2, 2]


def test_short_document_gets_one_shingle_and_empty_document_none() -> None:
    batch = shingle_batch(["just three words", "", "   ...!  "], ShingleParams(w=5))
    assert batch.sizes.tolist() == [1, 0, 0]
    assert batch.empty.tolist() == [False, True, True]


def test_formatting_does_not_change_fingerprints() -> None:
    a = shingle_batch(["The quick brown fox jumps over the lazy dog."])
    b = shingle_batch(["the QUICK  brown\n fox -- jumps over, the lazy DOG"])
    assert np.array_equal(a.fps, b.fps)


def test_rabin_polynomial_is_irreducible() -> None:
    def mulmod(x: int, y: int) -> int:
        r = 0
        while y:
            if y & 1:
                r ^= x
            y >>= 1
            x <<= 1
            if x >> 64 & 1:
                x ^= ref.RABIN_P
        return r

    def x_pow_2k(k: int) -> int:
        x = 2
        for _ in range(k):
            x = mulmod(x, x)
        return x

    def gcd(a: int, b: int) -> int:
        while b:
            while a and a.bit_length() >= b.bit_length():
                a ^= b << (a.bit_length() - b.bit_length())
            a, b = b, a
        return a

    # Rabin's test for degree 64: x^(2^64) = x mod P, and gcd(x^(2^32) - x, P) = 1.
    assert x_pow_2k(64) == 2
    assert gcd(x_pow_2k(32) ^ 2, ref.RABIN_P) == 1


def test_bad_parameters_are_rejected_with_a_clear_message() -> None:
    with pytest.raises(ParamError, match="shingle size"):
        ShingleParams(w=0)
    with pytest.raises(ParamError, match="tokens"):
        ShingleParams(tokens="bytes")  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(sets=st.lists(st.lists(st.integers(0, 20), max_size=60), max_size=6))
def test_distinct_per_doc_keeps_first_occurrences_in_order(sets: list[list[int]]) -> None:
    from neardup._kernels.shingles import distinct_per_doc

    fps = np.array([v for s in sets for v in s], dtype=np.uint64)
    offsets = np.cumsum([0] + [len(s) for s in sets]).astype(np.int64)
    out, out_offsets = distinct_per_doc(fps, offsets)
    for i, s in enumerate(sets):
        assert out[out_offsets[i] : out_offsets[i + 1]].tolist() == list(dict.fromkeys(s))


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, max_size=12), st.integers(1, 5))
def test_batches_of_chunks_concatenated_equal_the_batch_of_all(docs: list[str], size: int) -> None:
    """The threaded hybrid re-check shingles chunks and concatenates them."""
    parts = [shingle_batch(docs[i : i + size]) for i in range(0, len(docs), size)]
    whole, joined = shingle_batch(docs), ShingleBatch.concat(parts)
    assert np.array_equal(joined.fps, whole.fps) and np.array_equal(joined.offsets, whole.offsets)


@pytest.mark.parametrize("offsets", [[0, 2, 1, 3], [0, 5, 3], [1, 2, 3]])
def test_shingle_batch_refuses_offsets_not_non_decreasing_from_zero(offsets: list[int]) -> None:
    fps = np.array([1, 2, 3], dtype=np.uint64)
    with pytest.raises(ParamError, match="non-decreasing boundaries from 0 to len"):
        ShingleBatch(fps, np.array(offsets, dtype=np.int64))


@pytest.mark.parametrize("texts", ["abc", ["a", None], [b"a b"]])
def test_text_functions_refuse_a_str_or_non_str_texts(texts: object) -> None:
    from neardup.minhash import sketch_texts
    from neardup.simhash import simhash

    for fn in (shingle_batch, sketch_texts, simhash):
        with pytest.raises((TypeError, ParamError, ValueError), match=r"str|string"):
            fn(texts)  # type: ignore[operator]
    with pytest.raises(TypeError, match=r"not one str|texts\[\d\] is"):
        shingle_batch(texts)  # type: ignore[arg-type]


@pytest.mark.parametrize("params", [SketchParams(), None, 5])
def test_shingle_batch_refuses_params_that_are_not_shingle_params(params: object) -> None:
    with pytest.raises(ParamError, match=r"params must be a ShingleParams, got"):
        shingle_batch(["the cat sat on the mat today"], params)  # type: ignore[arg-type]


#: Fingerprints a test draws: any 64-bit value, or crowded into a few top-bit buckets (a crafted
#: document: one bucket holding many values), or a few values repeated.
_FP = st.one_of(
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**20).map(lambda v: (0xABCD << 48) | v),
    st.sampled_from([0, 1, 2**63, 2**64 - 1]),
)


@settings(max_examples=200, deadline=None)
@given(sets=st.lists(st.lists(_FP, max_size=300), max_size=6))
def test_unique_per_doc_is_each_documents_sorted_set_whatever_its_values(
    sets: list[list[int]],
) -> None:
    from neardup._kernels.shingles import unique_per_doc

    fps = np.array([v for s in sets for v in s], dtype=np.uint64)
    offsets = np.cumsum([0] + [len(s) for s in sets]).astype(np.int64)
    out, out_offsets = unique_per_doc(fps, offsets)
    assert [out[out_offsets[i] : out_offsets[i + 1]].tolist() for i in range(len(sets))] == [
        sorted(set(s)) for s in sets
    ]


def test_unique_per_doc_sorts_a_long_document_whose_values_share_their_top_bits() -> None:
    from neardup._kernels.shingles import unique_per_doc

    rng = np.random.default_rng(5)
    spread = rng.integers(0, 2**63, size=5000, dtype=np.uint64)
    crowded = (spread >> np.uint64(20)) | np.uint64(0xFFF << 52)  # one bucket: np.sort's path
    fps = np.concatenate([spread, crowded, spread[:100]])
    offsets = np.array([0, 5000, 10000, 10100], dtype=np.int64)
    out, out_offsets = unique_per_doc(fps, offsets)
    for i in range(3):
        got = out[out_offsets[i] : out_offsets[i + 1]]
        assert got.tolist() == np.unique(fps[offsets[i] : offsets[i + 1]]).tolist()
