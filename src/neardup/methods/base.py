"""The method protocol: a batch of texts -> signatures -> candidate pairs and the method's score.

Batch deduplication, the standing index, the service and the Dask backend all use a method
through these few calls, so none of them asks which method it runs:

- ``signatures(batch)``: per-document arrays (``Signatures``) the method needs later.
- ``candidates(sigs, jobs)``: candidate pairs among a collection, by sorting, never all pairs
  (``jobs`` threads may share the work; the result never depends on it).
- ``lookup_keys(sigs)`` and ``min_shared``: keys to store in an inverted table; a stored
  document is a candidate for a query when they share at least ``min_shared`` keys in the same
  column. ``query_candidates`` does this in memory; the index does it with its own tables.
- ``score(x, y)`` and ``accept(score)``: the method's own score of row-aligned pairs and its
  own decision (SimHash: Hamming distance within k; MinHash: the features already decided).

Methods with a variable number of values per document (sampled containment) extend this
compatibly: their ``Signatures`` carry ``offsets`` (CSR: document i owns
``data[offsets[i]:offsets[i+1]]``) and they implement ``lookup_postings(sigs) -> (row, column,
key)``, the flat list of their keys. ``postings(method, sigs)`` gives that flat list for every
method (from ``lookup_keys`` when the method has no ``lookup_postings``, EMPTY keys left out);
the standing index stores and looks up postings. A method may also say what its matches are
(``match_kind``: "near" by default, "contained" for containment) and give more than one score
per pair (``detail_scores(x, y) -> {name: float64[m]}``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .._kernels import keys as _kk
from .._kernels.hashing import EMPTY
from .._types import FloatArray, IntArray
from ..candidates import cross_pairs, pairs_by_column, pairs_from_hits
from ..textbatch import TextBatch


@dataclass(frozen=True)
class Signatures:
    """What a method keeps per document: ``data`` has one row per document (any trailing shape),
    or, with ``offsets`` (int64[n+1]), document i owns ``data[offsets[i]:offsets[i+1]]``."""

    data: np.ndarray
    offsets: IntArray | None = None

    def __len__(self) -> int:
        if self.offsets is not None:
            return int(self.offsets.shape[0]) - 1
        return int(self.data.shape[0])

    @property
    def nbytes(self) -> int:
        extra = 0 if self.offsets is None else int(self.offsets.nbytes)
        return int(self.data.nbytes) + extra

    def row(self, i: int) -> np.ndarray:
        """Document i's values (a row, or its slice of a CSR block)."""
        if self.offsets is None:
            return np.asarray(self.data[i])
        return np.asarray(self.data[self.offsets[i] : self.offsets[i + 1]])

    def take(self, rows: npt.ArrayLike) -> Signatures:
        """The signatures of documents ``rows``, in that order."""
        idx = np.asarray(rows, dtype=np.int64)
        if self.offsets is None:
            return Signatures(self.data[idx])
        off = self.offsets
        sizes = (off[idx + 1] - off[idx]).astype(np.int64)
        new_off = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(sizes, out=new_off[1:])
        pos = np.repeat(off[idx] - new_off[:-1], sizes) + np.arange(new_off[-1], dtype=np.int64)
        return Signatures(self.data[pos], new_off)

    @staticmethod
    def concat(parts: list[Signatures], like: Signatures | None = None) -> Signatures:
        """One block from many (an empty list gives ``like`` with no rows)."""
        if parts:
            if parts[0].offsets is None:
                return Signatures(np.concatenate([p.data for p in parts]))
            sizes = np.concatenate([np.diff(p.offsets) for p in parts if p.offsets is not None])
            offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
            np.cumsum(sizes, out=offsets[1:])
            return Signatures(np.concatenate([p.data for p in parts]), offsets)
        if like is None:
            return Signatures(np.zeros((0,), dtype=np.uint64))
        if like.offsets is not None:
            return Signatures(like.data[:0], np.zeros(1, dtype=np.int64))
        return Signatures(like.data[:0])

    @staticmethod
    def csr(rows: list[np.ndarray], like: Signatures) -> Signatures:
        """Signatures from one array per document, shaped like ``like`` (rows or CSR)."""
        if like.offsets is None:
            if not rows:
                return Signatures(like.data[:0])
            return Signatures(np.stack(rows).astype(like.data.dtype, copy=False))
        sizes = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        data = np.concatenate(rows) if rows else like.data[:0]
        return Signatures(data.astype(like.data.dtype, copy=False), offsets)


@dataclass(frozen=True)
class Candidates:
    """Candidate pairs a < b (int64, sorted by a then b), the method's score and acceptance."""

    a: IntArray
    b: IntArray
    score: FloatArray
    accepted: npt.NDArray[np.bool_]
    stats: dict[str, int] = field(default_factory=dict)
    #: Big buckets (keys shared by more than max_bucket documents) as CSR over document indices.
    big_members: IntArray = field(default_factory=lambda: np.zeros(0, np.int64))
    big_offsets: IntArray = field(default_factory=lambda: np.zeros(1, np.int64))

    def __len__(self) -> int:
        return int(self.a.shape[0])


