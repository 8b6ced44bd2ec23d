"""Texts a finish task reads again for exact re-checks: by byte span from a plain file; from a
gzip file once for the whole task.

The finish engine asks for borderline documents' texts a chunk at a time, dozens of times on a
corpus with many near-copies. A plain JSONL file reads the wanted lines by their spans. A gzip
file cannot seek: every read decompressed it again from its start up to the last wanted line,
so PyPI's summaries as one gzip file took 20 s in the finish stage against 6 s plain. The first
read of a gzip file now takes every document this task holds from it, in one pass, into a
``TextSpool``; later reads gather from the spool. A Parquet block's texts are read from the
spool its scan wrote to the work folder (``scan.spool_texts``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._types import IntArray
from ..io._text_spool import TextSpool
from .scan import by_row_groups, spooled_texts, texts_of
from .tables import Docs, key_block


class Refetch:
    """``fetch_texts`` of one finish task over ``docs`` (its documents, by key order):
    ``refetch(wanted)`` returns the texts of rows ``wanted`` (ascending) in that order.
    ``spill_dir``: where gzip files' spools go (None: ``TMPDIR``); ``close`` removes them."""

    def __init__(self, layout: Any, docs: Docs, spill_dir: str | None = None) -> None:
        self.layout = layout
        self.docs = docs
        self.spill_dir = spill_dir
        blocks = key_block(docs.key)
        block_file = np.asarray([block.file for block in layout.blocks], dtype=np.int64)
        spooled = np.asarray([by_row_groups(f) for f in layout.files], dtype=np.bool_)
        # Where texts are read from together: a JSONL file (f >= 0), a Parquet block's spool
        # (-1 - block); a document's key orders it within either, as the file holds them.
        files = block_file[blocks]
        self.sources = np.where(spooled[files], -1 - blocks, files)
        self.orders: dict[int, IntArray] = {}
        self.spools: dict[int, TextSpool] = {}

    def __call__(self, wanted: IntArray) -> list[str]:
        docs, out = self.docs, {}
        for f in np.unique(self.sources[wanted]).tolist():
            order = self._order(f)
            want = wanted[self.sources[wanted] == f]
            at = np.searchsorted(docs.key[order], docs.key[want])
            texts = self._read(f, order, np.sort(at))
            for i, text in zip(want[np.argsort(at, kind="stable")].tolist(), texts, strict=True):
                out[i] = text
        return [out[i] for i in wanted.tolist()]

    def _order(self, f: int) -> IntArray:
        """This task's documents of source ``f`` in file order (worked out once per source:
        the engine asks for texts dozens of times)."""
        if f not in self.orders:
            mine = np.flatnonzero(self.sources == f)
            self.orders[f] = mine[np.argsort(self.docs.key[mine], kind="stable")]
        return self.orders[f]

    def _read(self, f: int, order: IntArray, at: IntArray) -> list[str]:
        """Texts of this task's documents ``order[at]`` of source ``f`` (``order``: all of
        them, in file order)."""
        docs = self.docs
        if f < 0:
            return list(spooled_texts(self.layout.work, -1 - f, docs.start[order],
                                      docs.end[order], at))  # fmt: skip
        file = self.layout.files[f]
        spans = (docs.start[order], docs.end[order], docs.first[order])
        if not file.gzip:
            return list(texts_of(file, *spans, at, self.layout.spec, self.layout.storage_options))
        if f not in self.spools:
            every = np.arange(len(order), dtype=np.int64)
            spool = TextSpool(self.spill_dir)
            try:
                spool.add(
                    texts_of(file, *spans, every, self.layout.spec, self.layout.storage_options)
                )
                spool.seal()
            except BaseException:
                spool.close()
                raise
            self.spools[f] = spool
        return self.spools[f].texts(at)

    def close(self) -> None:
        """Remove the spools now."""
        for spool in self.spools.values():
            spool.close()
        self.spools.clear()
