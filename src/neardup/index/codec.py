"""Signatures and verification evidence <-> one bytes blob per document, shaped by an example.

The example is what the method and verifier give for an empty batch: it fixes the dtype and the
row shape (fixed-width rows, or CSR for variable-length ones), so a blob needs no header.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..methods import Signatures
from ..shingles import ShingleBatch
from ..verify import Evidence, RowEvidence, SetEvidence


def _split(data: np.ndarray, offsets: np.ndarray | None, n: int) -> list[bytes]:
    """One blob per document: a row of ``data`` or its CSR slice."""
    flat = np.ascontiguousarray(data)
    raw = flat.tobytes()
    size = flat.dtype.itemsize
    if offsets is None:
        width = flat.nbytes // max(n, 1)
        return [raw[i * width : (i + 1) * width] for i in range(n)]
    bounds = (np.asarray(offsets) * size).tolist()
    return [raw[bounds[i] : bounds[i + 1]] for i in range(n)]


def _join(blobs: Sequence[bytes], dtype: np.dtype, tail: tuple[int, ...]) -> np.ndarray:
    data = np.frombuffer(b"".join(blobs), dtype=dtype)
    return data.reshape((len(blobs), *tail)) if tail or not blobs else data


def _csr(blobs: Sequence[bytes], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum(sizes // dtype.itemsize, out=offsets[1:])
    return np.frombuffer(b"".join(blobs), dtype=dtype), offsets


def encode_signatures(sigs: Signatures) -> list[bytes]:
    return _split(sigs.data, sigs.offsets, len(sigs))


def decode_signatures(blobs: Sequence[bytes], like: Signatures) -> Signatures:
    if like.offsets is not None:
        data, offsets = _csr(blobs, like.data.dtype)
        return Signatures(data, offsets)
    return Signatures(_join(blobs, like.data.dtype, like.data.shape[1:]))


def encode_evidence(ev: Evidence) -> list[bytes]:
    if isinstance(ev, SetEvidence):
        return _split(ev.sets.fps, ev.sets.offsets, len(ev))
    if isinstance(ev, RowEvidence):
        return _split(ev.rows, None, len(ev))
    raise TypeError(f"no blob layout for {type(ev).__name__}")


def decode_evidence(blobs: Sequence[bytes], like: Evidence) -> Evidence:
    if isinstance(like, SetEvidence):
        data, offsets = _csr(blobs, like.sets.fps.dtype)
        return SetEvidence(ShingleBatch(data, offsets))
    if isinstance(like, RowEvidence):
        rows = _join(blobs, like.rows.dtype, like.rows.shape[1:])
        return RowEvidence(rows.reshape(len(blobs), *like.rows.shape[1:]))
    raise TypeError(f"no blob layout for {type(like).__name__}")
