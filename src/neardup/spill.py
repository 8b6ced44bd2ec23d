"""Per-batch blocks (signatures, evidence) -> the same blocks on disk, memory-mapped.

When the blocks a ``Deduplicator`` keeps until ``finish`` would pass a memory budget
(``blocks.SpillBlocks``), each new block is written to a private temporary folder and read back
memory-mapped: ``finish`` then gathers only what it needs (one key column of the group
representatives at a time, the rows of documents in candidate pairs and big buckets), so the
resident set stays near what those need, not the corpus. Pages of a mapped block that were read
count as resident until they are released (``release_pages``) or the block is dropped, so
readers release them as they go. The arrays are the same, so the results are byte-identical to
an in-memory run.
"""

from __future__ import annotations

import mmap
import shutil
import tempfile
import weakref
from pathlib import Path

import numpy as np

from .methods import Signatures
from .shingles import ShingleBatch
from .verify import Evidence, RowEvidence, SetEvidence


class Spill:
    """A temporary folder of memory-mapped arrays, removed when the owner is collected."""

    def __init__(self, folder: str | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="neardup-spill-", dir=folder))
        self._count = 0
        self.bytes = 0
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, True)

    def array(self, values: np.ndarray) -> np.ndarray:
        """``values`` written to disk and mapped back read-only, in the same memory order (a
        Fortran-ordered block stays one: its columns are contiguous on disk). Object arrays
        and empty ones stay in memory."""
        if values.dtype == object or values.size == 0:
            return values
        fortran = values.ndim > 1 and values.flags.f_contiguous and not values.flags.c_contiguous
        raw = values.T if fortran else np.ascontiguousarray(values)
        file = self.path / f"{self._count}.bin"
        self._count += 1
        with open(file, "wb") as fh:
            raw.tofile(fh)
        with open(file, "rb") as fh:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.bytes += int(values.nbytes)
        out = np.frombuffer(mapped, dtype=values.dtype).reshape(raw.shape)
        return out.T if fortran else out

    def signatures(self, sigs: Signatures) -> Signatures:
        offsets = None if sigs.offsets is None else self.array(sigs.offsets)
        return Signatures(self.array(sigs.data), offsets)

    def evidence(self, ev: Evidence) -> Evidence:
        if isinstance(ev, RowEvidence):
            return RowEvidence(self.array(ev.rows))
        if isinstance(ev, SetEvidence):
            return SetEvidence(ShingleBatch(self.array(ev.sets.fps), self.array(ev.sets.offsets)))
        return ev

    def close(self) -> None:
        """Remove the folder now."""
        self._cleanup()


def release_pages(values: np.ndarray) -> None:
    """Drop the pages of the memory-mapped block behind ``values`` from this process's resident
    set (nothing for arrays in memory). The data stays valid: a later read maps the pages in
    again from the file (the page cache, usually)."""
    base: object = values
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    if isinstance(base, mmap.mmap) and not base.closed:
        base.madvise(mmap.MADV_DONTNEED)
