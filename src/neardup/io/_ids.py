"""Ids of pass 1 -> which records claim a new id, and every id kept compactly for the outputs.

Pass 1 drops (or stops at) a record whose id an earlier record already has. Over millions of
records a dict of Python strings costs ~130 bytes an id and a Python call per record; here the
ids of a block are claimed in one kernel call (``_kernels.ids.claim_ids``) against an
open-addressing table of document numbers, and kept as one UTF-8 buffer with offsets: ~16 bytes
an id beyond its own bytes, plus 8 for the table, which is freed when pass 1 ends. Document
numbers are claim order, i.e. the global positions of pass 1.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from .._types import IntArray
from ..text import Utf8Texts

#: The table is grown (doubled) before claims would fill more than this share of its slots.
MAX_LOAD = 0.6


def _kernels() -> tuple[ModuleType, ModuleType, ModuleType]:
    """The kernel modules ids are claimed with (``buffers``, ``ids``, ``shingles``), imported
    on the first claim: Numba loads once records are read, not at import."""
    from .._kernels import buffers, ids, shingles

    return buffers, ids, shingles


class IdRegistry:
    """Every id claimed so far, in claim order, with the record key (file index and record
    number, for messages) of the record that claimed it."""

    def __init__(self) -> None:
        self.count = 0
        self._buf = np.zeros(1 << 12, dtype=np.uint8)
        self._offsets = np.zeros(1 << 10, dtype=np.int64)
        self._hashes = np.zeros(1 << 10, dtype=np.uint64)
        self._keys = np.zeros(1 << 10, dtype=np.int64)
        self._table = np.full(1 << 11, -1, dtype=np.int64)

    def claim(self, ids: Utf8Texts, keys: IntArray) -> IntArray:
        """Claim ``ids`` in order for the records ``keys``: -1 where the id is new (the record
        claims it), else the key of the record that claimed it first (earlier in ``ids`` too)."""
        buffers, _k, shingles = _kernels()
        grown, raw_hash_kernel = buffers.grown, shingles.raw_hash_kernel

        m = len(ids)
        if m == 0:
            return np.zeros(0, dtype=np.int64)
        buf, offsets = ids.buf, ids.offsets
        size = int(offsets[-1] - offsets[0])
        self._buf = grown(self._buf, int(self._offsets[self.count]) + size)
        self._offsets = grown(self._offsets, self.count + m + 1)
        self._hashes = grown(self._hashes, self.count + m)
        self._keys = grown(self._keys, self.count + m)
        if self.count + m > MAX_LOAD * self._table.shape[0]:
            slots = self._table.shape[0]
            while self.count + m > MAX_LOAD * slots:
                slots *= 2
            self._table = np.full(slots, -1, dtype=np.int64)
            _k.fill_table(self._table, self._hashes, self.count)
        earlier, self.count = _k.claim_ids(
            self._table,
            self._hashes,
            self._buf,
            self._offsets,
            self._keys,
            self.count,
            buf,
            offsets,
            raw_hash_kernel(buf, offsets),  # an id's hash: that of its raw UTF-8 bytes
            np.ascontiguousarray(keys, dtype=np.int64),
        )
        found = earlier >= 0
        earlier[found] = self._keys[earlier[found]]
        return earlier

    def claim_one(self, rid: str, key: int) -> int:
        """``claim`` of a single id: -1 when new, else the earlier record's key."""
        return int(self.claim(Utf8Texts.from_strings([rid]), np.array([key]))[0])

    def ids(self) -> Utf8Texts:
        """The claimed ids in claim order (a copy of exactly their bytes)."""
        end = int(self._offsets[self.count])
        return Utf8Texts(self._buf[:end].copy(), self._offsets[: self.count + 1].copy())

    def close(self) -> Utf8Texts:
        """The ids, with the table and hashes freed: no more claims."""
        out = self.ids()
        empty = np.zeros(0, dtype=np.int64)
        self._buf, self._offsets, self._keys = np.zeros(0, np.uint8), np.zeros(1, np.int64), empty
        self._hashes, self._table = np.zeros(0, np.uint64), np.full(1, -1, np.int64)
        self.count = 0
        return out


class Claims:
    """The ids claimed so far in a pass 1, and by which record (a key: file index and record
    number). Blocks claim in one kernel call (``IdRegistry``); records read one at a time use a
    dict, whose ids reach the registry before the next block's claims, so each sees every earlier
    id. After a block, single records ask the registry (slower; only when a stream follows a
    file)."""

    def __init__(self) -> None:
        self.registry = IdRegistry()
        self._seen: dict[str, int] | None = {}
        self._ids: list[str] = []
        self._keys: list[int] = []

    def one(self, rid: str, key: int) -> int:
        """-1 when ``rid`` is new (claimed now), else the key of the record that has it."""
        if self._seen is None:
            return self.registry.claim_one(rid, key)
        earlier = self._seen.setdefault(rid, key)
        if earlier != key:
            return earlier
        self._ids.append(rid)
        self._keys.append(key)
        if len(self._ids) >= 65_536:
            self._flush()
        return -1

    def block(self, ids: Utf8Texts, keys: IntArray) -> IntArray:
        """``IdRegistry.claim`` after the records claimed one at a time."""
        self._flush()
        self._seen = None
        return self.registry.claim(ids, keys)

    def _flush(self) -> None:
        if self._ids:
            self.registry.claim(Utf8Texts.from_strings(self._ids), np.asarray(self._keys))
            self._ids, self._keys = [], []

    def close(self) -> Utf8Texts:
        """Every claimed id in claim order (= position); the tables are freed."""
        self._flush()
        self._seen = None
        return self.registry.close()
