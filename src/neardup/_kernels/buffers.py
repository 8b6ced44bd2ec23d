"""Growable arrays for kernels and their callers: doubling, so appends cost amortised O(1)."""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit(cache=True, inline="always")
def grown(values: np.ndarray, need: int) -> np.ndarray:
    """``values``, or a copy with room for at least ``need`` entries (twice as long at least)."""
    if need <= values.shape[0]:
        return values
    out = np.empty(max(need, 2 * values.shape[0]), dtype=values.dtype)
    out[: values.shape[0]] = values
    return out
