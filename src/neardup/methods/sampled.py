"""Sampled containment: texts -> shingles whose fingerprint is 0 mod m -> pairs by containment.

The shingling write-up's index: keep the shingles with ``fp % m == 0`` (the same shingles in
every document, so a passage quoted elsewhere keeps the same sample: the sample of a subset is a
subset of the sample) in an inverted table; a stored document is a candidate when it shares a
sampled shingle with the query. The score of a pair is the share of the smaller sample that the
other document holds, max(|A n B| / |A|, |A n B| / |B|): 1.0 when one text is the other with a
prefix or suffix added, or a passage of it. ``detail_scores`` gives both directions.

Signatures are CSR (one sorted unique uint64 array per document); keys are those values, all in
column 0. A document with no sampled shingle can neither find nor be found.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..params import SampledParams
from ..resemblance import pair_scores
from ..shingles import ShingleBatch
from ..textbatch import TextBatch
from .base import Candidates, FloatArray, IntArray, Signatures


class SampledMethod:
    """Shingles sampled by ``fp % m == 0``; pairs whose containment reaches the threshold."""

    name = "sampled"
    min_shared = 1
    match_kind = "contained"

    def __init__(self, params: SampledParams, threshold: float) -> None:
        self.params = params
        self.threshold = threshold

    def signatures(self, batch: TextBatch) -> Signatures:
        sets = batch.sets()
        keep = sets.fps % np.uint64(self.params.m) == 0
        kept = np.zeros(len(sets.fps) + 1, dtype=np.int64)  # kept shingles before each one
        np.cumsum(keep, out=kept[1:])
        offsets = kept[sets.offsets] - kept[sets.offsets[0]]  # empty documents anywhere: 0 kept
        return Signatures(sets.fps[keep], offsets)

    def lookup_postings(
        self, sigs: Signatures
    ) -> tuple[IntArray, IntArray, npt.NDArray[np.uint64]]:
        off = _offsets(sigs)
        row = np.repeat(np.arange(len(sigs), dtype=np.int64), np.diff(off))
        return row, np.zeros(len(row), dtype=np.int64), sigs.data.astype(np.uint64, copy=False)

    def lookup_keys(self, sigs: Signatures) -> npt.NDArray[np.uint64]:
        """Keys padded with EMPTY to the longest sample (``lookup_postings`` is the real list)."""
        off = _offsets(sigs)
        width = int(np.diff(off).max()) if len(sigs) else 0
        out = np.full((len(sigs), width), np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
        row, _, key = self.lookup_postings(sigs)
        out[row, np.arange(len(row)) - off[row]] = key
        return out

    def candidates(self, sigs: Signatures, jobs: int = 1) -> Candidates:
        row, _, key = self.lookup_postings(sigs)
        order = np.lexsort((row, key))
        k, r = key[order], row[order]
        n = len(k)
        starts = ends = np.zeros(0, np.int64)  # no document kept a shingle: no run
        if n:
            starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]).astype(np.int64)
            ends = np.r_[starts[1:], n].astype(np.int64)
        run_end = np.repeat(ends, ends - starts)
        after = run_end - np.arange(n) - 1  # partners later in the same run
        total = int(after.sum())
        pa = np.repeat(np.arange(n, dtype=np.int64), after)
        pb = pa + 1 + np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(after) - after, after)
        a, b = r[pa], r[pb]
        nn = np.int64(max(len(sigs), 1))
        codes = np.unique(np.minimum(a, b) * nn + np.maximum(a, b))
        a, b = codes // nn, codes % nn
        score = self.score(sigs.take(a), sigs.take(b))
        ok = self.accept(score)
        return Candidates(a=a[ok], b=b[ok], score=score[ok], accepted=np.ones(int(ok.sum()), bool))

    def detail_scores(self, x: Signatures, y: Signatures) -> dict[str, FloatArray]:
        """Containment both ways: of x's sample in y (``query_in_doc``) and of y's in x."""
        both = Signatures.concat([x, y])
        batch = ShingleBatch(both.data.astype(np.uint64, copy=False), _offsets(both))
        a = np.arange(len(x), dtype=np.int64)
        b = a + len(x)
        return {
            "query_in_doc": pair_scores(batch, a, b, "containment"),
            "doc_in_query": pair_scores(batch, b, a, "containment"),
        }

    def score(self, x: Signatures, y: Signatures) -> FloatArray:
        d = self.detail_scores(x, y)
        return np.maximum(d["query_in_doc"], d["doc_in_query"])

    def accept(self, score: FloatArray) -> npt.NDArray[np.bool_]:
        return np.asarray(score >= self.threshold - 1e-12)

    def describe(self) -> str:
        return f"sampled shingles fp % {self.params.m} == 0, containment >= {self.threshold:g}"


def _offsets(sigs: Signatures) -> IntArray:
    if sigs.offsets is None:
        raise TypeError("sampled signatures are CSR: Signatures(data, offsets)")
    return sigs.offsets
