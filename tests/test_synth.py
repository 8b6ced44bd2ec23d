"""Synthetic corpora: deterministic, shaped like text, and edits control resemblance."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import ParamError
from neardup.testing.synth import (
    BLOCK,
    KIND_COSMETIC,
    KIND_EDITED,
    KIND_EMPTY,
    KIND_EXACT,
    KIND_ORIGINAL,
    cosmetic,
    cosmetic_batch,
    edit,
    edit_batch,
    edit_vocabulary,
    iter_render,
    near_duplicate_corpus,
    plan_corpus,
    pseudo_vocabulary,
    random_documents,
    render_corpus,
)

_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Canonical tokens as the house defines them for ASCII text: \\w runs, case folded."""
    return _WORD.findall(text.casefold())


def shingle_set(text: str, w: int = 3) -> set[tuple[str, ...]]:
    t = tokens(text)
    return {tuple(t[i : i + w]) for i in range(max(0, len(t) - w + 1))} if len(t) >= w else set()


def jaccard(a: set[tuple[str, ...]], b: set[tuple[str, ...]]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def test_vocabulary_is_distinct_pronounceable_and_shortest_first() -> None:
    v = pseudo_vocabulary(3000, 5)
    assert len(v) == 3000 == len(set(v))
    assert all(re.fullmatch(r"[a-z]+", w) for w in v)
    assert [len(w) for w in v] == sorted(len(w) for w in v)
    assert pseudo_vocabulary(3000, 5) is v  # cached, never redrawn


def test_same_seed_same_documents_and_other_seed_other_documents() -> None:
    a = random_documents(50, 3, words=(5, 40))
    assert a == random_documents(50, 3, words=(5, 40))
    assert a != random_documents(50, 4, words=(5, 40))


def test_documents_are_prefix_stable_across_blocks() -> None:
    many = random_documents(BLOCK + 7, 9, words=(3, 8))
    assert many[:5] == random_documents(5, 9, words=(3, 8))
    assert len(many) == BLOCK + 7


def test_documents_have_requested_lengths_sentences_and_capitals() -> None:
    docs = random_documents(300, 1, words=(10, 30))
    counts = [len(tokens(d)) for d in docs]
    assert min(counts) >= 10 and max(counts) <= 30
    joined = "".join(docs)
    assert all(d[0].isupper() and d.endswith(".") for d in docs)
    assert ", " in joined and ". " in joined
    assert any(c in joined for c in "?!")
    # capitals inside a document: canonicalisation must fold case to match copies
    assert sum(1 for d in docs if re.search(r"\. [A-Z]", d)) > 100


def test_word_frequencies_follow_zipf_rank_order() -> None:
    docs = random_documents(400, 2, words=(50, 100), vocab_size=2000)
    freq: dict[str, int] = {}
    for d in docs:
        for t in tokens(d):
            freq[t] = freq.get(t, 0) + 1
    vocab = pseudo_vocabulary(2000, 2)
    # rank 1 beats rank 10 beats rank 100 beats rank 1000 (p ∝ 1/(r + 2.7))
    f = [freq.get(vocab[r], 0) for r in (0, 9, 99, 999)]
    assert f[0] > f[1] > f[2] > f[3]


def test_edit_rate_zero_is_identity_and_positive_rate_changes_text() -> None:
    docs = random_documents(20, 5, words=(40, 80))
    assert edit_batch(docs, 0.0, 1) == docs
    changed = edit_batch(docs, 0.2, 1)
    assert all(c != d for c, d in zip(changed, docs, strict=True))


def test_edits_are_deterministic_and_independent_of_what_follows() -> None:
    docs = random_documents(BLOCK + 50, 6, words=(3, 12))
    rates = np.linspace(0, 0.5, len(docs))
    full = edit_batch(docs, rates, 8)
    assert full == edit_batch(docs, rates, 8)
    assert full[:BLOCK] == edit_batch(docs[:BLOCK], rates[:BLOCK], 8)
    assert full != edit_batch(docs, rates, 9)
    assert edit(docs[0], 0.3, 2) == edit(docs[0], 0.3, 2)


def test_resemblance_falls_monotonically_with_edit_rate() -> None:
    docs = random_documents(60, 11, words=(80, 200))
    rates = [0.0, 0.02, 0.05, 0.1, 0.2, 0.4]
    means = []
    for k, r in enumerate(rates):
        copies = edit_batch(docs, r, 100 + k, affix_prob=0.0)
        means.append(
            float(
                np.mean(
                    [
                        jaccard(shingle_set(a), shingle_set(b))
                        for a, b in zip(docs, copies, strict=True)
                    ]
                )
            )
        )
    assert means[0] == 1.0
    assert all(x > y for x, y in itertools.pairwise(means)), means
    assert means[1] > 0.75 and means[-1] < 0.3, means


def test_affixes_add_a_retweet_prefix_or_via_suffix() -> None:
    docs = random_documents(200, 12, words=(20, 40))
    out = edit_batch(docs, 0.01, 3, affix_prob=1.0)
    assert all(o.startswith("RT @") or "\n\nvia " in o for o in out)
    assert any(o.startswith("RT @") for o in out) and any("\n\nvia " in o for o in out)


def test_cosmetic_copies_keep_tokens_but_never_bytes() -> None:
    docs = random_documents(300, 13, words=(5, 30))
    out = cosmetic_batch(docs, 4)
    assert all(o != d for o, d in zip(out, docs, strict=True))
    assert all(tokens(o) == tokens(d) for o, d in zip(out, docs, strict=True))
    assert cosmetic(docs[0], 1) == cosmetic(docs[0], 1)


@settings(max_examples=150, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab Zé.,!?\n\t-'0"), max_size=60),
    st.floats(0.0, 1.0),
    st.integers(0, 2**32),
)
def test_edit_and_cosmetic_on_arbitrary_text(text: str, rate: float, seed: int) -> None:
    assert edit(text, 0.0, seed) == text
    edited = edit(text, rate, seed, affix_prob=0.0)
    # edits move, drop or add whole words: every word out is a word in or a vocabulary word
    allowed = set(text.split()) | set(edit_vocabulary())
    assert set(edited.split()) <= allowed
    assert tokens(cosmetic(text, seed)) == tokens(text)


def test_corpus_has_the_planned_mix_and_truthful_labels() -> None:
    base = random_documents(400, 21, words=(20, 60))
    corpus = near_duplicate_corpus(base, 600, 0.4, seed=3, n_empty=6)
    texts, source, rate, kind = corpus
    assert len(texts) == 600 == len(source) == len(rate) == len(kind)
    counts = np.bincount(kind, minlength=5)
    assert counts[KIND_EMPTY] == 6
    assert counts[KIND_ORIGINAL] == 600 - 6 - round(0.4 * 594)
    assert min(counts[KIND_EXACT], counts[KIND_COSMETIC], counts[KIND_EDITED]) > 10
    originals = source[kind == KIND_ORIGINAL]
    assert len(set(originals.tolist())) == len(originals)  # each original once
    copies = (kind != KIND_ORIGINAL) & (kind != KIND_EMPTY)
    assert set(source[copies].tolist()) <= set(originals.tolist())
    for i in range(600):
        k = kind[i]
        if k in (KIND_ORIGINAL, KIND_EXACT):
            assert texts[i] == base[source[i]]
        elif k == KIND_COSMETIC:
            assert texts[i] != base[source[i]] and tokens(texts[i]) == tokens(base[source[i]])
        elif k == KIND_EMPTY:
            assert source[i] == -1 and tokens(texts[i]) == []
        else:
            assert rate[i] > 0
        if k != KIND_EDITED:
            assert rate[i] == 0
    assert corpus.texts == near_duplicate_corpus(base, 600, 0.4, seed=3, n_empty=6).texts
    # shuffled: originals are not all at the front
    assert np.flatnonzero(kind != KIND_ORIGINAL)[0] < 50


def test_streamed_rendering_equals_whole_rendering() -> None:
    base = random_documents(1600, 22, words=(3, 10))
    plan = plan_corpus(len(base), 2 * BLOCK + 100, 0.3, seed=5)
    whole = render_corpus(base, plan, seed=5)
    streamed: list[str] = []
    for start, chunk in iter_render(base, plan, seed=5):
        assert start == len(streamed)
        streamed.extend(chunk)
    assert streamed == whole


def test_plan_rejects_impossible_requests_with_advice() -> None:
    with pytest.raises(ParamError, match="base texts"):
        plan_corpus(10, 100, 0.5, seed=1)
    with pytest.raises(ParamError, match="dup_fraction"):
        plan_corpus(10, 10, 1.0, seed=1)
    with pytest.raises(ParamError, match="rates"):
        plan_corpus(100, 10, 0.5, seed=1, edit_rates=(0.1, 2.0))
    with pytest.raises(ParamError, match="seed"):
        random_documents(3, -1)
    with pytest.raises(ParamError, match="words"):
        random_documents(3, 1, words=(0, 5))


def test_committed_sample_corpus_is_what_make_corpus_writes(tmp_path: Path) -> None:
    """Golden file: a change to any generator shows up as a diff of examples/sample.jsonl."""
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("make_corpus", root / "benchmarks/make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "sample.jsonl"
    assert module.main(["--sample", str(out)]) == 0
    committed = (root / "examples/sample.jsonl").read_bytes()
    assert out.read_bytes() == committed
    records = [json.loads(line) for line in committed.decode().splitlines()]
    assert 300 <= len(records) <= 1000 and len(committed) < 500_000
    kinds = {r["kind"] for r in records}
    assert kinds == {"original", "exact", "cosmetic", "edited", "empty"}
    assert all(r["lang"] == "en" and set(r) >= {"id", "text", "source"} for r in records)
