"""The graph stage's fused link split gives exactly the records of the chain it replaced:
concatenate postings and content hashes, fold (column, key), spread by destination, split by a
stable sort; each destination's records in the same order, each packed as the fold's top bits
and the document's index. A method's key matrix read in place gives its postings' records."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup._kernels.hashing import EMPTY
from neardup._kernels.links import split_links
from neardup.methods import make_method, posting_rows, postings
from neardup.params import DedupParams, SampledParams
from neardup.textbatch import TextBatch
from tests.test_keys import U64, reference_column_keys, reference_spread

CONTENT = -1


class Block(NamedTuple):
    """A block's postings (row, column, key), its documents' content hashes, and the low bits
    of a link that hold a document's index (the row)."""

    row: np.ndarray
    col: np.ndarray
    key: np.ndarray
    canonical: np.ndarray
    index_bits: int


def reference_split(block: Block, n_dests: int) -> dict[int, list[int]]:
    """The links of each destination that gets records, by the former chain of NumPy passes."""
    row, col, key, canonical, bits = block
    full = np.flatnonzero(canonical != EMPTY)
    folded = np.concatenate(
        [
            reference_column_keys(col, key),
            reference_column_keys(np.full(len(full), CONTENT), canonical[full]),
        ]
    )
    member = np.concatenate([row, full]).astype(np.int64)
    dest = reference_spread(folded, n_dests)
    order = np.argsort(dest, kind="stable")
    high = ((1 << 64) - 1) ^ ((1 << bits) - 1)
    split: dict[int, list[int]] = {}
    for i in order.tolist():
        split.setdefault(int(dest[i]), []).append((int(folded[i]) & high) | int(member[i]))
    return split


def _by_dest(link: np.ndarray, start: np.ndarray, n_dests: int) -> dict[int, list[int]]:
    assert start[0] == 0 and start[-1] == len(link) and link.dtype == np.uint64
    assert (np.diff(start) >= 0).all() and len(start) == n_dests + 1
    return {
        d: link[start[d] : start[d + 1]].tolist() for d in np.flatnonzero(np.diff(start)).tolist()
    }


def _split(block: Block, n_dests: int) -> dict[int, list[int]]:
    """The kernel's links of each destination that gets any (postings as one-column rows)."""
    row, col, key, canonical, bits = block
    link, start = split_links(key[:, None], row, col, canonical, CONTENT, n_dests, bits)
    return _by_dest(link, start, n_dests)


@st.composite
def blocks(draw: st.DrawFn) -> Block:
    """A block: documents (key, content hash or EMPTY) and their postings (row, column, key),
    keys often repeated so that destinations get several records."""
    n_docs = draw(st.integers(0, 12))
    canonical = draw(
        st.lists(st.one_of(st.just(int(EMPTY)), U64), min_size=n_docs, max_size=n_docs)
    )
    pool = draw(
        st.lists(U64.filter(lambda k: k != int(EMPTY)), min_size=1, max_size=6)
    )  # as postings
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
    bits = draw(st.integers(max(n_docs - 1, 0).bit_length(), 32))
    return Block(row, col, key, np.asarray(canonical, dtype=np.uint64), bits)


N_DESTS = st.one_of(st.integers(1, 12), st.integers(2**16 - 1, 2**16 + 2))


@settings(max_examples=200, deadline=None)
@given(blocks(), N_DESTS)
def test_split_links_equals_the_reference_chain(block: Block, n: int) -> None:
    assert _split(block, n) == reference_split(block, n)


def test_each_destination_keeps_record_order_among_many_rows() -> None:
    rng = np.random.default_rng(3)
    n_docs, n_post = 2000, 30000
    canonical = rng.integers(0, 2**64, n_docs, dtype=np.uint64)
    canonical[rng.random(n_docs) < 0.2] = EMPTY
    row = np.sort(rng.integers(0, n_docs, n_post))
    col = rng.integers(0, 20, n_post)
    key = rng.integers(0, 500, n_post).astype(np.uint64)  # repeated keys: shared links
    for n, bits in ((1, 11), (9, 16), (300, 32)):
        block = Block(row, col, key, canonical, bits)
        got = _split(block, n)
        assert got == reference_split(block, n)
        assert sum(len(f) for f in got.values()) == n_post + int((canonical != EMPTY).sum())


def test_empty_blocks() -> None:
    none = np.zeros(0, dtype=np.int64)
    assert _split(Block(none, none, none.astype(np.uint64), none.astype(np.uint64), 0), 3) == {}
    # documents without postings still link their content hashes; EMPTY ones do not
    canonical = np.asarray([EMPTY, 77], dtype=np.uint64)
    got = _split(Block(none, none, none.astype(np.uint64), canonical, 1), 1)
    fold = int(reference_column_keys(np.asarray([CONTENT]), canonical[1:])[0])
    assert got == {0: [(fold & ~1 & (2**64 - 1)) | 1]}


KEY = st.one_of(st.sampled_from([0, 1, int(EMPTY)]), U64)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 6).flatmap(
        lambda w: st.lists(st.lists(KEY, min_size=w, max_size=w), max_size=12)
    ),
    st.integers(1, 9),
)
def test_a_key_matrix_read_in_place_gives_its_postings_links(
    matrix: list[list[int]], n_dests: int
) -> None:
    n = len(matrix)
    keys = np.asarray(matrix, np.uint64).reshape(n, len(matrix[0]) if matrix else 0)
    canonical = np.full(n, EMPTY, dtype=np.uint64)
    link, start = split_links(keys, np.arange(n), np.zeros(n, np.int64), canonical, 0, n_dests, 4)
    row, col = np.nonzero(keys != EMPTY)
    flat = Block(row, col, keys[row, col], canonical, 4)
    assert _by_dest(link, start, n_dests) == reference_split(flat, n_dests)


def test_postings_are_a_matrix_method_s_keys_or_a_postings_method_s_own() -> None:
    texts = ["the quick brown fox jumps over the lazy dog " * 3, "", "one two three four five six"]
    for params in (DedupParams(), DedupParams(method=SampledParams(m=2))):
        method = make_method(params)
        sigs = method.signatures(TextBatch(texts, params.shingle))
        row, col, key = postings(method, sigs)
        if isinstance(params.method, SampledParams):
            want = method.lookup_postings(sigs)  # type: ignore[attr-defined]
        else:
            matrix = np.asarray(method.lookup_keys(sigs), dtype=np.uint64)
            r, c = np.nonzero(matrix != EMPTY)
            want = (r, c, matrix[r, c])
        assert [x.tolist() for x in (row, col, key)] == [np.asarray(x).tolist() for x in want]
        assert len(key) > 0 and not (key == EMPTY).any()
        keys, rows, cols = posting_rows(method, sigs)  # what the graph stage reads in place
        assert keys.shape[0] == len(rows) == len(cols)
