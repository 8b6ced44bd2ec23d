"""A query batch's answers as columns: the Match lists and JSON lines they stand for."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.index import Answers, Index, Match

IDS = ["b", "a", "é-doc", 'a"quote', "z\\slash", "日本", "aa", "\U0001f600"]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 5),
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, len(IDS) - 1),
            st.sampled_from([0.5, 0.8, 0.9, 1 / 3, 0.123456789, 1.0, 2 / 3]),
            st.booleans(),
            st.floats(0, 1),
        ),
        max_size=30,
    ),
    st.sampled_from([None, 1, 2]),
    st.booleans(),
    st.lists(st.sampled_from([None, "2026-11-26", "é"]), min_size=len(IDS), max_size=len(IDS)),
)
def test_answers_are_the_matches_best_first_and_their_json_lines_as_json_dumps_writes_them(
    n: int,
    matches: list[tuple[int, int, float, bool, float]],
    limit: int | None,
    detail: bool,
    last_seen: list[str | None],
) -> None:
    """Exact first, then by score, then by id, at most ``limit`` per query, each (query, doc)
    once; the JSON lines byte for byte those of ``json.dumps`` over ``Match.as_dict``."""
    first = {(m[0], m[1]): m for m in reversed(matches) if m[0] < n}  # a pair is listed once
    rows = list(first.values())
    q = np.array([r[0] for r in rows], np.int64)
    doc = np.array([r[1] for r in rows], np.int64)
    exact = np.array([r[3] for r in rows], np.bool_)
    score = np.where(exact, 1.0, np.array([r[2] for r in rows], np.float64))
    extra = {"query_in_doc": np.array([r[4] for r in rows], np.float64)} if detail else {}
    answers = Answers.ordered(
        n, (q, doc, score, exact), "contained", extra, (IDS, last_seen), limit
    )

    want: list[list[Match]] = [[] for _ in range(n)]
    for (qi, j, _, e, x), s in zip(rows, score.tolist(), strict=True):
        scores = {} if e or not detail else {"query_in_doc": x}
        want[qi].append(Match(IDS[j], s, "exact" if e else "contained", scores, last_seen[j]))
    want = [sorted(w, key=lambda m: (m.kind != "exact", -m.score, m.id))[:limit] for w in want]
    assert answers.lists() == want and list(answers) == want and len(answers) == n
    assert all(answers[i] is answers.lists()[i] for i in range(n))  # built once, not per index

    qids = [f"q{i}" if i % 2 else i for i in range(n)]  # ids as the input holds them
    lines = "".join(
        json.dumps({"id": i, "matches": [m.as_dict() for m in w]}, ensure_ascii=False) + "\n"
        for i, w in zip(qids, want, strict=True)
    )
    assert answers.json_lines(qids) == lines


def test_a_stream_of_query_batches_answers_as_query_does_for_any_number_of_threads() -> None:
    from neardup import Index
    from neardup.testing.synth import near_duplicate_corpus, random_documents

    base = random_documents(300, seed=21, words=(20, 60))
    texts = list(near_duplicate_corpus(base, 300, 0.4, seed=22).texts)
    index = Index.create(None)
    index.add([f"d{i}" for i in range(200)], texts[:200])
    batches = [texts[i : i + 17] for i in range(0, len(texts), 17)]
    expected = [index.query(b, limit=3) for b in batches]
    assert sum(bool(m) for found in expected for m in found) > 50  # not vacuous
    for jobs in (1, 3):
        streamed = index.query_stream(iter(batches), lambda b: b, jobs, limit=3)
        got = [(batch, found.lists()) for batch, found in streamed]
        assert [b for b, _ in got] == batches and [f for _, f in got] == expected
        assert [index.answers(b, limit=3).lists() for b in batches] == expected


def test_an_exact_hit_whose_stored_hash_differs_is_not_reported(tmp_path: Path) -> None:
    """A store's exact lookup may return a document whose key only stands for the content
    hash (a key is 64 bits of a hash or an id): the query keeps exact hits whose loaded,
    checksummed row holds the query's hash."""
    a = "the quick brown fox jumps over the lazy dog near the river bank today"
    b = "an entirely different sentence about databases, sorting and radix passes"
    index = Index.create(str(tmp_path / "ix.db"))
    index.add(["a", "b"], [a, b])
    truth = index.query([a, b])
    real = index.store.exact
    stranger = int(index.store.find_ids(["b"])[0])

    def exact_and_a_stranger(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows, docs = real(hashes)
        return np.r_[rows, 0], np.r_[docs, stranger]  # query 0 "hits" b's row

    index.store.exact = exact_and_a_stranger  # type: ignore[method-assign]
    assert index.query([a, b]) == truth
    assert [m.id for m in truth[0]] == ["a"] and truth[0][0].kind == "exact"
    index.close()
