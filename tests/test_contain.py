"""Token spans and exact containment: the kernels equal the pure-Python references on Unicode."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.decontaminate import Decontaminator, min_shared
from neardup.errors import ParamError
from neardup.params import DecontaminateParams, ShingleParams
from neardup.text import Utf8Texts, canonical_tokens, fold_char, token_spans
from tests import reference as ref
from tests.strategies import texts

# Few words, so that texts share shingles; separators of every kind, lone surrogate included.
WORDS = ["a", "Bé", "ß", "Σς", "中文", "x_1", "٣", "İ", "a\u0301"]
SEPS = [" ", ", ", "\n", " — ", "😀", "\ud800", "...", "\t"]


@st.composite
def word_texts(draw: st.DrawFn, max_words: int = 14) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), max_size=max_words))
    seps = draw(st.lists(st.sampled_from(SEPS), min_size=len(words) + 1, max_size=len(words) + 1))
    return "".join(s + w for s, w in zip(seps, [*words, ""], strict=True))


@pytest.mark.parametrize("mode", ["word", "char"])
@settings(max_examples=80)
@given(docs=st.lists(texts, max_size=6))
def test_token_spans_equal_reference(mode: str, docs: list[str]) -> None:
    starts, ends, offsets = token_spans(docs, mode)  # type: ignore[arg-type]
    for d, doc in enumerate(docs):
        lo, hi = offsets[d], offsets[d + 1]
        spans = list(zip(starts[lo:hi].tolist(), ends[lo:hi].tolist(), strict=True))
        assert spans == ref.token_spans(doc, mode)
        folded = ["".join(fold_char(c) for c in doc[s:e]) for s, e in spans]
        assert folded == canonical_tokens(doc, mode)  # type: ignore[arg-type]


@settings(max_examples=30)
@given(docs=st.lists(texts, max_size=5))
def test_token_spans_of_utf8_texts_equal_those_of_strings(docs: list[str]) -> None:
    mine = token_spans(Utf8Texts.from_strings(docs))
    theirs = token_spans(docs)
    assert all(np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True))


PARAMS = [
    DecontaminateParams(0.5, ShingleParams(w=2)),
    DecontaminateParams(0.3, ShingleParams(w=3)),
    DecontaminateParams(1.0, ShingleParams(w=1)),
    DecontaminateParams(0.7, ShingleParams(w=3, tokens="char")),
    DecontaminateParams(0.5, ShingleParams(w=2, hash="rabin")),
]


@pytest.mark.parametrize("params", PARAMS, ids=lambda p: p.fingerprint())
@settings(max_examples=60)
@given(
    bench=st.lists(st.one_of(word_texts(6), texts), min_size=1, max_size=5),
    docs=st.lists(st.one_of(word_texts(), texts), max_size=6),
)
def test_contains_equals_brute_force(
    params: DecontaminateParams, bench: list[str], docs: list[str]
) -> None:
    s = params.shingle
    found = Decontaminator(bench, params).contains(docs)
    expected = ref.contained_items(bench, docs, params.containment, s.w, s.tokens, s.hash)
    got = [[(m.item, m.containment, m.shared, m.spans) for m in row] for row in found]
    assert got == expected


@settings(max_examples=40)
@given(
    sizes=st.lists(st.integers(0, 10_000), min_size=1, max_size=20),
    c=st.floats(0.001, 1.0),
)
def test_min_shared_is_the_smallest_count_reaching_the_containment(
    sizes: list[int], c: float
) -> None:
    need = min_shared(np.array(sizes, dtype=np.int64), c)
    for size, k in zip(sizes, need.tolist(), strict=True):
        if size == 0:
            assert k > 2**62
        else:
            assert k / size >= c and (k == 1 or (k - 1) / size < c)


def test_a_text_shorter_than_w_matches_only_its_own_tokens() -> None:
    d = Decontaminator(["one two three", ""], DecontaminateParams(0.5, ShingleParams(w=5)))
    found = d.contains(["ONE, two; three!", "one two three four five six"])
    assert [[m.item for m in row] for row in found] == [[0], []]
    assert found[0][0].spans == ((0, 15),)
    assert d.sizes_.tolist() == [1, 0]


def test_params_refuse_nfkc_and_bad_containment() -> None:
    with pytest.raises(ParamError, match="nfkc"):
        DecontaminateParams(shingle=ShingleParams(nfkc=True))
    for bad in (0, 1.5, True, "0.5"):
        with pytest.raises(ParamError, match="containment"):
            DecontaminateParams(containment=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("c", [0.1, 0.5, 0.9, 1.0])
def test_items_sharing_a_template_equal_brute_force(c: float) -> None:
    # the shingles every item holds sit in no item's prefix: only rarer ones find candidates
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(12)]
    phrase = "which of the following is true"

    def text(n: int) -> str:
        return " ".join([phrase, *rng.choice(vocab, size=n).tolist()])

    bench = [text(int(rng.integers(0, 8))) for _ in range(40)] + [phrase, "of the following"]
    docs = [text(int(rng.integers(0, 30))) for _ in range(60)] + [phrase, "", "w1 w2"]
    params = DecontaminateParams(c, ShingleParams(w=3))
    found = Decontaminator(bench, params).contains(docs)
    expected = ref.contained_items(bench, docs, c, 3)
    got = [[(m.item, m.containment, m.shared, m.spans) for m in row] for row in found]
    assert got == expected
    assert sum(map(len, got)) > len(docs)  # many texts hold many items


@pytest.mark.parametrize("max_pairs", [1, 2, 7, 50])
def test_pieces_of_a_batch_are_its_matches_in_order_each_bounded(max_pairs: int) -> None:
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(10)]
    bench = [" ".join(rng.choice(vocab, size=int(rng.integers(1, 6))).tolist()) for _ in range(30)]
    docs = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 25))).tolist()) for _ in range(40)]
    finder = Decontaminator(bench, DecontaminateParams(0.5, ShingleParams(w=2)))
    whole = finder.scan(docs)
    pieces = list(finder.scan_pieces(docs, max_pairs))
    assert len(pieces) > 1 and len(whole) > 50
    for piece in pieces:  # whole texts, under max_pairs pairs before the last one
        assert (piece.doc != piece.doc[-1]).sum() < max_pairs
    joined = [(d, b, sh, p.spans(i)) for p in pieces
              for i, (d, b, sh) in enumerate(zip(p.doc, p.item, p.shared, strict=True))]  # fmt: skip
    assert joined == [
        (d, b, sh, whole.spans(i))
        for i, (d, b, sh) in enumerate(zip(whole.doc, whole.item, whole.shared, strict=True))
    ]


def test_pieces_refuse_a_pair_budget_that_is_no_positive_integer() -> None:
    finder = Decontaminator(["one two three"], DecontaminateParams(0.5))
    for bad in (0, -1, "x", 2.5):  # 0 yielded empty pieces for ever
        with pytest.raises(ParamError, match="max_pairs must be an integer from 1"):
            next(finder.scan_pieces(["one two three four"], bad))  # type: ignore[arg-type]
