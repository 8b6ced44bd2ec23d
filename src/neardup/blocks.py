"""Where a ``Deduplicator`` keeps each batch's blocks until ``finish``, and how ``finish`` reads them.

A batch contributes four blocks: content hashes and lengths (small, always needed whole) and the
method's signatures and the verifier's evidence (the bulk). A ``BlockStore`` holds them and
answers the few reads ``finish`` makes, each by sorted global document indices, so the engine
never asks where a block lives:

- ``hashes()``: every content hash and length, whole;
- ``key_columns(method, rows)``: one candidate-key column of documents ``rows`` at a time;
- ``take_signatures(rows)`` / ``take_evidence(rows)``: the rows needed, read once, after which
  the store holds no more of that kind (``drop_signatures`` when the rows are not needed).

``MemoryBlocks`` holds everything in memory; ``SpillBlocks`` holds blocks up to a budget, then
writes each next one to a temporary folder and reads it back memory-mapped (``spill.py``). A
store whose blocks stay on Dask workers would answer the same reads by fetching rows from the
partitions that hold them. Every store gives the same arrays, so results never depend on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ._types import IntArray
from .methods import KeyedCandidates, Signatures
from .spill import Spill, release_pages
from .verify import Evidence, RowEvidence, concat_evidence

#: (column(j): candidate key j of the documents asked for, uint64; number of key columns).
KeyColumns = tuple[Callable[[int], npt.NDArray[np.uint64]], int]


@dataclass(frozen=True)
class SignedBatch:
    """One batch's contribution: content hashes, lengths, method signatures, evidence."""

    canonical: npt.NDArray[np.uint64]
    lengths: IntArray
    signatures: Signatures
    evidence: Evidence

    @classmethod
    def concat(cls, parts: Sequence[SignedBatch]) -> SignedBatch:
        """One batch of the documents of consecutive ``parts`` (at least one), in order."""
        return cls(
            np.concatenate([p.canonical for p in parts]),
            np.concatenate([p.lengths for p in parts]),
            Signatures.concat([p.signatures for p in parts]),
            concat_evidence([p.evidence for p in parts]),
        )

    def take(self, rows: IntArray) -> SignedBatch:
        """The batch of documents ``rows``, in that order."""
        return SignedBatch(
            self.canonical[rows],
            self.lengths[rows],
            self.signatures.take(rows),
            self.evidence.take(rows),
        )


class BlockStore(Protocol):
    """Per-batch blocks kept in order until ``finish`` (see the module docstring)."""

    def __len__(self) -> int:
        """Documents held."""
        ...

    @property
    def held(self) -> int:
        """Bytes held in memory (blocks written to disk not counted)."""
        ...

    @property
    def nbytes(self) -> int:
        """Bytes of every block, wherever it is."""
        ...

    @property
    def spilled(self) -> int:
        """Bytes of blocks written to disk."""
        ...

    def append(self, batch: SignedBatch) -> None:
        """Keep a batch's blocks; its documents' indices continue from the previous batch."""
        ...

    def hashes(self) -> tuple[npt.NDArray[np.uint64], IntArray]:
        """Every document's content hash and length, whole (read once)."""
        ...

    def key_columns(self, method: KeyedCandidates, rows: IntArray) -> KeyColumns | None:
        """The method's candidate keys of documents ``rows``, one column at a time; None when
        the signatures are not one fixed-width row per document."""
        ...

    def take_signatures(self, rows: IntArray) -> Signatures:
        """The signatures of documents ``rows``; the store keeps no signatures after."""
        ...

    def drop_signatures(self) -> None:
        """Let the signatures go (their keys were all that was needed)."""
        ...

    def take_evidence(self, rows: IntArray) -> Evidence:
        """The evidence of documents ``rows``; the store keeps no evidence after."""
        ...

    def close(self) -> None:
        """Release what the store holds outside memory (files)."""
        ...


def _cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


def _split(lengths: list[int], rows: IntArray) -> list[tuple[int, IntArray]]:
    """(part, local rows) for sorted global ``rows`` over consecutive parts of these lengths."""
    out: list[tuple[int, IntArray]] = []
    start = 0
    for i, length in enumerate(lengths):
        lo, hi = np.searchsorted(rows, [start, start + length])
        if hi > lo:
            out.append((i, rows[lo:hi] - start))
        start += length
    return out


def _gather(
    parts: list[Any],
    rows_of: Callable[[Any], np.ndarray],
    split: list[tuple[int, IntArray]],
    n: int,
    empty: Any,
) -> np.ndarray:
    """The ``split`` rows of each part's fixed-width array (``rows_of``), copied into one array
    of ``n`` rows; each part is replaced by ``empty`` once copied, so a memory-mapped block is
    unmapped then and the peak holds the blocks or their rows, never both and a concatenation."""
    like = rows_of(empty)
    out = np.empty((n, *like.shape[1:]), dtype=like.dtype)
    at = 0
    for i, local in split:
        out[at : at + len(local)] = rows_of(parts[i])[local]
        at += len(local)
        parts[i] = empty
    return out


def _fixed_rows(sigs: Signatures) -> bool:
    """One row of fixed width per document (not CSR)."""
    return sigs.offsets is None and sigs.data.ndim == 2


