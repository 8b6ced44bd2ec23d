"""Numba kernels of the graph stage: a block's link records split by destination, and rows of
(key, document) -> links from each row's document to the smallest document with its key.

A block's keys become link records (a folded key's top bits and the document's index in the
block, packed in 64 bits) in one kernel of two passes (count, scatter) where a chain of NumPy
passes over millions of rows took most of the stage.

The cluster backend's graph stage links every document to the smallest holder of each lookup
key it has (a star per key); an open-addressing table over the keys finds those minima, where
sorting millions of random 64-bit keys took seconds. One table over millions of rows is probed
at random far beyond the caches, a miss on nearly every row; so the rows are first dealt into
partitions by their key's hash (sequential writes, one stream a partition) and each partition
gets a table small enough to stay in the core's cache. Equal keys share a hash, so a key's rows
all meet in one partition.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._jit import njit
from .hashing import EMPTY, bucket_u64, column_key, destination, splitmix64
from .keys import as_u64

#: Rows a partition holds on average: its table (at least 2 slots a row, a power of two, 16
#: bytes a slot) is then 16,384 slots, 256 KiB, within a core's L2 cache.
PART_ROWS = 6000


def split_links(
    keys: np.ndarray,
    row: np.ndarray,
    col: np.ndarray,
    canonical: np.ndarray,
    content_column: int,
    n_dests: int,
    index_bits: int,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """(link, start): the link records of a block's lookup keys, as ``posting_rows`` gives
    them (key ``keys[i, j]`` of document ``row[i]`` in column ``col[i] + j``, EMPTY skipped, in
    row-major order), then of each document's content hash (``canonical``, EMPTY skipped) in
    column ``content_column``, grouped by the destination in [0, n_dests) of the record's
    ``column_key`` (its fold), destination d holding ``[start[d], start[d + 1])`` in record
    order (as a stable sort by destination gives).

    A link is one 64-bit value: the fold's top ``64 - index_bits`` bits, then the document's
    index in the block in the low ``index_bits`` (0..63). Reading the key matrix in place
    spares the flat (row, column, key) copies of every key."""
    keys = as_u64(keys)
    if keys.ndim == 1:
        keys = keys[:, None]
    if not 0 <= index_bits <= 63:
        raise ValueError(f"index_bits {index_bits} is outside 0..63")
    content = np.int64(content_column).view(np.uint64)  # a negative column wraps, as astype
    n = int(np.count_nonzero(keys != EMPTY)) + int(np.count_nonzero(canonical != EMPTY))
    link = np.empty(n, dtype=np.uint64)
    start = np.zeros(max(n_dests, 1) + 1, dtype=np.int64)
    high = np.uint64(((1 << 64) - 1) ^ ((1 << index_bits) - 1))
    _split_links(
        keys,
        np.ascontiguousarray(row, dtype=np.int64),
        as_u64(col),
        as_u64(canonical),
        content,
        high,
        np.empty(n, dtype=np.int32),
        link,
        start,
    )
    return link, start


@njit(cache=True, nogil=True)
def _split_links(
    keys: np.ndarray,
    row: np.ndarray,
    col: np.ndarray,
    canonical: np.ndarray,
    content: np.uint64,
    high: np.uint64,
    dest: np.ndarray,
    link: np.ndarray,
    start: np.ndarray,
) -> None:
    """``split_links`` into ``link`` (a row per record) and ``start`` (zeros, a row per
    destination and one); ``high`` masks a fold's kept bits; ``dest`` (a row per record) is
    scratch."""
    n = start.shape[0] - 1
    nu = np.uint64(n)
    c = 0  # records so far
    for i in range(keys.shape[0]):  # count: each record's destination, kept for the scatter
        for j in range(keys.shape[1]):
            if keys[i, j] != EMPTY:
                d = destination(column_key(col[i] + np.uint64(j), keys[i, j]), nu)
                dest[c] = np.int32(d)
                start[d + np.uint64(1)] += 1
                c += 1
    for j in range(canonical.shape[0]):
        if canonical[j] != EMPTY:
            d = destination(column_key(content, canonical[j]), nu)
            dest[c] = np.int32(d)
            start[d + np.uint64(1)] += 1
            c += 1
    for k in range(n):
        start[k + 1] += start[k]
    fill = start[:n].copy()
    # Scatter, in record order within each destination; folds are computed again rather than
    # kept from the count, which would take another array as large as the records.
    c = 0
    for i in range(keys.shape[0]):
        for j in range(keys.shape[1]):
            if keys[i, j] != EMPTY:
                p = fill[dest[c]]
                fill[dest[c]] = p + 1
                fold = column_key(col[i] + np.uint64(j), keys[i, j])
                link[p] = (fold & high) | np.uint64(row[i])
                c += 1
    for j in range(canonical.shape[0]):
        if canonical[j] != EMPTY:
            p = fill[dest[c]]
            fill[dest[c]] = p + 1
            link[p] = (column_key(content, canonical[j]) & high) | np.uint64(j)
            c += 1


def key_links(
    keys: np.ndarray, docs: np.ndarray, part_rows: int = PART_ROWS
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(smallest, doc): for every row (``keys[i]``, ``docs[i]``) whose document is not the
    smallest of the documents of rows with its key, that smallest and the row's document
    (documents are >= 0), in no particular order; ``part_rows`` (rows a partition aims at)
    changes only the order.

    The row-sized buffers come from NumPy, which asks the kernel for huge pages: the dealing
    writes to a stream a partition, too many for the TLB's small pages. A fresh page costs a
    fault and zeroing, so the links are written as found, not a row-ordered answer first."""
    n = keys.shape[0]
    a = np.empty(n, dtype=np.int64)
    b = np.empty(n, dtype=np.int64)
    m = _key_links(keys, docs, part_rows, np.empty(2 * n, np.int64), a, b)
    return a[:m].copy(), b[:m].copy()


