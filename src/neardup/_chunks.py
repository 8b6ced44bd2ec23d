"""Cutting rows into runs by count and by bytes: work pieces sized by what they hold."""

from __future__ import annotations

import numpy as np

from ._types import IntArray


def size_chunks(
    rows: IntArray, sizes: IntArray | None, max_rows: int, max_bytes: int
) -> list[IntArray]:
    """``rows`` cut in order into runs of at most ``max_rows`` rows and ``max_bytes`` of
    ``sizes[rows]`` (a longer row alone), so a chunk's memory follows its bytes, not its count."""
    if sizes is None or len(rows) == 0:
        return [rows[lo : lo + max_rows] for lo in range(0, len(rows), max_rows)]
    ends = np.cumsum(np.asarray(sizes, dtype=np.int64)[rows])
    out = []
    lo = 0
    while lo < len(rows):
        base = int(ends[lo - 1]) if lo else 0
        hi = int(np.searchsorted(ends, base + max_bytes, side="right"))
        hi = min(max(hi, lo + 1), lo + max_rows)
        out.append(rows[lo:hi])
        lo = hi
    return out
