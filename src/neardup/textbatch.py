"""Texts -> one batch view whose derived arrays (shingles, sets, sketches) are computed once.

A method and a verification may both need, say, the MinHash sketch of the same batch; asking
the batch for it twice computes it once. Nothing here is an algorithm of its own: every array
comes from the stage modules (``shingles``, ``minhash``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ._kernels.hashing import EMPTY
from ._kernels.shingles import unique_per_doc
from .minhash import sketch
from .params import ShingleParams, SketchParams
from .shingles import ShingleBatch, shingle_sequence, shingle_texts
from .text import Utf8Texts
from .text import check_texts as check_texts  # re-exported: engine and index import it here


class TextBatch:
    """A batch of texts and, on demand, what the stages derive from it (each computed once)."""

    def __init__(self, texts: Sequence[str], shingle: ShingleParams) -> None:
        """texts: strings as ``check_texts`` returns them (the signing entry points, the engine's
        ``sign`` and the index, check them once per batch; a batch's slices are not checked again)."""
        self.texts = texts
        self.shingle = shingle
        self._shingled: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._sets: ShingleBatch | None = None
        self._sketches: dict[SketchParams, npt.NDArray[np.uint64]] = {}
        self._sequences: dict[ShingleParams, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def _shingle(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._shingled is None:
            self._shingled = shingle_texts(self.texts, self.shingle)
        return self._shingled

    @property
    def canonical(self) -> npt.NDArray[np.uint64]:
        """Content hash of each canonical token sequence (``EMPTY`` for documents without tokens)."""
        return self._shingle()[2]

    @property
    def empty(self) -> npt.NDArray[np.bool_]:
        """Documents without tokens."""
        return self.canonical == EMPTY

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """Characters of each text."""
        if isinstance(self.texts, Utf8Texts):
            return self.texts.lengths()
        return np.fromiter(map(len, self.texts), dtype=np.int64, count=len(self.texts))

    def shingles(self) -> tuple[np.ndarray, np.ndarray]:
        """(fps, offsets): each document's shingle fingerprints in order, repeats kept."""
        fps, offsets, _ = self._shingle()
        return fps, offsets

    def sets(self) -> ShingleBatch:
        """Each document's shingle set (sorted unique fingerprints)."""
        if self._sets is None:
            self._sets = ShingleBatch(*unique_per_doc(*self.shingles()))
        return self._sets

    def sketch(self, params: SketchParams) -> npt.NDArray[np.uint64]:
        """The MinHash sketch uint64[n, t] of each document's shingle set."""
        if params not in self._sketches:
            self._sketches[params] = sketch(*self.shingles(), params)
        return self._sketches[params]

    def sequence(self, params: ShingleParams) -> tuple[np.ndarray, np.ndarray]:
        """(fps, offsets) under another shingling (e.g. SimHash's character q-grams)."""
        if params == self.shingle:
            return self.shingles()
        if params not in self._sequences:
            self._sequences[params] = shingle_sequence(self.texts, params)
        return self._sequences[params]
