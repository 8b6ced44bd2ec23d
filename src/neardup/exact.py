"""Fetched texts -> exact shingle sets held once per document, in memory or memory-mapped.

Hybrid verification decides a pair exactly when its sketch estimate is not conclusive; the
complete pair listing joins the members of big buckets exactly. Both need documents' shingle
sets, which pass 1 did not keep: a ``SetStore`` fetches the texts again in chunks of
at most ``SET_CHUNK`` documents and ``SET_CHUNK_BYTES`` of text (one read per chunk, never one
per pair; long documents make short chunks), shingles them, keeps each set
once, and past its byte budget appends them to a file read back memory-mapped, so what it holds
in memory stays bounded by ``--memory-limit`` whatever the number of documents checked.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ._chunks import size_chunks
from ._kernels import leaders as _k
from ._types import FloatArray, IntArray
from .errors import NeardupError, ParamError
from .shingles import ShingleBatch
from .spill import release_pages

#: The exact shingle sets of the given rows (ascending), in that order.
FetchSets = Callable[[IntArray], ShingleBatch]

#: Documents whose sets are computed at once (their texts fetched, shingled, then dropped).
SET_CHUNK = 4096
#: Bytes of text fetched at once, whatever the document count: what a chunk holds in flight.
SET_CHUNK_BYTES = 32 << 20


class SetStore:
    """The shingle sets of some of m rows, each computed once.

    ``budget``: bytes of fingerprints held in memory (None: no limit); past it every set goes to
    a file in a temporary folder (in ``spill_dir``) and is read back memory-mapped. ``sizes``:
    each row's text length in bytes, if known, so fetches are chunked by bytes too.
    """

    def __init__(
        self,
        m: int,
        fetch: FetchSets | None,
        budget: int | None = None,
        spill_dir: str | None = None,
        sizes: IntArray | None = None,
    ) -> None:
        self.row = np.full(m, -1, dtype=np.int64)
        self._sizes = sizes
        self._fetch = fetch
        self._budget = budget
        self._spill_dir = spill_dir
        #: Sets held in memory: one buffer, filled to ``_used``, grown by doubling (its pages
        #: past ``_used`` are never touched, so they cost no memory); ``sets`` is a view of it,
        #: not a copy of every set held after each fetch.
        self._buf = np.zeros(0, dtype=np.uint64)
        self._used = 0
        self._lengths: list[IntArray] = []
        self._count = 0
        self._file: Path | None = None
        self._cleanup: weakref.finalize | None = None
        self._view: ShingleBatch | None = None
        self.computed = 0  # sets computed from fetched texts
        self.held = 0  # bytes of fingerprints held in memory
        self.spilled = 0  # bytes written to the file

    def __len__(self) -> int:
        return self._count

    @property
    def budget(self) -> int | None:
        """Bytes of sets held in memory before spilling (None: no limit)."""
        return self._budget

    def add(self, rows: IntArray) -> None:
        """Fetch and keep the sets of ``rows`` (ascending) not held yet, a chunk at a time."""
        rows = np.unique(np.asarray(rows, dtype=np.int64))
        rows = rows[self.row[rows] < 0]
        for chunk in self.chunks(rows):
            self._keep(chunk, self.fetch(chunk))

    def gather(
        self, rows: IntArray, group: IntArray, room: IntArray | None
    ) -> tuple[IntArray, ShingleBatch]:
        """The sets of ``rows`` (ascending), held ones copied and the others fetched, in
        fetches of many rows, none kept by the store: each group's (``group[i]``) rows in order
        while their bytes fit in ``room[group]`` (None: no bound). Returns the rows gathered and
        their sets; which of a group's rows they are depends only on its rows and room."""
        used = np.zeros(0 if room is None else len(room), dtype=np.int64)
        got_rows: list[IntArray] = []
        got: list[ShingleBatch] = []
        at = 0
        for chunk in self.chunks(rows):  # chunks keep the order of rows
            g = group[at : at + len(chunk)]
            at += len(chunk)
            if room is not None:  # a group past its room fetches nothing more
                open_ = used[g] <= room[g]
                chunk, g = chunk[open_], g[open_]
                if not len(chunk):
                    continue
            sets = self._copied_or_fetched(chunk)
            size = 8 * sets.sizes
            keep = np.ones(len(chunk), dtype=np.bool_)
            if room is not None:  # each group's bytes so far, its rows in order
                by = np.argsort(g, kind="stable")
                gs, ss = g[by], size[by]
                total = np.cumsum(ss)
                start = np.maximum.accumulate(
                    np.where(np.r_[True, gs[1:] != gs[:-1]], np.arange(len(gs)), 0)
                )
                within = total - (total[start] - ss[start]) + used[gs]
                keep[by] = within <= room[gs]
                np.maximum.at(used, gs, within)
            got_rows.append(chunk[keep])
            got.append(sets if keep.all() else sets.take(np.flatnonzero(keep)))
        return np.concatenate([np.zeros(0, np.int64), *got_rows]), ShingleBatch.concat(got)

    def _copied_or_fetched(self, rows: IntArray) -> ShingleBatch:
        """The sets of ``rows``, in order: copies of those held, the others fetched."""
        held = self.row[rows] >= 0
        if not held.any():
            return self.fetch(rows)
        parts = [self.sets().take(self.row[rows[held]])]
        if not held.all():
            parts.append(self.fetch(rows[~held]))
        order = np.empty(len(rows), dtype=np.int64)  # each row's place in the copies + fetched
        order[held] = np.arange(int(held.sum()))
        order[~held] = np.arange(int(held.sum()), len(rows))
        return ShingleBatch.concat(parts).take(order)

    def chunks(self, rows: IntArray) -> list[IntArray]:
        """``rows`` in the runs fetched at once: ``SET_CHUNK`` rows, ``SET_CHUNK_BYTES`` of text."""
        return size_chunks(rows, self._sizes, SET_CHUNK, SET_CHUNK_BYTES)

    def fetch(self, rows: IntArray) -> ShingleBatch:
        """The sets of ``rows`` computed again (not kept)."""
        if self._fetch is None:
            raise ParamError(
                "exact checks need the documents' texts again: give a way to fetch them "
                "(fit() keeps them; the CLI reads its input again)"
            )
        got = self._fetch(rows)
        if len(got) != len(rows):
            raise NeardupError(f"fetched {len(got)} shingle sets for {len(rows)} documents")
        self.computed += len(rows)
        return got

    def _keep(self, rows: IntArray, sets: ShingleBatch) -> None:
        self.row[rows] = np.arange(self._count, self._count + len(rows), dtype=np.int64)
        self._count += len(rows)
        fps = np.ascontiguousarray(sets.fps, dtype=np.uint64)
        self._lengths.append(np.diff(sets.offsets).astype(np.int64))
        self._view = None
        over = self._budget is not None and self.held + fps.nbytes > self._budget
        if self._file is None and not over:
            end = self._used + len(fps)
            if end > len(self._buf):  # doubled: each set is copied O(1) times in all
                grown = np.empty(max(end, 2 * len(self._buf)), dtype=np.uint64)
                grown[: self._used] = self._buf[: self._used]
                self._buf = grown
            self._buf[self._used : end] = fps
            self._used = end
            self.held += int(fps.nbytes)
            return
        if self._file is None:  # the budget is reached: what is held goes to disk first
            folder = Path(tempfile.mkdtemp(prefix="neardup-sets-", dir=self._spill_dir))
            self._cleanup = weakref.finalize(self, shutil.rmtree, folder, True)
            self._file = folder / "sets.bin"
            self._file.touch()
            if self._used:
                self._append(self._buf[: self._used])
            self._buf, self._used, self.held = np.zeros(0, dtype=np.uint64), 0, 0
        self._append(fps)

    def _append(self, fps: npt.NDArray[np.uint64]) -> None:
        assert self._file is not None
        with open(self._file, "ab") as fh:
            fps.tofile(fh)
        self.spilled += int(fps.nbytes)

    def sets(self) -> ShingleBatch:
        """Every set held, as one CSR (rows numbered by ``row``); memory-mapped once spilled."""
        if self._view is not None:
            return self._view
        offsets = np.zeros(self._count + 1, dtype=np.int64)
        if self._lengths:
            np.cumsum(np.concatenate(self._lengths), out=offsets[1:])
        if self._file is None:
            fps = self._buf[: self._used]
        elif os.path.getsize(self._file) == 0:
            fps = np.zeros(0, dtype=np.uint64)
        else:
            with open(self._file, "rb") as fh:
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            fps = np.frombuffer(mapped, dtype=np.uint64)
        self._view = ShingleBatch(fps, offsets)
        return self._view

    def jaccard(self, a: IntArray, b: IntArray) -> FloatArray:
        """Exact Jaccard of held rows a[i] and b[i]."""
        sets = self.sets()
        ra, rb = self.row[a], self.row[b]
        if len(ra) and (ra.min() < 0 or rb.min() < 0):
            raise NeardupError("a set asked for was never added to the store")
        return np.asarray(_k.cross_jaccard(sets.fps, sets.offsets, ra, sets.fps, sets.offsets, rb))

    def release(self) -> None:
        """Drop the pages of spilled sets read so far from the resident set (the file stays
        mapped: a later read maps them in again, from the page cache usually)."""
        if self._view is not None:
            release_pages(self._view.fps)

    def close(self) -> None:
        """Drop the sets and remove the file now."""
        self._buf, self._used = np.zeros(0, dtype=np.uint64), 0
        self._lengths, self._view = [], None
        if self._cleanup is not None:
            self._cleanup()


