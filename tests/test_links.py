"""The graph stage's kernels: a block's link records by destination, and links from each
(key, document) row's document to the smallest document with the same key."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.links import PART_ROWS, key_links, split_links
from neardup.methods import make_method, posting_rows, postings
from neardup.params import DedupParams, SampledParams
from neardup.textbatch import TextBatch
from tests import reference

U64 = st.integers(0, 2**64 - 1)
ROWS = st.lists(st.tuples(st.one_of(st.integers(0, 5), U64), st.integers(0, 2**62)), max_size=80)


def _links(keys: list[int], docs: list[int], part_rows: int = PART_ROWS) -> list[tuple[int, int]]:
    a, b = key_links(np.asarray(keys, np.uint64), np.asarray(docs, np.int64), part_rows)
    assert a.dtype == b.dtype == np.int64
    return sorted(zip(a.tolist(), b.tolist(), strict=True))


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_key_links_equal_the_reference(rows: list[tuple[int, int]]) -> None:
    keys = [k for k, _ in rows]
    docs = [d for _, d in rows]
    assert _links(keys, docs) == reference.key_links(keys, docs)


@settings(max_examples=300, deadline=None)
@given(ROWS, st.integers(1, 9))
def test_partitions_of_any_size_give_the_reference(
    rows: list[tuple[int, int]], part_rows: int
) -> None:
    # a few rows a partition: many partitions, some empty, a key's rows dealt together
    keys = [k for k, _ in rows]
    docs = [d for _, d in rows]
    assert _links(keys, docs, part_rows) == reference.key_links(keys, docs)


def test_many_partitions_of_repeated_keys_give_the_reference() -> None:
    rng = np.random.default_rng(7)
    n = 5 * PART_ROWS + 123  # six partitions at the default size
    distinct = rng.integers(0, 2**64, n // 3, dtype=np.uint64)
    keys = distinct[rng.integers(0, len(distinct), n)]
    docs = rng.integers(0, n // 2, n)  # ties between a key's rows too
    got = _links(keys.tolist(), docs.tolist())
    assert got == reference.key_links(keys.tolist(), docs.tolist())
    assert len(got) > n // 2  # most rows share their key with a smaller document


def test_edge_cases() -> None:
    assert _links([], []) == []
    assert _links([2**64 - 1], [7]) == []
    assert _links([5] * 6, [9, 4, 8, 4, 6, 11], part_rows=2) == [(4, 6), (4, 8), (4, 9), (4, 11)]
    assert _links([1, 2, 1, 2], [3, 3, 3, 3], part_rows=1) == []


def test_colliding_slots_still_give_each_key_its_own_minimum() -> None:
    # keys equal modulo the table size probe past each other
    keys = [i << 40 for i in range(64)] * 3
    docs = list(range(192, 0, -1))
    got = _links(keys, docs)
    assert got == reference.key_links(keys, docs)
    assert len(got) == 128 and {a for a, _ in got} == set(range(64, 0, -1))


KEY = st.one_of(st.sampled_from([0, 1, 2**64 - 1]), U64)  # EMPTY (2**64 - 1) is skipped


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 6).flatmap(
        lambda w: st.lists(st.lists(KEY, min_size=w, max_size=w), max_size=12)
    ),
    st.lists(KEY, max_size=12),
    st.integers(-2, 40),
    st.integers(1, 9),
)
def test_split_links_of_a_key_matrix_is_the_reference_of_its_postings(
    matrix: list[list[int]], canonical: list[int], content_column: int, n_dests: int
) -> None:
    n = len(matrix)
    canonical = (canonical + [2**64 - 1] * n)[:n]
    doc_keys = [(7 << 32) + 3 * i for i in range(n)]
    width = len(matrix[0]) if matrix else 0
    keys = np.asarray(matrix, np.uint64).reshape(n, width)
    fold, doc, start = split_links(
        keys, np.arange(n), np.zeros(n, np.int64), np.asarray(doc_keys, np.int64),
        np.asarray(canonical, np.uint64), content_column, n_dests,
    )  # fmt: skip
    flat = [(i, j, k) for i, row in enumerate(matrix) for j, k in enumerate(row) if k != 2**64 - 1]
    want = reference.split_links(flat, doc_keys, canonical, content_column, n_dests)
    at = [slice(start[d], start[d + 1]) for d in range(n_dests)]
    got = [list(zip(fold[s].tolist(), doc[s].tolist(), strict=True)) for s in at]
    assert got == want


def test_posting_rows_list_the_postings_of_a_matrix_method_and_of_a_postings_method() -> None:
    texts = ["the quick brown fox jumps over the lazy dog " * 3, "", "one two three four five six"]
    for params in (DedupParams(), DedupParams(method=SampledParams(m=2))):
        method = make_method(params)
        sigs = method.signatures(TextBatch(texts, params.shingle))
        keys, row, col = posting_rows(method, sigs)
        flat = [
            (int(row[i]), int(col[i]) + j, int(k))
            for i in range(keys.shape[0]) for j, k in enumerate(keys[i].tolist())
            if k != 2**64 - 1
        ]  # fmt: skip
        r, c, k = postings(method, sigs)
        assert flat == list(zip(r.tolist(), c.tolist(), k.tolist(), strict=True))
        assert len(flat) > 0
