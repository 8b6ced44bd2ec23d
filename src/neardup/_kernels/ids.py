"""Numba kernels: UTF-8 ids -> 64-bit hashes; claims of ids in an open-addressing hash table.

The table holds document numbers (-1: free slot) and is probed linearly from an id's hash. Two
ids are the same only when their bytes are equal: the hash only picks the slots to look at, so
a hash collision never merges two ids. The reference is a Python dict's ``setdefault`` in
order (``tests/reference.py``).
"""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit(cache=True, inline="always")
def _same(buf: np.ndarray, lo: int, hi: int, other: np.ndarray, olo: int, ohi: int) -> bool:
    if hi - lo != ohi - olo:
        return False
    for p in range(hi - lo):  # noqa: SIM110 - Numba compiles loops, not generators
        if buf[lo + p] != other[olo + p]:
            return False
    return True


@njit(cache=True, nogil=True)
def claim_ids(
    table: np.ndarray,
    hashes: np.ndarray,
    buf: np.ndarray,
    offsets: np.ndarray,
    keys: np.ndarray,
    count: int,
    new_buf: np.ndarray,
    new_offsets: np.ndarray,
    new_hashes: np.ndarray,
    new_keys: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Claim the ids ``new_*`` in order: an id not seen before becomes document ``count`` (its
    bytes, hash and key appended to ``buf``/``offsets``/``hashes``/``keys``, which must have
    room) and gets -1; an id seen before (earlier here too) gets that document's number and is
    not stored. Returns (earlier number or -1 per id, the new count). ``table`` (a power of two
    long, with free slots left after the claims) maps hashes to document numbers."""
    mask = table.shape[0] - 1
    m = new_offsets.shape[0] - 1
    earlier = np.full(m, -1, dtype=np.int64)
    for i in range(m):
        h = new_hashes[i]
        lo, hi = new_offsets[i], new_offsets[i + 1]
        slot = np.int64(h & np.uint64(mask))
        while True:
            d = table[slot]
            if d < 0:
                table[slot] = count
                start = offsets[count]
                buf[start : start + hi - lo] = new_buf[lo:hi]
                offsets[count + 1] = start + hi - lo
                hashes[count] = h
                keys[count] = new_keys[i]
                count += 1
                break
            if hashes[d] == h and _same(buf, offsets[d], offsets[d + 1], new_buf, lo, hi):
                earlier[i] = d
                break
            slot = (slot + 1) & mask
    return earlier, count


@njit(cache=True, nogil=True)
def fill_table(table: np.ndarray, hashes: np.ndarray, count: int) -> None:
    """Put documents 0..count-1 (distinct ids) into an empty ``table`` by their hashes."""
    mask = table.shape[0] - 1
    for d in range(count):
        slot = np.int64(hashes[d] & np.uint64(mask))
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = d
