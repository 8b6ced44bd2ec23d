"""Signing in slices bounds a batch's working arrays and never changes a row."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import signing
from neardup.blocks import SignedBatch
from neardup.engine import Deduplicator
from neardup.index import Index
from neardup.params import (
    DedupParams,
    MinhashParams,
    SampledParams,
    ShingleParams,
    SimhashMethodParams,
)
from neardup.signing import work_slices
from neardup.text import Utf8Texts
from neardup.verify import RowEvidence, SetEvidence

from .strategies import texts as text_strategy

PARAMS = {
    "minhash hybrid": DedupParams(),
    "minhash exact, classic": DedupParams(method=MinhashParams(sketch="classic"), verify="exact"),
    "char shingles": DedupParams(shingle=ShingleParams(tokens="char", w=5)),
    "simhash": DedupParams(method=SimhashMethodParams()),
    "sampled": DedupParams(method=SampledParams()),
}


def _rows(signed: SignedBatch) -> list[np.ndarray]:
    ev = signed.evidence
    if isinstance(ev, RowEvidence):
        evidence = [ev.rows]
    elif isinstance(ev, SetEvidence):
        evidence = [ev.sets.fps, ev.sets.offsets]
    else:
        evidence = []
    sigs = signed.signatures
    offsets = [] if sigs.offsets is None else [sigs.offsets]
    return [signed.canonical, signed.lengths, sigs.data, *offsets, *evidence]


def _assert_same(a: SignedBatch, b: SignedBatch) -> None:
    left, right = _rows(a), _rows(b)
    assert len(left) == len(right)
    for x, y in zip(left, right, strict=True):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name", sorted(PARAMS))
@settings(max_examples=25, deadline=None)
@given(
    docs=st.lists(text_strategy, min_size=1, max_size=30),
    budget=st.integers(min_value=1, max_value=40_000),
    utf8=st.booleans(),
)
def test_signing_in_slices_gives_the_rows_of_one_call(
    name: str, docs: list[str], budget: int, utf8: bool
) -> None:
    params = PARAMS[name]
    dedup = Deduplicator(params)
    batch = Utf8Texts.from_strings(docs) if utf8 else docs
    with pytest.MonkeyPatch.context() as m:
        m.setattr(signing, "SIGN_WORK_BYTES", 1 << 40)
        whole = dedup.sign(batch)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(signing, "SIGN_WORK_BYTES", budget)
        sliced = dedup.sign(batch)
    _assert_same(whole, sliced)


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=500), max_size=60),
    per_byte=st.integers(min_value=0, max_value=8),
    per_doc=st.integers(min_value=0, max_value=300),
    budget=st.integers(min_value=1, max_value=3000),
)
def test_slices_cover_the_texts_in_order_within_the_budget_or_one_document_each(
    sizes: list[int], per_byte: int, per_doc: int, budget: int
) -> None:
    texts = ["x" * s for s in sizes]
    ranges = work_slices(texts, per_byte, per_doc, budget)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(texts)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    cost = [s * per_byte + per_doc for s in sizes]
    for lo, hi in ranges:
        assert hi > lo or len(texts) == 0
        assert hi - lo == 1 or sum(cost[lo:hi]) <= budget
        if hi < len(texts):  # not cut early: the next document would not have fitted
            assert sum(cost[lo : hi + 1]) > budget


def test_one_line_texts_are_signed_in_several_slices_long_ones_in_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = signing._signed

    def counted(*args: object) -> SignedBatch:
        calls.append(len(args[-1]))  # type: ignore[arg-type]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(signing, "_signed", counted)
    dedup = Deduplicator(DedupParams())
    per_doc = signing.per_doc_bytes(dedup.params)
    short = [f"package {i} does a small thing well" for i in range(20_000)]
    dedup.sign(short)
    assert len(calls) > 1 and max(calls) * per_doc <= signing.SIGN_WORK_BYTES
    calls.clear()
    dedup.sign([" ".join(f"w{i}" for i in range(2000))] * 50)
    assert calls == [50]


def test_the_index_signs_in_slices_with_the_same_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = [f"the quick brown fox number {i % 40} jumps over the lazy dog" for i in range(300)]
    answers = []
    for budget in (1 << 40, 3000):
        monkeypatch.setattr(signing, "SIGN_WORK_BYTES", budget)
        index = Index.create(None, DedupParams())
        index.add([f"d{i}" for i in range(200)], docs[:200])
        found = index.query(docs[200:])
        answers.append([[(m.id, round(m.score, 12)) for m in ms] for ms in found])
    assert answers[0] == answers[1]
    assert any(answers[0])


def test_the_sampled_method_signs_a_batch_ending_with_a_document_without_tokens() -> None:
    params = DedupParams(method=SampledParams(m=1))
    docs = ["the quick brown fox jumps over the lazy dog", "...", "a b c d e f g", ""]
    index = Index.create(None, params)
    index.add([f"d{i}" for i in range(len(docs))], docs)  # an IndexError before
    signed = Deduplicator(params).sign(docs)
    assert np.diff(signed.signatures.offsets).tolist() == [5, 0, 3, 0]
    assert [m.id for m in index.query([docs[0]])[0]] == ["d0"]
