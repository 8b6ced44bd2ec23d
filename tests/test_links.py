"""The graph stage's kernel: each (key, document) row's smallest document with the same key."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.links import key_minimum
from tests import reference

U64 = st.integers(0, 2**64 - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(0, 5), U64), st.integers(0, 2**62)), max_size=80))
def test_key_minimum_equals_the_reference(rows: list[tuple[int, int]]) -> None:
    keys = [k for k, _ in rows]
    docs = [d for _, d in rows]
    got = key_minimum(np.asarray(keys, np.uint64), np.asarray(docs, np.int64))
    assert got.tolist() == reference.key_minimum(keys, docs)


def test_colliding_slots_still_give_each_key_its_own_minimum() -> None:
    # keys equal modulo the table size probe past each other
    keys = np.asarray([i << 40 for i in range(64)] * 3, dtype=np.uint64)
    docs = np.arange(192, 0, -1, dtype=np.int64)
    got = key_minimum(keys, docs)
    assert got.tolist() == reference.key_minimum(keys.tolist(), docs.tolist())
    assert (got <= docs).all() and len(set(got.tolist())) == 64
