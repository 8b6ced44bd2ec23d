"""Numba kernels: UTF-8 strings -> JSON string literals, and value texts -> JSON Lines rows (a
Parquet or CSV file's kept records written as JSON Lines).

``json.dumps`` per record spent 60% of converting 1 GB of long documents escaping their texts a
character at a time (150 MB/s). The bytes are those ``json.dumps(value, ensure_ascii=False)``
writes (references in ``tests/reference.py``): quote and backslash escaped, the control
characters with a short escape as such, the others as lowercase ``\\u00xx``, the rest as is.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .ranges import copy_bytes

#: The letter of a control character's short escape (\b \t \n \f \r), else 0.
_SHORT = np.zeros(32, dtype=np.uint8)
for _code, _letter in ((8, "b"), (9, "t"), (10, "n"), (12, "f"), (13, "r")):
    _SHORT[_code] = ord(_letter)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).copy()


@njit(cache=True, nogil=True)
def quote_strings(buf: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each string ``buf[offsets[i]:offsets[i + 1]]`` (UTF-8) as a JSON string literal, quotes
    included: (bytes, offsets[n + 1]) of the literals, back to back."""
    n = offsets.shape[0] - 1
    out_offsets = np.empty(n + 1, dtype=np.int64)
    out_offsets[0] = 0
    total = 0
    for i in range(n):
        size = 2
        for p in range(offsets[i], offsets[i + 1]):
            c = buf[p]
            if c == 0x22 or c == 0x5C:
                size += 2
            elif c < 0x20:
                size += 2 if _SHORT[c] else 6
            else:
                size += 1
        total += size
        out_offsets[i + 1] = total
    out = np.empty(total, dtype=np.uint8)
    q = 0
    for i in range(n):
        out[q] = 0x22
        q += 1
        for p in range(offsets[i], offsets[i + 1]):
            c = buf[p]
            if c == 0x22 or c == 0x5C:
                out[q] = 0x5C
                out[q + 1] = c
                q += 2
            elif c < 0x20:
                out[q] = 0x5C
                if _SHORT[c]:
                    out[q + 1] = _SHORT[c]
                    q += 2
                else:
                    out[q + 1] = 0x75  # u00xx
                    out[q + 2] = 0x30
                    out[q + 3] = 0x30
                    out[q + 4] = _HEX[c >> 4]
                    out[q + 5] = _HEX[c & 15]
                    q += 6
            else:
                out[q] = c
                q += 1
        out[q] = 0x22
        q += 1
    return out, out_offsets


@njit(cache=True, nogil=True)
def join_rows(
    consts: np.ndarray, const_offsets: np.ndarray, values: np.ndarray, starts: np.ndarray,
    ends: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Rows of ``k`` values: for row i, constant 0, ``values[starts[0, i]:ends[0, i]]``,
    constant 1, ..., value k - 1, constant k (``consts[const_offsets[j]:const_offsets[j + 1]]``),
    every row after the other."""
    k, n = starts.shape
    fixed = const_offsets[k + 1] - const_offsets[0]
    total = n * fixed
    for j in range(k):
        for i in range(n):
            total += ends[j, i] - starts[j, i]
    out = np.empty(total, dtype=np.uint8)
    q = 0
    for i in range(n):
        for j in range(k + 1):
            a, b = const_offsets[j], const_offsets[j + 1]
            copy_bytes(out[q : q + b - a], consts[a:b])
            q += b - a
            if j < k:
                a, b = starts[j, i], ends[j, i]
                copy_bytes(out[q : q + b - a], values[a:b])
                q += b - a
    return out
