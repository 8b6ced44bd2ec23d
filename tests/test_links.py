"""The graph stage's kernel: each (key, document) row's smallest document with the same key."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.links import PART_ROWS, key_minimum
from tests import reference

U64 = st.integers(0, 2**64 - 1)
ROWS = st.lists(st.tuples(st.one_of(st.integers(0, 5), U64), st.integers(0, 2**62)), max_size=80)


def _minima(keys: list[int], docs: list[int], part_rows: int = PART_ROWS) -> list[int]:
    got = key_minimum(np.asarray(keys, np.uint64), np.asarray(docs, np.int64), part_rows)
    return list(got.tolist())


@settings(max_examples=300, deadline=None)
@given(ROWS)
def test_key_minimum_equals_the_reference(rows: list[tuple[int, int]]) -> None:
    keys = [k for k, _ in rows]
    docs = [d for _, d in rows]
    got = key_minimum(np.asarray(keys, np.uint64), np.asarray(docs, np.int64))
    assert got.tolist() == reference.key_minimum(keys, docs)


@settings(max_examples=300, deadline=None)
@given(ROWS, st.integers(1, 9))
def test_partitions_of_any_size_give_the_reference(
    rows: list[tuple[int, int]], part_rows: int
) -> None:
    # a few rows a partition: many partitions, some empty, a key's rows dealt together
    keys = [k for k, _ in rows]
    docs = [d for _, d in rows]
    assert _minima(keys, docs, part_rows) == reference.key_minimum(keys, docs)


def test_many_partitions_of_repeated_keys_give_the_reference() -> None:
    rng = np.random.default_rng(7)
    n = 5 * PART_ROWS + 123  # six partitions at the default size
    distinct = rng.integers(0, 2**64, n // 3, dtype=np.uint64)
    keys = distinct[rng.integers(0, len(distinct), n)]
    docs = rng.integers(0, n // 2, n)  # ties between a key's rows too
    got = key_minimum(keys, docs)
    assert got.tolist() == reference.key_minimum(keys.tolist(), docs.tolist())
    assert (got < docs).sum() > n // 2  # most rows share their key with a smaller document


def test_edge_cases() -> None:
    assert _minima([], []) == []
    assert _minima([2**64 - 1], [7]) == [7]
    assert _minima([5] * 6, [9, 4, 8, 4, 6, 11], part_rows=2) == [4] * 6
    assert _minima([1, 2, 1, 2], [3, 3, 3, 3], part_rows=1) == [3, 3, 3, 3]


def test_colliding_slots_still_give_each_key_its_own_minimum() -> None:
    # keys equal modulo the table size probe past each other
    keys = np.asarray([i << 40 for i in range(64)] * 3, dtype=np.uint64)
    docs = np.arange(192, 0, -1, dtype=np.int64)
    got = key_minimum(keys, docs)
    assert got.tolist() == reference.key_minimum(keys.tolist(), docs.tolist())
    assert (got <= docs).all() and len(set(got.tolist())) == 64