@runtime_checkable
class Method(Protocol):
    """A near-duplicate search method (see the module docstring)."""

    name: str
    min_shared: int

    def signatures(self, batch: TextBatch) -> Signatures: ...

    def candidates(self, sigs: Signatures, jobs: int = 1) -> Candidates:
        """Pairs among the documents; ``jobs`` threads may share the work (same result)."""
        ...

    def lookup_keys(self, sigs: Signatures) -> npt.NDArray[np.uint64]: ...

    def score(self, x: Signatures, y: Signatures) -> FloatArray: ...

    def accept(self, score: FloatArray) -> npt.NDArray[np.bool_]: ...

    def describe(self) -> str: ...


@runtime_checkable
class KeyedCandidates(Protocol):
    """A method whose candidates are the pairs sharing at least ``min_shared`` of its
    ``candidate_keys`` in the same column (buckets over ``max_bucket`` chained, as
    ``candidates.candidate_pairs`` does), scored from the number of keys shared. Such candidates
    can be generated key partition by key partition: the Dask backend does."""

    min_shared: int

    @property
    def max_bucket(self) -> int: ...

    def candidate_keys(self, sigs: Signatures) -> npt.NDArray[np.uint64]: ...

    def candidate_scores(
        self, count: npt.NDArray[np.int32]
    ) -> tuple[FloatArray, npt.NDArray[np.bool_]]: ...


def keyed_candidates(
    method: KeyedCandidates,
    column: Callable[[int], npt.NDArray[np.uint64]],
    n: int,
    k: int,
    jobs: int = 1,
) -> Candidates:
    """The candidates of a ``KeyedCandidates`` method from its key columns, fetched one at a
    time by ``column(j)`` (uint64[n]): pairs sharing ``min_shared`` keys in a column, big
    buckets chained and listed, scored by ``candidate_scores``. Its ``candidates`` gives the
    key matrix's columns; the engine gives columns gathered from spilled blocks."""
    found = pairs_by_column(
        column,
        n,
        k,
        method.min_shared,
        max_bucket=method.max_bucket,
        list_big_buckets=True,
        jobs=jobs,
    )
    st = found.stats
    score, accepted = method.candidate_scores(found.count)
    return Candidates(
        a=found.a,
        b=found.b,
        score=score,
        accepted=accepted,
        stats={"big_buckets": st.big_buckets, "big_bucket_docs": st.big_bucket_docs},
        big_members=found.big_members,
        big_offsets=found.big_offsets,
    )


def postings(method: Method, sigs: Signatures) -> tuple[IntArray, IntArray, npt.NDArray[np.uint64]]:
    """(row, column, key) of every lookup key of ``sigs`` (EMPTY keys left out), by row: the
    ``posting_rows`` listed one key at a time."""
    keys, row, col = posting_rows(method, sigs)
    r, c = np.nonzero(keys != EMPTY)
    return row[r], col[r] + c, keys[r, c]


def posting_rows(
    method: Method, sigs: Signatures
) -> tuple[npt.NDArray[np.uint64], IntArray, IntArray]:
    """Every lookup key of ``sigs`` without a flat copy of them: (keys, row, col) where key
    ``keys[i, j]`` (EMPTY ones to be skipped) belongs to document ``row[i]`` in column
    ``col[i] + j``. The method's key matrix as it is (row ``arange(n)``, col zeros), or its own
    postings (``lookup_postings``) as one-column rows."""
    own = getattr(method, "lookup_postings", None)
    if own is not None:
        row, col, key = own(sigs)
        return _kk.as_u64(key)[:, None], np.asarray(row, np.int64), np.asarray(col, np.int64)
    keys = _kk.as_u64(np.asarray(method.lookup_keys(sigs)))
    if keys.ndim == 1:
        keys = keys[:, None]
    n = keys.shape[0]
    return keys, np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)


def query_candidates(
    method: Method, stored: Signatures, queries: Signatures
) -> tuple[IntArray, IntArray, FloatArray]:
    """(query row, stored row, method score) of every stored document a query may duplicate.

    Lookup keys are matched column by column by sorting (never all pairs), pairs sharing at
    least ``method.min_shared`` keys are scored by the method and kept when it accepts them.
    Sorted by query row, then stored row.
    """
    if hasattr(method, "lookup_postings"):
        q, s = _posting_pairs(method, stored, queries)
    else:
        q, s = cross_pairs(
            method.lookup_keys(queries), method.lookup_keys(stored), method.min_shared
        )
    if len(q) == 0:
        return q, s, np.zeros(0, dtype=np.float64)
    score = method.score(queries.take(q), stored.take(s))
    ok = method.accept(score)
    return q[ok], s[ok], score[ok]


def _posting_pairs(
    method: Method, stored: Signatures, queries: Signatures
) -> tuple[IntArray, IntArray]:
    """(query row, stored row) sharing at least ``min_shared`` (column, key) postings."""
    sr, sc, sk = postings(method, stored)
    qr, qc, qk = postings(method, queries)
    return pairs_from_hits(qr, column_keys(qc, qk), column_keys(sc, sk), sr, method.min_shared)


def column_keys(col: IntArray, key: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """One 64-bit key per (column, key): equal keys in different columns never collide on purpose."""
    return _kk.column_keys(col, key)
