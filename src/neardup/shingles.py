"""Texts -> w-shingle 64-bit fingerprints (Broder): the shingle set of each document, batched.

The resemblance of two documents is the Jaccard coefficient of their shingle sets. A document
shorter than w tokens has one shingle of all its tokens; a document with no tokens has none and
is flagged in ``ShingleBatch.empty``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from ._checks import offsets_valid
from ._kernels import shingles as _k
from .errors import ParamError
from .params import ShingleParams, check_kind
from .text import encode_batch, tables


@dataclass(frozen=True)
class ShingleBatch:
    """Shingle sets of n documents: doc i is ``fps[offsets[i]:offsets[i+1]]``, sorted, unique."""

    fps: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        if self.fps.dtype != np.uint64 or self.offsets.dtype != np.int64:
            raise ParamError("ShingleBatch needs fps as uint64 and offsets as int64 arrays")
        if not offsets_valid(self.offsets, len(self.fps)):
            raise ParamError(
                "ShingleBatch offsets must be n+1 non-decreasing boundaries from 0 to len(fps)"
            )

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def doc(self, i: int) -> np.ndarray:
        """The sorted unique fingerprints of document i."""
        return self.fps[self.offsets[i] : self.offsets[i + 1]]

    @property
    def sizes(self) -> np.ndarray:
        """Number of distinct shingles per document."""
        return np.diff(self.offsets)

    @property
    def empty(self) -> np.ndarray:
        """True for documents without any token (and so without shingles)."""
        return self.sizes == 0

    def take(self, rows: np.ndarray) -> ShingleBatch:
        """The sets of documents ``rows``, in that order, as a new batch."""
        rows = np.asarray(rows, dtype=np.int64)
        off = self.offsets
        sizes = (off[rows + 1] - off[rows]).astype(np.int64)
        new_off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=new_off[1:])
        total = int(new_off[-1])
        idx = np.repeat(off[rows] - new_off[:-1], sizes) + np.arange(total, dtype=np.int64)
        return ShingleBatch(np.ascontiguousarray(self.fps[idx]), new_off)

    @classmethod
    def concat(cls, parts: Sequence[ShingleBatch]) -> ShingleBatch:
        """The documents of ``parts``, in order, as one batch."""
        sizes = np.concatenate([np.zeros(0, np.int64), *(p.sizes for p in parts)])
        offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(np.concatenate([np.zeros(0, np.uint64), *(p.fps for p in parts)]), offsets)


@cache
def _rabin_table() -> np.ndarray:
    return _k.rabin_table()


def _run(
    texts: Sequence[str], params: ShingleParams
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    check_kind(params, ShingleParams, "ShingleParams(w=5, ...) or leave the default")
    is_word, fold = tables()
    buf, offsets = encode_batch(texts, params.nfkc)
    chars, rabin = params.tokens == "char", params.hash == "rabin"
    if not rabin:  # compiled for the token kind alone
        mixed = _k.shingle_chars_mixed if chars else _k.shingle_words_mixed
        return mixed(buf, offsets, is_word, fold, params.w)
    return _k.shingle_kernel(buf, offsets, is_word, fold, params.w, chars, rabin, _rabin_table())


def shingle_sequence(
    texts: Sequence[str], params: ShingleParams = ShingleParams()
) -> tuple[np.ndarray, np.ndarray]:
    """Shingle fingerprints in document order, repeats kept: (fps uint64[], offsets int64[n+1]).

    Use this where counts matter (weighted SimHash features); use ``shingle_batch`` for sets.
    """
    fps, offsets, _, _ = _run(texts, params)
    return fps, offsets


def shingle_batch(texts: Sequence[str], params: ShingleParams = ShingleParams()) -> ShingleBatch:
    """The shingle set (sorted, unique fingerprints) of every document in ``texts``."""
    fps, offsets = shingle_sequence(texts, params)
    return ShingleBatch(*_k.unique_per_doc(fps, offsets))


def shingle_texts(
    texts: Sequence[str], params: ShingleParams = ShingleParams()
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One pass for the engine: (fps with repeats, offsets, canonical content hash per document).

    The canonical hash is equal for documents whose canonical token sequences are equal (exact
    duplicates up to case, punctuation and spacing); it is ``EMPTY`` for documents without tokens.
    """
    fps, offsets, _, canonical = _run(texts, params)
    return fps, offsets, canonical


def content_hashes(
    texts: Sequence[str], params: ShingleParams = ShingleParams()
) -> tuple[np.ndarray, np.ndarray]:
    """(canonical uint64[n], raw uint64[n]): hashes of the canonical token sequence and of the text.

    Equal raw hashes mean identical text; equal canonical hashes mean the same tokens once case,
    punctuation and formatting are ignored. Both are 64-bit; collisions among a billion distinct
    documents have probability about 3%, among a million about 3e-8.
    """
    _, _, _, canonical = _run(texts, params)
    buf, offsets = encode_batch(texts, nfkc=False)
    return canonical, _k.raw_hash_kernel(buf, offsets)