class MemoryBlocks:
    """Every block in memory, as the batches gave them."""

    def __init__(self) -> None:
        self._canonical: list[npt.NDArray[np.uint64]] = []
        self._lengths: list[IntArray] = []
        self._signatures: list[Signatures] = []
        self._evidence: list[Evidence] = []
        self._n = 0
        self._held = 0
        self._nbytes = 0

    def __len__(self) -> int:
        return self._n

    @property
    def held(self) -> int:
        return self._held

    @property
    def nbytes(self) -> int:
        return self._nbytes

    @property
    def spilled(self) -> int:
        return 0

    def _place(self, signatures: Signatures, evidence: Evidence) -> tuple[Signatures, Evidence]:
        """Where this batch's signatures and evidence live (here: in memory, as given)."""
        return signatures, evidence

    def append(self, batch: SignedBatch) -> None:
        signatures, evidence = self._place(batch.signatures, batch.evidence)
        small = batch.canonical.nbytes + batch.lengths.nbytes
        kept = signatures is batch.signatures  # not written to disk
        self._held += small + (signatures.nbytes + evidence.nbytes if kept else 0)
        self._nbytes += small + signatures.nbytes + evidence.nbytes
        self._canonical.append(batch.canonical)
        self._lengths.append(batch.lengths)
        self._signatures.append(signatures)
        self._evidence.append(evidence)
        self._n += len(batch.canonical)

    def hashes(self) -> tuple[npt.NDArray[np.uint64], IntArray]:
        canonical = _cat(self._canonical, np.uint64)
        lengths = _cat(self._lengths, np.int64)
        self._canonical.clear()  # the pieces, now copied
        self._lengths.clear()
        return canonical, lengths

    def key_columns(self, method: KeyedCandidates, rows: IntArray) -> KeyColumns | None:
        """Pages of memory-mapped blocks are released as they are read, so only the column
        being built stays resident."""
        parts = self._signatures
        if not parts or not all(_fixed_rows(p) for p in parts):
            return None
        split = _split([len(p) for p in parts], rows)
        k = int(method.candidate_keys(parts[0].take(rows[:0])).shape[1])

        def column(j: int) -> npt.NDArray[np.uint64]:
            out = np.empty(len(rows), dtype=np.uint64)
            at = 0
            for i, local in split:
                keys = method.candidate_keys(parts[i])
                out[at : at + len(local)] = keys[local, j]
                release_pages(keys)
                at += len(local)
            return out

        return column, k

    def take_signatures(self, rows: IntArray) -> Signatures:
        """Each block is dropped once its rows are copied out (memory-mapped ones are
        unmapped), so the peak holds the blocks or their rows, not both and a concatenation."""
        parts = self._signatures
        split = _split([len(p) for p in parts], rows)
        try:
            if not parts or not split or not all(p.offsets is None for p in parts):
                picked = [parts[i].take(local) for i, local in split]
                if not picked and parts:
                    return parts[0].take(rows[:0])
                return Signatures.concat(picked)
            empty = parts[split[0][0]].take(split[0][1][:0])  # not a view of a mapped block
            out = _gather(parts, lambda p: p.data, split, len(rows), empty)
            return Signatures(out)
        finally:
            parts.clear()

    def drop_signatures(self) -> None:
        self._signatures.clear()

    def take_evidence(self, rows: IntArray) -> Evidence:
        """Each block is dropped (unmapped) once its rows are copied, so the pages read from
        mapped blocks never pile up; fixed-width rows go straight into the one array returned
        (not a list of pieces and then their concatenation: twice the evidence at the peak)."""
        parts = self._evidence
        if not parts:
            return concat_evidence([])
        like = parts[0].take(rows[:0])
        split = _split([len(p) for p in parts], rows)
        if all(isinstance(p, RowEvidence) for p in parts):  # fixed-width rows: one array
            out = _gather(parts, lambda p: p.rows, split, len(rows), like)
            parts.clear()
            return RowEvidence(out)
        picked = []
        for i, local in split:
            picked.append(parts[i].take(local))
            parts[i] = like
        parts.clear()
        return concat_evidence(picked) if picked else like

    def close(self) -> None:
        """Nothing outside memory."""


class SpillBlocks(MemoryBlocks):
    """Blocks in memory up to ``limit`` bytes; past it each next batch's signatures and
    evidence are written to a temporary folder (in ``folder``, else the system's) and read
    back memory-mapped, the same arrays."""

    def __init__(self, limit: int, folder: str | None = None) -> None:
        super().__init__()
        self.limit = limit
        self._folder = folder
        self._spill: Spill | None = None

    @property
    def spilled(self) -> int:
        return 0 if self._spill is None else self._spill.bytes

    def _place(self, signatures: Signatures, evidence: Evidence) -> tuple[Signatures, Evidence]:
        if self._held + signatures.nbytes + evidence.nbytes <= self.limit:
            return signatures, evidence
        if self._spill is None:
            self._spill = Spill(self._folder)
        return self._spill.signatures(signatures), self._spill.evidence(evidence)

    def close(self) -> None:
        """Remove the folder of spilled blocks now."""
        if self._spill is not None:
            self._spill.close()
