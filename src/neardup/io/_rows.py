"""Pass 2 over a table file (Parquet, CSV): which rows of each batch are kept, by the record
numbers pass 1 skipped and the kept flags of the accepted rows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ._report import Entry, raise_changed


def kept_rows(
    entry: Entry, batches: Iterable[Any], keep: npt.NDArray[np.bool_]
) -> Iterator[tuple[Any, npt.NDArray[np.int64], npt.NDArray[np.bool_], int]]:
    """For each batch of the file's rows: (batch, indices of its accepted rows, kept-row
    mask, accepted rows before it). ``keep[i]`` is for the file's i-th accepted row; rows
    pass 1 skipped (by 1-based row number) are passed over. Stops after the last accepted
    row; raises when the file holds fewer (it changed between the passes)."""
    remaining = entry.n_docs
    if remaining == 0:
        return
    skip_rows = np.array(sorted(entry.skipped), dtype=np.int64)
    done = 0
    row0 = 0
    for batch in batches:
        n = batch.num_rows
        accepted = np.ones(n, dtype=np.bool_)
        lo, hi = np.searchsorted(skip_rows, [row0 + 1, row0 + n + 1])
        accepted[skip_rows[lo:hi] - row0 - 1] = False
        index = np.flatnonzero(accepted)[: remaining - done]
        select = np.zeros(n, dtype=np.bool_)
        select[index] = keep[done : done + index.size]
        yield batch, index, select, done
        done += index.size
        row0 += n
        if done == remaining:
            return
    raise_changed(entry)
