"""Benchmark items + training texts -> which texts contain which items, exactly, with spans.

Containment of a benchmark item b in a training text d is c(b, d) = |S(b) n S(d)| / |S(b)|
over shingle sets of canonical tokens (case, punctuation and line breaks ignored). The
benchmark's shingle sets are held in memory (a benchmark is small) as a table of distinct
fingerprints and, per fingerprint, the items holding it; every shingle of a training batch is
looked up in one kernel call. Only items holding one of the text's shingles among their
``size - need + 1`` rarest can reach the threshold C (prefix filtering: a text sharing ``need``
of an item's shingles misses at most ``size - need`` of them), so those alone are counted, each
exactly: c(b, d) is exact for every pair at C or more, and a shingle many items share (a
template's wording) costs nothing for the texts holding it.
The matched text of a pair is given as character spans: the extents of the shared shingles in
the training text, merged where they overlap or touch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._kernels import contain as _k
from ._types import IntArray
from .params import DECONTAMINATE_EXAMPLE, DecontaminateParams, check_int, check_kind
from .shingles import shingle_batch, shingle_sequence
from .text import Utf8Texts, check_texts, token_spans

#: Pairs looked up at a time in a batch (``Decontaminator.scan_pieces``): about 24 MB of arrays
#: and 30 MB of --matches lines.
MAX_PAIRS = 1 << 18


@dataclass(frozen=True)
class BenchmarkMatch:
    """One benchmark item a training text contains: its index among the benchmark texts, the
    containment |S(b) n S(d)| / |S(b)|, the shared shingles, and the character spans
    ``text[start:end]`` of the matched text in the training text."""

    item: int
    containment: float
    shared: int
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Matches:
    """The matches of one batch as arrays, by text then item: pair i is text ``doc[i]`` and
    item ``item[i]``, with ``shared[i]`` shingles and containment ``containment[i]``; its
    spans are ``starts[k]:ends[k]`` for k in ``span_offsets[i]:span_offsets[i+1]``."""

    doc: IntArray
    item: IntArray
    shared: IntArray
    containment: npt.NDArray[np.float64]
    span_offsets: IntArray
    starts: IntArray
    ends: IntArray

    def __len__(self) -> int:
        return int(self.doc.shape[0])

    def spans(self, i: int) -> list[list[int]]:
        """The character spans of pair i as [start, end] lists (JSON-ready)."""
        lo, hi = int(self.span_offsets[i]), int(self.span_offsets[i + 1])
        starts, ends = self.starts[lo:hi].tolist(), self.ends[lo:hi].tolist()
        return [[s, e] for s, e in zip(starts, ends, strict=True)]

    def contaminated(self, n: int) -> npt.NDArray[np.bool_]:
        """bool[n]: the texts (of a batch of n) that contain at least one item."""
        out = np.zeros(n, dtype=bool)
        out[self.doc] = True
        return out


def min_shared(sizes: IntArray, containment: float) -> IntArray:
    """The smallest shared count k with k / size >= C (as float64 division) for each item
    size; items without shingles get a count no text reaches (containment undefined)."""
    size = np.maximum(sizes, 1).astype(np.float64)
    need = np.ceil(containment * size).astype(np.int64)
    # Rounding in C * size may be off by one either way; settle on the division itself.
    need += need / size < containment
    need -= (need > 1) & ((need - 1) / size >= containment)
    return np.where(sizes > 0, np.maximum(need, 1), np.iinfo(np.int64).max)


class Decontaminator:
    """Benchmark items held as shingle sets; ``contains(texts)`` lists, for each training
    text, every item it contains at ``params.containment`` or more.

    >>> d = Decontaminator(["the quick brown fox jumps over the lazy dog"])
    >>> m = d.contains(["Intro. The QUICK brown fox -- jumps over the lazy dog! Outro."])[0][0]
    >>> m.item, m.containment, m.spans
    (0, 1.0, ((7, 53),))
    """

    def __init__(
        self, benchmark_texts: Sequence[str], params: DecontaminateParams | None = None
    ) -> None:
        self.params = params if params is not None else DecontaminateParams()
        check_kind(self.params, DecontaminateParams, DECONTAMINATE_EXAMPLE)
        texts = check_texts(benchmark_texts, "benchmark_texts")
        sets = shingle_batch(texts, self.params.shingle)
        #: Distinct shingles of each benchmark item (0: no token, never matched).
        self.sizes_: IntArray = sets.sizes.astype(np.int64)
        items = np.repeat(np.arange(len(sets), dtype=np.int64), self.sizes_)
        order = np.lexsort((items, sets.fps))
        fps, items = sets.fps[order], items[order]
        first = np.flatnonzero(np.r_[True, fps[1:] != fps[:-1]]) if len(fps) else items[:0]
        self._post_offsets = np.r_[first, len(fps)].astype(np.int64)
        self._post_items = np.ascontiguousarray(items)
        self._keys, self._rows = _k.build_table(np.ascontiguousarray(fps[first]))
        self._need = min_shared(self.sizes_, self.params.containment)
        self._item_offsets, self._item_rows, self._pre_offsets, self._pre_items = (
            _k.prefix_postings(self._post_offsets, self._post_items, self.sizes_, self._need)
        )

    def __len__(self) -> int:
        return int(self.sizes_.shape[0])

    def scan(self, texts: Sequence[str]) -> Matches:
        """The matches of a batch of training texts, as arrays."""
        return next(self.scan_pieces(texts, np.iinfo(np.int64).max))

    def scan_pieces(self, texts: Sequence[str], max_pairs: int | None = None) -> Iterator[Matches]:
        """The matches of a batch in pieces of whole texts, each made when it is asked for
        and holding fewer than ``max_pairs`` pairs (default ``MAX_PAIRS``) before its last
        text; ``doc`` counts in the batch. What the command streams: a batch's matches are
        never all in memory at once (items sharing a template at a low containment matched
        400 million pairs in one batch)."""
        texts = check_texts(texts)
        fps, offsets = shingle_sequence(texts, self.params.shingle)
        limit = MAX_PAIRS if max_pairs is None else check_int("max_pairs", max_pairs, 1, 2**63 - 1)
        start = 0
        while True:
            doc, item, shared, start = _k.contained_counts(
                fps, offsets, self._keys, self._rows, self._pre_offsets, self._pre_items,
                self._item_offsets, self._item_rows, self._need, start, limit,
            )  # fmt: skip
            yield self._matches(texts, fps, offsets, doc, item, shared)
            if start >= len(texts):
                return

    def _matches(
        self,
        texts: Sequence[str],
        fps: npt.NDArray[np.uint64],
        offsets: IntArray,
        doc: IntArray,
        item: IntArray,
        shared: IntArray,
    ) -> Matches:
        """The pairs found, with their containment and the spans of the shared shingles."""
        shingle = self.params.shingle
        matched, tok_row = np.unique(doc, return_inverse=True)
        matched_texts: Sequence[str]
        if isinstance(texts, Utf8Texts):
            matched_texts = texts.take(matched)
        else:
            matched_texts = [texts[i] for i in matched.tolist()]
        starts, ends, tok_offsets = token_spans(matched_texts, shingle.tokens)
        span_offsets, span_starts, span_ends = _k.matched_spans(
            fps, offsets, doc, item, self._keys, self._rows, self._post_offsets,
            self._post_items, shingle.w, tok_row.astype(np.int64), starts, ends, tok_offsets,
        )  # fmt: skip
        containment = shared / np.maximum(self.sizes_[item], 1)
        return Matches(doc, item, shared, containment, span_offsets, span_starts, span_ends)

    def contains(self, texts: Sequence[str]) -> list[list[BenchmarkMatch]]:
        """For each training text, the benchmark items it contains (by item index)."""
        texts = check_texts(texts)
        found = self.scan(texts)
        out: list[list[BenchmarkMatch]] = [[] for _ in range(len(texts))]
        for i in range(len(found)):
            spans = tuple((s, e) for s, e in found.spans(i))
            out[int(found.doc[i])].append(
                BenchmarkMatch(
                    int(found.item[i]), float(found.containment[i]), int(found.shared[i]), spans
                )
            )
        return out


def match_lines(found: Matches, ids: Sequence[str], bench_ids: Sequence[str]) -> bytes:
    """The --matches lines of a batch: {"id", "benchmark_id", "containment", "spans"} per pair,
    ``ids`` naming the batch's texts and ``bench_ids`` the benchmark items."""
    lines = [
        json.dumps(
            {
                "id": ids[d],
                "benchmark_id": bench_ids[b],
                "containment": c,
                "spans": found.spans(i),
            },
            ensure_ascii=False,
        )
        + "\n"
        for i, (d, b, c) in enumerate(
            zip(found.doc.tolist(), found.item.tolist(), found.containment.tolist(), strict=True)
        )
    ]
    return "".join(lines).encode("utf-8", "backslashreplace")
