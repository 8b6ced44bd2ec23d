"""Shingle sets -> MinHash sketches uint64[n, t], and resemblance estimates from sketches.

Three sketch kinds share one format (a row of t uint64 values per document, all ``EMPTY`` for a
document without shingles):
- ``oph`` (default): one-permutation hashing with optimal densification: one hash per shingle,
  the fastest; positions are compared like the classic sketch.
- ``classic``: t independent min-wise hash functions (Broder); share of equal positions.
- ``bottomk``: one hash function, the t smallest values; estimate by merging two sketches.
For all three the estimate of resemblance J is unbiased with standard error about
``sqrt(J (1 - J) / t)`` (bottom-k slightly less: it samples without replacement).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import offsets_valid, pair_indices
from ._kernels import minhash as _k
from ._kernels.hashing import EMPTY as _EMPTY
from .errors import ParamError
from .params import ShingleParams, SketchKind, SketchParams, check_kind
from .shingles import ShingleBatch, shingle_sequence

#: The value filling every position of an empty document's sketch.
EMPTY = int(_EMPTY)


def _seed(params: SketchParams) -> np.uint64:
    return np.uint64(params.seed)


def sketch(
    fps: np.ndarray, offsets: np.ndarray, params: SketchParams = SketchParams()
) -> np.ndarray:
    """Sketch each document's fingerprints ``fps[offsets[i]:offsets[i+1]]`` -> uint64[n, t].

    Repeated fingerprints within a document are allowed and change nothing (a sketch is a function
    of the shingle *set*), so ``shingle_sequence`` output can be sketched without deduplication.
    """
    check_kind(params, SketchParams, "SketchParams(kind='oph', t=128, ...) or leave the default")
    fps = np.ascontiguousarray(fps, dtype=np.uint64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if not offsets_valid(offsets, fps.shape[0]):
        raise ParamError(
            "offsets must be n+1 non-decreasing boundaries from 0 to len(fps); "
            "document i is fps[offsets[i]:offsets[i+1]]"
        )
    seed = _seed(params)
    if params.kind == "oph":
        return _k.sketch_oph(fps, offsets, seed, params.t)
    if params.kind == "classic":
        a, b = _k.classic_coefficients(seed, params.t)
        return _k.sketch_classic(fps, offsets, seed, a, b)
    return _k.sketch_bottomk(fps, offsets, seed, params.t)


def sketch_batch(batch: ShingleBatch, params: SketchParams = SketchParams()) -> np.ndarray:
    """Sketch a ``ShingleBatch`` -> uint64[n, t]."""
    return sketch(batch.fps, batch.offsets, params)


def sketch_texts(
    texts: Sequence[str],
    shingle_params: ShingleParams = ShingleParams(),
    params: SketchParams = SketchParams(),
) -> np.ndarray:
    """Raw texts -> uint64[n, t] sketches in one call (tokenise, shingle, sketch)."""
    fps, offsets = shingle_sequence(texts, shingle_params)
    return sketch(fps, offsets, params)


def estimate_pairs(
    sketches: np.ndarray, a: np.ndarray, b: np.ndarray, kind: SketchKind = "oph"
) -> np.ndarray:
    """Estimated resemblance of documents a[i] and b[i] from their sketch rows -> float64[m].

    A pair involving an empty document scores 0: emptiness is reported, never matched.
    """
    # Sketches truncated to their low 16 or 32 bits compare as well in less memory (the engine
    # keeps 16); rows of empty documents must then not be passed, their EMPTY mark is gone.
    if sketches.dtype not in (np.uint16, np.uint32):
        sketches = np.ascontiguousarray(sketches, dtype=np.uint64)
    if sketches.ndim != 2:
        raise ParamError(f"sketches must be a 2-d array (n, t), got shape {sketches.shape}")
    a, b = pair_indices(a, b, sketches.shape[0])
    if kind == "bottomk":
        return _k.estimate_bottomk(sketches, a, b)
    if kind in ("oph", "classic"):
        return _k.estimate_positional(sketches, a, b)
    raise ParamError(f"sketch kind must be 'oph', 'classic' or 'bottomk', got {kind!r}")


def estimate(x: np.ndarray, y: np.ndarray, kind: SketchKind = "oph") -> float:
    """Estimated resemblance of two documents from their sketch rows."""
    both = np.vstack([x, y]).astype(np.uint64)
    return float(estimate_pairs(both, np.array([0]), np.array([1]), kind)[0])


def expected_error(j: float | np.ndarray, t: int) -> float | np.ndarray:
    """Standard error of the estimate at true resemblance j with t sketch values: sqrt(j(1-j)/t)."""
    return np.sqrt(np.asarray(j) * (1 - np.asarray(j)) / t)
