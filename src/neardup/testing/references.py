"""Brute-force references for tests and benchmarks: O(n^2) answers to check the fast paths against."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..hamming import as_fingerprints


def hamming_pairs_reference(
    fps: npt.ArrayLike, k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """Brute-force O(n^2) reference: popcount of every pair, in NumPy. For tests and small n."""
    x = as_fingerprints(fps)
    n = x.shape[0]
    out_a, out_b, out_d = [], [], []
    for i in range(n - 1):
        d = _popcount_np(x[i] ^ x[i + 1 :])
        hit = np.nonzero(d <= k)[0]
        out_a.append(np.full(hit.shape[0], i, np.int64))
        out_b.append(hit.astype(np.int64) + i + 1)
        out_d.append(d[hit].astype(np.int32))
    if not out_a:
        e = np.empty(0, np.int64)
        return e, e.copy(), np.empty(0, np.int32)
    return np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_d)


def _popcount_np(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Popcount of a uint64 array in plain NumPy (byte table lookup): the reference's popcount."""
    table = np.array([bin(i).count("1") for i in range(256)], np.int64)
    return table[x.view(np.uint8).reshape(-1, 8)].sum(axis=1)
