"""The graph stage's kernels: each (key, document) row's document linked to the smallest
document with the same key, and the links' documents labelled with their component's smallest."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.links import PART_ROWS, key_links
from neardup.dask.components import smallest_linked, stars
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


EDGES = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=60
)  # documents by the number: few, so that they repeat and chain


@settings(max_examples=300, deadline=None)
@given(EDGES, st.sampled_from([0, 2**32, 2**59]))
def test_components_of_links_are_the_reference_union_find(
    edges: list[tuple[int, int]], spread: int
) -> None:
    # documents as 64-bit keys far apart (block << 32 | index), labels their components' least
    u = [a * spread + a for a, _ in edges]
    v = [b * spread + b for _, b in edges]
    nodes, labels = smallest_linked(np.asarray(u, np.int64), np.asarray(v, np.int64))
    assert (nodes.tolist(), labels.tolist()) == reference.smallest_linked(u, v)
    moved, root = stars(np.asarray(u, np.int64), np.asarray(v, np.int64))
    want = [(x, r) for x, r in zip(*reference.smallest_linked(u, v), strict=True) if x != r]
    assert list(zip(moved.tolist(), root.tolist(), strict=True)) == want


def test_long_chains_of_links_get_their_least_document() -> None:
    rng = np.random.default_rng(5)
    keys = rng.choice(2**40, 50_000, replace=False).astype(np.int64)
    u, v = keys[:-1], keys[1:]  # one chain through every key, in random key order
    order = rng.permutation(len(u))
    nodes, labels = smallest_linked(u[order], v[order])
    assert nodes.tolist() == sorted(keys.tolist())
    assert (labels == keys.min()).all()
