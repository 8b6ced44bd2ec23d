"""The graph stage's fused link split gives exactly the records of the chain it replaced:
concatenate postings and content hashes, fold (column, key), spread by destination, split by a
stable sort; each destination's records in the same order."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import EMPTY
from neardup._kernels.links import split_links
from tests.test_keys import U64, reference_column_keys, reference_spread

CONTENT = -1


class Block(NamedTuple):
    """A block's postings (row, column, key) and its documents' keys and content hashes."""

    row: np.ndarray
    col: np.ndarray
    key: np.ndarray
    doc_key: np.ndarray
    canonical: np.ndarray


def reference_split(block: Block, n_dests: int) -> dict[int, tuple[list[int], list[int]]]:
    """(folds, documents) of each destination that gets records, by the former chain of
    NumPy passes."""
    row, col, key, doc_key, canonical = block
    full = np.flatnonzero(canonical != EMPTY)
    folded = np.concatenate(
        [
            reference_column_keys(col, key),
            reference_column_keys(np.full(len(full), CONTENT), canonical[full]),
        ]
    )
    member = np.concatenate([doc_key[row], doc_key[full]])
    dest = reference_spread(folded, n_dests)
    order = np.argsort(dest, kind="stable")
    split: dict[int, tuple[list[int], list[int]]] = {}
    for i in order.tolist():
        folds, members = split.setdefault(int(dest[i]), ([], []))
        folds.append(int(folded[i]))
        members.append(int(member[i]))
    return split


def _split(block: Block, n_dests: int) -> dict[int, tuple[list[int], list[int]]]:
    """The kernel's records of each destination that gets any."""
    fold, doc, start = split_links(*block, CONTENT, n_dests)
    doc_key = block.doc_key
    assert start[0] == 0 and start[-1] == len(fold) == len(doc)
    assert (np.diff(start) >= 0).all() and len(start) == n_dests + 1
    assert fold.dtype == np.uint64 and doc.dtype == doc_key.dtype
    return {
        d: (fold[start[d] : start[d + 1]].tolist(), doc[start[d] : start[d + 1]].tolist())
        for d in np.flatnonzero(np.diff(start)).tolist()
    }


@st.composite
def blocks(draw: st.DrawFn) -> Block:
    """A block: documents (key, content hash or EMPTY) and their postings (row, column, key),
    keys often repeated so that destinations get several records."""
    n_docs = draw(st.integers(0, 12))
    doc_key = np.asarray(draw(st.lists(st.integers(0, 2**62), min_size=n_docs, max_size=n_docs)))
    canonical = draw(
        st.lists(st.one_of(st.just(int(EMPTY)), U64), min_size=n_docs, max_size=n_docs)
    )
    pool = draw(st.lists(U64, min_size=1, max_size=6))
    postings = draw(
        st.lists(
            st.tuples(
                st.integers(0, max(n_docs - 1, 0)), st.integers(0, 40), st.sampled_from(pool)
            ),
            max_size=60 if n_docs else 0,
        )
    )
    postings.sort(key=lambda p: p[0])  # postings come by row
    row = np.asarray([p[0] for p in postings], dtype=np.int64)
    col = np.asarray([p[1] for p in postings], dtype=np.int64)
    key = np.asarray([p[2] for p in postings], dtype=np.uint64)
    return Block(row, col, key, doc_key.astype(np.int64), np.asarray(canonical, dtype=np.uint64))


N_DESTS = st.one_of(st.integers(1, 12), st.integers(2**16 - 1, 2**16 + 2))


@settings(max_examples=200, deadline=None)
@given(blocks(), N_DESTS)
def test_split_links_equals_the_reference_chain(block: Block, n: int) -> None:
    assert _split(block, n) == reference_split(block, n)


def test_each_destination_keeps_record_order_among_many_rows() -> None:
    rng = np.random.default_rng(3)
    n_docs, n_post = 2000, 30000
    doc_key = rng.permutation(n_docs * 5)[:n_docs].astype(np.int64)
    canonical = rng.integers(0, 2**64, n_docs, dtype=np.uint64)
    canonical[rng.random(n_docs) < 0.2] = EMPTY
    row = np.sort(rng.integers(0, n_docs, n_post))
    col = rng.integers(0, 20, n_post)
    key = rng.integers(0, 500, n_post).astype(np.uint64)  # repeated keys: shared links
    for n in (1, 9, 300):
        block = Block(row, col, key, doc_key, canonical)
        got = _split(block, n)
        assert got == reference_split(block, n)
        assert sum(len(f) for f, _ in got.values()) == n_post + int((canonical != EMPTY).sum())


def test_empty_blocks() -> None:
    none = np.zeros(0, dtype=np.int64)
    assert _split(Block(none, none, none.astype(np.uint64), none, none.astype(np.uint64)), 3) == {}
    # documents without postings still link their content hashes; EMPTY ones do not
    doc_key = np.asarray([4, 9], dtype=np.int64)
    canonical = np.asarray([EMPTY, 77], dtype=np.uint64)
    got = _split(Block(none, none, none.astype(np.uint64), doc_key, canonical), 1)
    assert got == {0: (reference_column_keys(np.asarray([CONTENT]), canonical[1:]).tolist(), [9])}
