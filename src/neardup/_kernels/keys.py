"""Numba kernels: the (column, key) fold and the destination of 64-bit values, over arrays.

The formulas themselves are ``hashing.column_key`` and ``hashing.destination``, so the graph
stage's fused link split (``links.split_links``) computes exactly what these give.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._jit import njit
from .hashing import column_key, destination


def as_u64(values: np.ndarray) -> npt.NDArray[np.uint64]:
    """``values`` as uint64, wrapping modulo 2**64 as ``astype`` does (a view when 8 bytes)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.uint64:
        return values
    if values.dtype == np.int64:
        return values.view(np.uint64)
    return values.astype(np.uint64)


def column_keys(col: np.ndarray, key: np.ndarray) -> npt.NDArray[np.uint64]:
    """``column_key`` of each (column, key) row."""
    out = np.empty(len(key), dtype=np.uint64)
    _column_keys(as_u64(col), as_u64(key), out)
    return out


def destinations(values: np.ndarray, n: int) -> npt.NDArray[np.int64]:
    """``destination`` in [0, max(n, 1)) of each 64-bit value."""
    out = np.empty(len(values), dtype=np.int64)
    _destinations(as_u64(values), np.uint64(max(n, 1)), out)
    return out


@njit(cache=True, nogil=True)
def _column_keys(col: np.ndarray, key: np.ndarray, out: np.ndarray) -> None:
    """``column_keys`` into ``out``."""
    for i in range(key.shape[0]):
        out[i] = column_key(col[i], key[i])


@njit(cache=True, nogil=True)
def _destinations(values: np.ndarray, n: np.uint64, out: np.ndarray) -> None:
    """``destinations`` into ``out``."""
    for i in range(values.shape[0]):
        out[i] = np.int64(destination(values[i], n))