@njit(cache=True, inline="always")
def _slots(rows: int) -> int:
    """Slots of a table for ``rows`` rows: a power of two, at least 2 a row (and 16)."""
    slots = 16
    while slots < 2 * rows:
        slots *= 2
    return slots


@njit(cache=True, nogil=True)
def _key_links(
    keys: np.ndarray,
    docs: np.ndarray,
    part_rows: int,
    dealt: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
) -> int:
    """``key_links`` into ``a`` and ``b`` (room for a link a row): the number of links;
    ``dealt`` (2n) is scratch."""
    n = keys.shape[0]
    parts = max(1, (n + part_rows - 1) // part_rows)
    # splitmix64 is a bijection, so a key's hash stands for it: the hash's top bits pick the
    # partition, its low bits the slot in the partition's table
    start = np.zeros(parts + 1, dtype=np.int64)
    for i in range(n if parts > 1 else 0):  # one partition (few rows) holds all, in order
        start[bucket_u64(splitmix64(np.uint64(keys[i])), parts) + 1] += 1
    for p in range(parts):
        start[p + 1] += start[p]
    start[parts] = n
    fill = start[:parts].copy()
    for i in range(n):  # dealt: (hash, document) side by side, in partition order
        h = splitmix64(np.uint64(keys[i]))
        part = bucket_u64(h, parts)
        j = fill[part]
        fill[part] = j + 1
        dealt[2 * j] = np.int64(h)
        dealt[2 * j + 1] = docs[i]
    # one slot = (hash, smallest document) side by side: one cache line per probe; -1 is empty
    table = np.empty(2 * _slots(np.max(start[1:] - start[:-1])), dtype=np.int64)
    m = 0
    for p in range(parts):
        mask = _slots(start[p + 1] - start[p]) - 1
        table[: 2 * mask + 2] = -1
        for j in range(start[p], start[p + 1]):
            h, d = dealt[2 * j], dealt[2 * j + 1]
            s = h & mask
            while table[2 * s + 1] >= 0 and table[2 * s] != h:
                s = (s + 1) & mask
            if table[2 * s + 1] < 0 or d < table[2 * s + 1]:
                table[2 * s] = h
                table[2 * s + 1] = d
            dealt[2 * j] = 2 * s + 1
        for j in range(start[p], start[p + 1]):
            smallest = table[dealt[2 * j]]
            if dealt[2 * j + 1] != smallest:
                a[m] = smallest
                b[m] = dealt[2 * j + 1]
                m += 1
    return m