def score_exactly(
    store: SetStore, a: IntArray, b: IntArray, keep: Callable[[IntArray], npt.NDArray[np.bool_]]
) -> FloatArray:
    """Exact Jaccard of pairs (a[i], b[i]) of rows: the sets of rows ``keep`` selects are held in
    ``store`` (added if missing); every other row's set is computed chunk by chunk, scored
    against held sets and dropped. Every pair needs at least one held end."""
    scores = np.empty(len(a), dtype=np.float64)
    ends = np.unique(np.concatenate([a, b]))
    store.add(ends[keep(ends)])
    held_a = store.row[a] >= 0
    both = held_a & (store.row[b] >= 0)
    if both.any():
        scores[both] = store.jaccard(a[both], b[both])
    # the pairs with one end not held: orient them (free, held), then go by free end
    rest = np.flatnonzero(~both)
    free = np.where(held_a[rest], b[rest], a[rest])
    other = np.where(held_a[rest], a[rest], b[rest])
    if (store.row[other] < 0).any():
        raise NeardupError("a pair has neither end held in the store")
    by = np.argsort(free, kind="stable")
    rest, free, other = rest[by], free[by], other[by]
    members = np.unique(free)
    held = store.sets()
    for chunk in store.chunks(members):
        i = int(np.searchsorted(free, chunk[0]))
        j = int(np.searchsorted(free, chunk[-1], side="right"))
        sets = store.fetch(chunk)
        scores[rest[i:j]] = _k.cross_jaccard(
            sets.fps, sets.offsets, np.searchsorted(chunk, free[i:j]),
            held.fps, held.offsets, store.row[other[i:j]],
        )  # fmt: skip
        store.release()  # spilled leaders' pages a chunk read: resident one chunk at a time
    store.release()
    return scores
