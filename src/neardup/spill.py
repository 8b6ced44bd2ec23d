"""Per-batch blocks (signatures, evidence) -> the same blocks on disk, memory-mapped.

When the blocks a ``Deduplicator`` keeps until ``finish`` would pass a memory budget, each new
block is written to a private temporary folder and read back memory-mapped: ``finish`` then
gathers only the rows it needs (the candidate keys of group representatives, the evidence of
documents in candidate pairs), so the resident set stays near what those need, not the corpus.
The arrays are the same, so the results are byte-identical to an in-memory run.
"""

from __future__ import annotations

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
        """``values`` written to disk and mapped back read-only (object arrays stay in memory)."""
        if values.dtype == object or values.size == 0:
            return values
        file = self.path / f"{self._count}.npy"
        self._count += 1
        np.save(file, values, allow_pickle=False)
        self.bytes += int(values.nbytes)
        return np.load(file, mmap_mode="r")

    def signatures(self, sigs: Signatures) -> Signatures:
        if type(sigs) is not Signatures:  # remote or special blocks stay as they are
            return sigs
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
