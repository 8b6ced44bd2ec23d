"""In-memory store: the same protocol as SQLite, for tests, overlays and short-lived indexes.

Documents are rows in a dict; postings are sorted (key, doc) array blocks, each at least twice
the size of the next (a new block merges into the one before it until that holds: each posting
is merged about log2(blocks) times, however small the adds), looked up by binary search. A removed document's postings stay
in the blocks, its number listed as dead (lookups drop it), until a merge or enough removals
rewrite the blocks: removing a few documents at a time costs what they hold, not the index.
A transaction keeps a snapshot to restore on rollback.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..candidates import distinct, pairs_from_hits
from .store import Damage, IntArray, KeyArray, NewDocs, StoredDocs
from .usage import nested

# Row layout: id, hash, nkeys, sig, ev, text, meta, first_seen, last_seen, gone
_Row = list[object]


class MemoryStore:
    """The in-memory store (see the module docstring)."""

    def __init__(self) -> None:
        self.where = "<memory>"
        self.unicode_only = False
        self._meta: dict[str, str] = {}
        self._rows: dict[int, _Row] = {}
        self._ids: dict[str, int] = {}
        self._hashes: dict[int, tuple[int, ...]] = {}
        self._blocks: list[tuple[KeyArray, IntArray]] = []
        self._dead = np.zeros(0, dtype=np.int64)  # removed documents still in the blocks
        self._next = 0
        self._saved: tuple[object, ...] | None = None

    def read_meta(self) -> dict[str, str]:
        return dict(self._meta)

    def write_meta(self, values: dict[str, str]) -> None:
        self._meta.update(values)

    def begin(self) -> None:
        if self._saved is not None:
            raise nested(self.where)
        self._saved = (
            dict(self._rows),
            dict(self._ids),
            dict(self._hashes),
            list(self._blocks),
            self._dead,
            self._next,
        )

    def commit(self) -> None:
        self._saved = None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Nothing to do: one in-memory index is used from one thread."""
        yield

    def hold(self, budget: int) -> None:
        """Nothing to do: the postings are in memory."""

    def rollback(self) -> None:
        if self._saved is not None:
            rows, ids, hashes, blocks, dead, nxt = self._saved
            self._rows, self._ids, self._hashes = rows, ids, hashes  # type: ignore[assignment]
            self._blocks, self._dead, self._next = blocks, dead, nxt  # type: ignore[assignment]
        self._saved = None

    def insert(self, new: NewDocs) -> IntArray:
        n = len(new.ids)
        docs = np.arange(self._next, self._next + n, dtype=np.int64)
        self._next += n
        nkeys = np.bincount(new.posting_row, minlength=n).tolist()
        for i, d in enumerate(docs.tolist()):
            self._rows[d] = [
                new.ids[i],
                int(new.hashes[i]),
                nkeys[i],
                new.sigs[i],
                new.evidence[i],
                _as_str(new.texts[i]),
                new.meta[i],
                new.first_seen[i],
                new.last_seen[i],
                None,
            ]
            self._ids[new.ids[i]] = d
            h = int(new.hashes[i])
            self._hashes[h] = (*self._hashes.get(h, ()), d)
        key = new.posting_key.astype(np.uint64)
        doc = docs[new.posting_row]
        order = np.lexsort((doc, key))
        self._blocks.append((key[order], doc[order]))
        while len(self._blocks) > 1 and len(self._blocks[-2][0]) <= 2 * len(self._blocks[-1][0]):
            (k1, d1), (k2, d2) = self._blocks.pop(-2), self._blocks.pop()
            key, doc = np.concatenate([k1, k2]), np.concatenate([d1, d2])
            order = np.argsort(key, kind="stable")  # two sorted runs; d1's docs precede d2's
            self._blocks.append((key[order], doc[order]))
        return docs

    def _live_blocks(self) -> list[tuple[KeyArray, IntArray]]:
        """The blocks without the dead documents' postings."""
        if not len(self._dead):
            return self._blocks
        out = []
        for k, d in self._blocks:
            live = np.isin(d, self._dead, invert=True)
            out.append((k[live], d[live]))
        return out

    def delete(self, docs: IntArray, posting_doc: IntArray, posting_key: KeyArray) -> None:
        for d in docs.tolist():
            row = self._rows.pop(d)
            self._ids.pop(str(row[0]), None)
            h = int(row[1])  # type: ignore[call-overload]
            rest = tuple(x for x in self._hashes.get(h, ()) if x != d)
            if rest:
                self._hashes[h] = rest
            else:
                self._hashes.pop(h, None)
        self._dead = np.union1d(self._dead, docs)  # doc numbers are never used again
        if len(self._dead) > max(1024, len(self._rows) // 4):  # rewritten: amortised per doc
            self._blocks, self._dead = self._live_blocks(), self._dead[:0]

    def set_gone(self, docs: IntArray, date: str | None) -> None:
        for d in docs.tolist():
            self._rows[d] = copy.copy(self._rows[d])
            self._rows[d][9] = date

    def find_ids(self, ids: list[str]) -> IntArray:
        return np.array([self._ids.get(i, -1) for i in ids], dtype=np.int64)

    def exact(self, hashes: KeyArray) -> tuple[IntArray, IntArray]:
        q = [(i, d) for i, h in enumerate(hashes.tolist()) for d in self._hashes.get(h, ())]
        arr = np.array(q, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def shared(self, row: IntArray, key: KeyArray, min_shared: int) -> tuple[IntArray, IntArray]:
        wanted = distinct(key)  # postings come in key order: no sort
        hit_key: list[KeyArray] = []
        hit_doc: list[IntArray] = []
        for k, d in self._blocks:
            lo = np.searchsorted(k, wanted, side="left")
            hi = np.searchsorted(k, wanted, side="right")
            counts = hi - lo
            pos = np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
            hit_key.append(k[pos])
            hit_doc.append(d[pos])
        if not hit_key:
            e = np.zeros(0, dtype=np.int64)
            return e, e.copy()
        keys, docs = np.concatenate(hit_key), np.concatenate(hit_doc)
        if len(self._dead):
            live = np.isin(docs, self._dead, invert=True)
            keys, docs = keys[live], docs[live]
        return pairs_from_hits(row, key, keys, docs, min_shared)

    def load(self, docs: IntArray) -> StoredDocs:
        rows = [self._rows[d] for d in docs.tolist()]
        cols = [list(c) for c in zip(*rows, strict=True)] if rows else [[]] * 10
        return StoredDocs(
            np.asarray(docs, dtype=np.int64),
            cols[0],
            np.array(cols[1], dtype=np.uint64),
            *(cols[i] for i in (3, 4, 5, 6, 7, 8, 9)),
        )

    def count(self) -> int:
        return len(self._rows)

    def stats(self) -> dict[str, int | float | str]:
        return {
            "store": "memory",
            "documents": len(self._rows),
            "retired": sum(1 for r in self._rows.values() if r[9] is not None),
            "postings": int(sum(len(k) for k, _ in self._live_blocks())),
        }

    def check(self) -> list[str]:
        problems = []
        have = int(sum(len(k) for k, _ in self._live_blocks()))
        expected = sum(int(r[2]) for r in self._rows.values())  # type: ignore[call-overload]
        if have != expected:
            problems.append(f"documents list {expected} postings but the blocks hold {have}")
        if len(self._ids) != len(self._rows):
            problems.append("the id table and the document table differ")
        return problems

    def damage(self) -> Damage:
        """Nothing: records in memory are never written to a medium that could damage them."""
        return Damage(np.zeros(0, dtype=np.int64), [], {})

    def repair(self) -> Damage:
        return self.damage()

    def compact(self) -> tuple[int, int, int]:
        before, held = len(self._blocks), sum(len(k) for k, _ in self._blocks)
        live = [(k, d) for k, d in self._live_blocks() if len(k)]
        dropped = held - sum(len(k) for k, _ in live)
        if len(live) > 1:
            key = np.concatenate([k for k, _ in live])
            doc = np.concatenate([d for _, d in live])
            order = np.argsort(key, kind="stable")
            live = [(key[order], doc[order])]
        self._blocks, self._dead = live, self._dead[:0]
        return before, len(live), dropped

    def close(self) -> None:
        self.rollback()


def _as_str(text: str | memoryview | None) -> str | None:
    """A text to store as the SQLite store reads it back: a view of UTF-8 bytes decoded."""
    return (
        text.tobytes().decode("utf-8", "surrogateescape") if isinstance(text, memoryview) else text
    )
