"""The method protocol: a batch of texts -> signatures -> candidate pairs and the method's score.

Batch deduplication, the standing index, the service and the Dask backend all use a method
through these few calls, so none of them asks which method it runs:

- ``signatures(batch)``: per-document arrays (``Signatures``) the method needs later.
- ``candidates(sigs)``: candidate pairs among a collection, by sorting, never all pairs.
- ``lookup_keys(sigs)`` and ``min_shared``: keys to store in an inverted table; a stored
  document is a candidate for a query when they share at least ``min_shared`` keys in the same
  column. ``query_candidates`` does this in memory; the index does it with its own tables.
- ``score(x, y)`` and ``accept(score)``: the method's own score of row-aligned pairs and its
  own decision (SimHash: Hamming distance within k; MinHash: the features already decided).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..textbatch import TextBatch

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Signatures:
    """What a method keeps per document: ``data`` has one row per document (any trailing shape)."""

    data: np.ndarray

    def __len__(self) -> int:
        return int(self.data.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes)

    def take(self, rows: npt.ArrayLike) -> Signatures:
        """The signatures of documents ``rows``, in that order."""
        return Signatures(self.data[np.asarray(rows, dtype=np.int64)])

    @staticmethod
    def concat(parts: list[Signatures], like: Signatures | None = None) -> Signatures:
        """One block from many (an empty list gives ``like`` with no rows)."""
        if parts:
            return Signatures(np.concatenate([p.data for p in parts]))
        if like is None:
            return Signatures(np.zeros((0,), dtype=np.uint64))
        return Signatures(like.data[:0])


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

    def candidates(self, sigs: Signatures) -> Candidates: ...

    def lookup_keys(self, sigs: Signatures) -> npt.NDArray[np.uint64]: ...

    def score(self, x: Signatures, y: Signatures) -> FloatArray: ...

    def accept(self, score: FloatArray) -> npt.NDArray[np.bool_]: ...

    def describe(self) -> str: ...


def query_candidates(
    method: Method, stored: Signatures, queries: Signatures
) -> tuple[IntArray, IntArray, FloatArray]:
    """(query row, stored row, method score) of every stored document a query may duplicate.

    Lookup keys are matched column by column by sorting (never all pairs), pairs sharing at
    least ``method.min_shared`` keys are scored by the method and kept when it accepts them.
    Sorted by query row, then stored row.
    """
    from ..candidates import cross_pairs

    q, s = cross_pairs(method.lookup_keys(queries), method.lookup_keys(stored), method.min_shared)
    if len(q) == 0:
        return q, s, np.zeros(0, dtype=np.float64)
    score = method.score(queries.take(q), stored.take(s))
    ok = method.accept(score)
    return q[ok], s[ok], score[ok]
