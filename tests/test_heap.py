"""Freed NumPy blocks go back to the system when the heap is trimmed (glibc only)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from neardup import _heap


def _anon_mb() -> float:
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("RssAnon:"))
    return int(line.split()[1]) / 1024


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or _heap._malloc_trim() is None, reason="glibc only"
)
def test_trim_returns_freed_blocks_that_malloc_kept() -> None:
    first = np.ones((4 << 20) // 8)
    del first  # a freed mapping raises glibc's mmap threshold: later blocks come from the heap
    blocks, small = [], []
    for _ in range(100):  # 3 MB blocks with small arrays between them: holes, not a free top
        blocks.append(np.ones((3 << 20) // 8))
        small.append(np.ones(1000))
    held = _anon_mb()
    del blocks
    kept = _anon_mb()
    assert _heap.trim()
    assert kept - _anon_mb() > 200  # of the 300 MB freed, malloc had kept most
    assert held - kept < 100
