"""Candidate pairs -> verified pairs: score each candidate against the resemblance threshold.

Verification is its own stage, the same for every method (MinHash, SimHash, sampled...):

============  =================================================  ================================
kind          how a pair is decided                              kept per document
============  =================================================  ================================
``none``      the method's own decision (features / Hamming)      nothing
``sketch``    MinHash estimate of Jaccard >= threshold            2 bytes per sketch value (low 16
                                                                  bits of the t-value sketch)
``hybrid``    the sketch decides clear pairs; pairs whose         as ``sketch``; the borderline
              estimate lies in the binomial error band of the     documents' texts are fetched
              threshold are re-checked by exact Jaccard of their  again, once per round
              texts (see ``binomial_band``)
``exact``     Jaccard of the stored shingle sets >= threshold     8 bytes per distinct shingle
============  =================================================  ================================

A verifier turns a batch into ``Evidence`` (what it keeps per document), and decides pairs
from the evidence of both documents. The low 16 bits of a sketch value suffice to compare:
unequal values agree there with probability 2^-16, a bias of at most 1.5e-5 on the estimate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ._chunks import size_chunks
from ._kernels import leaders as _lk
from ._prefetch import ordered_map
from ._types import BoolArray, FloatArray, IntArray
from .errors import NeardupError, ParamError
from .minhash import estimate_pairs
from .params import DedupParams, ShingleParams, SketchKind, SketchParams, Verify
from .planner import sketch_for
from .resemblance import pair_scores
from .shingles import ShingleBatch, shingle_batch
from .textbatch import TextBatch

#: Hybrid verification trusts a sketch decision only when, had the true resemblance been on the
#: other side of the threshold, an estimate at least that far from it would have had a binomial
#: probability below this (two-sided); other pairs are re-checked exactly.
HYBRID_ALPHA = 1e-4
#: Texts, and characters of text, per task when the hybrid re-check shingles in several
#: threads: long documents make tasks of few texts, so every thread gets work.
RECHECK_CHUNK = 4096
RECHECK_CHARS = 4 << 20


#: Returns the texts of the given sorted document indices, in that order.
FetchTexts = Callable[[IntArray], Sequence[str]]


def fetched_texts(fetch: FetchTexts, docs: IntArray) -> list[str]:
    """``fetch(docs)``: one string per document asked for, in order, or a NeardupError saying
    what came back instead (None, a count that differs, an item that is not a string)."""
    got = fetch(docs)
    need = f"fetch_texts must return one string per document asked for ({len(docs)})"
    if isinstance(got, str | bytes) or not isinstance(got, Sequence | np.ndarray):
        raise NeardupError(f"{need}, a list of them; it returned {type(got).__name__}")
    texts = list(got)
    if len(texts) != len(docs):
        raise NeardupError(f"{need}; it returned {len(texts)} texts")
    bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
    if bad is not None:
        raise NeardupError(
            f"{need}; item {bad} (document {int(docs[bad])}) is {type(texts[bad]).__name__}"
        )
    return texts


class Evidence(Protocol):
    """What a verifier keeps per document, with row selection and concatenation."""

    def __len__(self) -> int: ...

    @property
    def nbytes(self) -> int: ...

    def take(self, rows: IntArray) -> Evidence: ...


@dataclass(frozen=True)
class RowEvidence:
    """A fixed-width row per document (sketch values; zero columns when nothing is kept)."""

    rows: np.ndarray

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes)

    def take(self, rows: IntArray) -> RowEvidence:
        return RowEvidence(self.rows[rows])


@dataclass(frozen=True)
class SetEvidence:
    """A shingle set per document (CSR of sorted unique fingerprints)."""

    sets: ShingleBatch

    def __len__(self) -> int:
        return len(self.sets)

    @property
    def nbytes(self) -> int:
        return int(self.sets.fps.nbytes + self.sets.offsets.nbytes)

    def take(self, rows: IntArray) -> SetEvidence:
        return SetEvidence(self.sets.take(rows))


def concat_evidence(parts: Sequence[Evidence]) -> Evidence:
    """One block of evidence from the blocks of consecutive batches."""
    if not parts:
        return RowEvidence(np.zeros((0, 0), dtype=np.uint16))
    if isinstance(parts[0], SetEvidence):
        return SetEvidence(
            ShingleBatch.concat([p.sets for p in parts if isinstance(p, SetEvidence)])
        )
    return RowEvidence(np.concatenate([p.rows for p in parts if isinstance(p, RowEvidence)]))


@dataclass(frozen=True)
class Verdict:
    """Scores and decisions of candidate pairs; ``rechecked`` pairs were scored exactly again.

    ``method_ok`` is the method's own decision, which verification can only confirm or overrule
    towards rejection: a pair is accepted when the method accepts it and its score passes.
    """

    score: FloatArray
    ok: BoolArray
    method_ok: BoolArray
    rechecked: int = 0
    #: Pairs a hybrid verifier must score again exactly (None: none).
    band: BoolArray | None = None


@dataclass(frozen=True)
class PairCheck:
    """A verifier's rule in the form the removal kernels apply it, over rows 0..m-1 of its
    evidence: ``kind`` (``_kernels.leaders``: by the method's count, a sketch estimate, exact
    sets), the arrays it reads, and for hybrid the band of estimates decided exactly."""

    kind: int
    threshold: float
    rows: npt.NDArray[np.uint16]
    set_fps: npt.NDArray[np.uint64]
    set_off: IntArray
    band_lo: FloatArray
    band_hi: FloatArray
    size: IntArray

    @property
    def wants_sets(self) -> bool:
        """Whether some estimate may need the exact sets of its documents' texts."""
        return bool((self.band_lo <= self.band_hi).any())

    def kernel_args(
        self,
        count_score: FloatArray,
        exact_codes: IntArray,
        exact_scores: FloatArray,
        held: tuple[npt.NDArray[np.uint64], IntArray, IntArray] | None = None,
    ) -> tuple[object, ...]:
        """The tuple ``_kernels.leaders.check_pair`` reads: this rule, the method's score by
        shared-key count, the exact scores known so far (sorted pair codes), and the shingle
        sets held (fps, offsets, each row's set or -1) that in-band pairs are scored from."""
        fps, off, row = held if held is not None else (*_no_sets(), np.zeros(0, dtype=np.int64))
        return (
            self.kind,
            float(self.threshold),
            np.ascontiguousarray(count_score, dtype=np.float64),
            self.rows,
            self.set_fps,
            self.set_off,
            self.band_lo,
            self.band_hi,
            self.size,
            exact_codes,
            exact_scores,
            fps,
            off,
            row,
        )


def _no_rows() -> npt.NDArray[np.uint16]:
    return np.zeros((0, 0), dtype=np.uint16)


def _no_sets() -> tuple[npt.NDArray[np.uint64], IntArray]:
    return np.zeros(0, dtype=np.uint64), np.zeros(1, dtype=np.int64)


def _no_band(t: int) -> tuple[FloatArray, FloatArray]:
    """A band no estimate falls in (lo above hi)."""
    return np.full(t + 1, 2.0), np.full(t + 1, -1.0)


def binomial_band(
    threshold: float, t: int, alpha: float = HYBRID_ALPHA
) -> tuple[FloatArray, FloatArray]:
    """``_binomial_band``, computed once per (threshold, t, alpha) in a process (7 ms at
    t = 256, which every ``Deduplicator`` of the index's dedup pieces would pay again)."""
    lo, hi = _binomial_band(float(threshold), int(t), float(alpha))
    return lo.copy(), hi.copy()


@functools.lru_cache(maxsize=64)
def _binomial_band(threshold: float, t: int, alpha: float) -> tuple[FloatArray, FloatArray]:
    """(lo, hi), float64[t + 1]: for n = 0..t independent sketch positions, an estimate in
    ``[lo[n], hi[n]]`` cannot be trusted to say which side of ``threshold`` the resemblance lies.

    With n positions an estimate of a pair at exactly the threshold is Binomial(n, threshold) / n;
    ``hi[n]`` is the smallest k / n it exceeds with probability <= alpha / 2 and ``lo[n]`` the
    largest k / n it falls below with probability <= alpha / 2. Pairs further from the threshold
    err less (the tails shrink away from it), so deciding outside the band by the sketch errs with
    probability below alpha / 2 per pair. n = 0 (no information) puts every estimate in the band.
    """
    lo = np.full(t + 1, -1.0)
    hi = np.full(t + 1, 2.0)
    half = alpha / 2
    lg = np.array([math.lgamma(i + 1) for i in range(t + 1)])  # log i!, once, not per n
    for n in range(1, t + 1):
        k = np.arange(n + 1, dtype=np.float64)
        if threshold <= 0.0 or threshold >= 1.0:
            pmf = (k == (n if threshold >= 1.0 else 0)).astype(np.float64)
        else:
            logc = lg[n] - lg[: n + 1] - lg[n::-1]  # log C(n, i), the same float operations
            pmf = np.exp(logc + k * math.log(threshold) + (n - k) * math.log1p(-threshold))
        below = np.concatenate([[0.0], np.cumsum(pmf)[:-1]])  # P(X < k)
        above = 1.0 - np.cumsum(pmf)  # P(X > k)
        q_lo = int(np.flatnonzero(below <= half)[-1])
        q_hi = int(np.flatnonzero(above <= half)[0])
        lo[n] = q_lo / n
        hi[n] = q_hi / n
    return lo, hi


def effective_sizes(rows: np.ndarray, kind: SketchKind) -> IntArray:
    """Independent positions each sketch row holds: a one-permutation row's filled bins (its
    distinct values; densified bins copy them), else the row's length."""
    if kind == "oph" and rows.shape[1]:
        return _lk.distinct_values(np.ascontiguousarray(rows, dtype=np.uint16))
    return np.full(rows.shape[0], rows.shape[1], dtype=np.int64)


class Verifier(Protocol):
    """Decides candidate pairs against the threshold (see the module docstring)."""

    name: Verify
    needs_texts: bool
    #: Whether its exact shingle sets can be had (held or fetched), so big buckets can be joined.
    joins_exactly: bool

    def evidence(self, batch: TextBatch) -> Evidence: ...

    def decide(
        self, ev: Evidence, a: IntArray, b: IntArray, method_score: FloatArray, method_ok: BoolArray
    ) -> Verdict:
        """Decide pairs (rows a[i], b[i] of ``ev``) given the method's own score and decision."""
        ...

    def recheck(
        self, a: IntArray, b: IntArray, verdict: Verdict, fetch: FetchTexts | None, jobs: int = 1
    ) -> Verdict:
        """Score borderline pairs again from their texts (``fetch``), shingling in ``jobs``
        threads; the verdict of every other pair unchanged."""
        ...

    def pair_check(self, ev: Evidence) -> PairCheck:
        """The same rule as ``decide`` (and ``recheck``), in the form the kernels apply."""
        ...

    def exact_sets(self, texts: Sequence[str], jobs: int = 1) -> ShingleBatch:
        """The shingle sets a re-check compares (of texts fetched again)."""
        ...


class NoVerification:
    """The method decides alone: its own score and acceptance are the verdict."""

    name: Verify = "none"
    needs_texts = False
    joins_exactly = False

    def evidence(self, batch: TextBatch) -> Evidence:
        return RowEvidence(np.zeros((len(batch), 0), dtype=np.uint16))

    def decide(
        self, ev: Evidence, a: IntArray, b: IntArray, method_score: FloatArray, method_ok: BoolArray
    ) -> Verdict:
        return Verdict(method_score, method_ok.copy(), method_ok)

    def recheck(
        self, a: IntArray, b: IntArray, verdict: Verdict, fetch: FetchTexts | None, jobs: int = 1
    ) -> Verdict:
        return verdict

    def pair_check(self, ev: Evidence) -> PairCheck:
        lo, hi = _no_band(0)
        fps, off = _no_sets()
        size = np.zeros(len(ev), dtype=np.int64)
        return PairCheck(_lk.BY_COUNT, 0.0, _no_rows(), fps, off, lo, hi, size)

    def exact_sets(self, texts: Sequence[str], jobs: int = 1) -> ShingleBatch:
        raise NeardupError("verify='none' never compares shingle sets")


class SketchVerification:
    """Jaccard estimated from the documents' MinHash sketches (low 16 bits of each value)."""

    name: Verify = "sketch"
    needs_texts = False
    joins_exactly = False

    def __init__(self, threshold: float, sketch: SketchParams) -> None:
        self.threshold = threshold
        self.sketch = sketch

    def evidence(self, batch: TextBatch) -> Evidence:
        return RowEvidence(batch.sketch(self.sketch).astype(np.uint16))

    def decide(
        self, ev: Evidence, a: IntArray, b: IntArray, method_score: FloatArray, method_ok: BoolArray
    ) -> Verdict:
        score = estimate_pairs(_rows(ev), a, b, self.sketch.kind)
        return Verdict(score, method_ok & (score >= self.threshold), method_ok)

    def recheck(
        self, a: IntArray, b: IntArray, verdict: Verdict, fetch: FetchTexts | None, jobs: int = 1
    ) -> Verdict:
        return verdict

    def band(self) -> tuple[FloatArray, FloatArray]:
        """Estimates decided exactly, by effective sketch size (none: the sketch decides)."""
        return _no_band(self.sketch.t)

    def pair_check(self, ev: Evidence) -> PairCheck:
        rows = np.ascontiguousarray(_rows(ev))
        kind = _lk.SKETCH_BOTTOMK if self.sketch.kind == "bottomk" else _lk.SKETCH_POSITIONAL
        lo, hi = self.band()
        size = effective_sizes(rows, self.sketch.kind)
        fps, off = _no_sets()
        return PairCheck(kind, self.threshold, rows, fps, off, lo, hi, size)

    def exact_sets(self, texts: Sequence[str], jobs: int = 1) -> ShingleBatch:
        raise NeardupError("verify='sketch' never compares shingle sets")


class HybridVerification(SketchVerification):
    """The sketch decides clear pairs; pairs in its binomial error band (``binomial_band``, by
    each pair's effective sketch size: a one-permutation sketch of a small set holds few
    independent positions) are re-checked by exact Jaccard of their texts."""

    name: Verify = "hybrid"
    needs_texts = True
    joins_exactly = True

    def __init__(self, threshold: float, sketch: SketchParams, shingle: ShingleParams) -> None:
        super().__init__(threshold, sketch)
        self.shingle = shingle
        self._band: tuple[FloatArray, FloatArray] | None = None

    def band(self) -> tuple[FloatArray, FloatArray]:
        if self._band is None:  # computed once: the same for every batch
            self._band = binomial_band(self.threshold, self.sketch.t)
        return self._band

    def decide(
        self, ev: Evidence, a: IntArray, b: IntArray, method_score: FloatArray, method_ok: BoolArray
    ) -> Verdict:
        rows = _rows(ev)
        score = estimate_pairs(rows, a, b, self.sketch.kind)
        size = effective_sizes(rows, self.sketch.kind)
        eff = np.minimum(size[a], size[b]) if len(a) else np.zeros(0, dtype=np.int64)
        lo, hi = self.band()
        band = (lo[eff] <= score) & (score <= hi[eff])
        return Verdict(score, method_ok & (score >= self.threshold), method_ok, band=band)

    def borderline(self, verdict: Verdict) -> BoolArray:
        """Pairs ``recheck`` scores again from the texts (in the band ``decide`` marked)."""
        if verdict.band is None:
            return np.zeros(len(verdict.score), dtype=np.bool_)
        return verdict.band

    def recheck(
        self, a: IntArray, b: IntArray, verdict: Verdict, fetch: FetchTexts | None, jobs: int = 1
    ) -> Verdict:
        score = verdict.score.copy()
        near = np.flatnonzero(self.borderline(verdict))
        if len(near) == 0:
            return verdict
        if fetch is None:
            raise ParamError(
                "verify='hybrid' needs the borderline documents' texts: give a way to fetch them "
                "(fit() keeps them; the CLI reads its input again)"
            )
        docs = np.unique(np.concatenate([a[near], b[near]]))
        texts = fetched_texts(fetch, docs)
        batch = self.exact_sets(texts, jobs)
        la, lb = np.searchsorted(docs, a[near]), np.searchsorted(docs, b[near])
        score[near] = pair_scores(batch, la, lb, "jaccard")
        ok = verdict.ok.copy()
        ok[near] = verdict.method_ok[near] & (score[near] >= self.threshold)
        return Verdict(score, ok, verdict.method_ok, len(near))

    def exact_sets(self, texts: Sequence[str], jobs: int = 1) -> ShingleBatch:
        """The texts' shingle sets, ``RECHECK_CHUNK`` texts or ``RECHECK_CHARS`` characters a
        task in ``jobs`` threads (the kernels release the GIL): a re-check may shingle tens of
        thousands of texts, or a few very long ones."""
        if jobs <= 1 or len(texts) < 2:
            return shingle_batch(texts, self.shingle)
        sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        pieces = size_chunks(np.arange(len(texts)), sizes, RECHECK_CHUNK, RECHECK_CHARS)
        if len(pieces) < 2:
            return shingle_batch(texts, self.shingle)
        done = ordered_map(
            lambda rows: shingle_batch(texts[rows[0] : rows[-1] + 1], self.shingle), pieces, jobs
        )
        return ShingleBatch.concat([b for _, b in done])


class ExactVerification:
    """Exact Jaccard of the stored shingle sets: precision 1 by definition."""

    name: Verify = "exact"
    needs_texts = False
    joins_exactly = True

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def evidence(self, batch: TextBatch) -> Evidence:
        return SetEvidence(batch.sets())

    def decide(
        self, ev: Evidence, a: IntArray, b: IntArray, method_score: FloatArray, method_ok: BoolArray
    ) -> Verdict:
        score = pair_scores(_sets(ev), a, b, "jaccard")
        return Verdict(score, method_ok & (score >= self.threshold), method_ok)

    def recheck(
        self, a: IntArray, b: IntArray, verdict: Verdict, fetch: FetchTexts | None, jobs: int = 1
    ) -> Verdict:
        return verdict

    def pair_check(self, ev: Evidence) -> PairCheck:
        sets = _sets(ev)
        lo, hi = _no_band(0)
        size = np.diff(sets.offsets).astype(np.int64)
        return PairCheck(
            _lk.EXACT_SETS, self.threshold, _no_rows(), sets.fps, sets.offsets, lo, hi, size
        )

    def exact_sets(self, texts: Sequence[str], jobs: int = 1) -> ShingleBatch:
        raise NeardupError("verify='exact' keeps the shingle sets; nothing is fetched again")


def borderline(verifier: Verifier, verdict: Verdict) -> BoolArray:
    """Pairs the verifier's ``recheck`` would score again from the texts (none for most): the
    Dask backend decides the others where the evidence lives and re-checks only these."""
    own = getattr(verifier, "borderline", None)
    if own is None:
        return np.zeros(len(verdict.score), dtype=np.bool_)
    return np.asarray(own(verdict), dtype=np.bool_)


def _rows(ev: Evidence) -> np.ndarray:
    if not isinstance(ev, RowEvidence):
        raise TypeError(f"sketch verification needs RowEvidence, got {type(ev).__name__}")
    return ev.rows


def _sets(ev: Evidence) -> ShingleBatch:
    if not isinstance(ev, SetEvidence):
        raise TypeError(f"exact verification needs SetEvidence, got {type(ev).__name__}")
    return ev.sets


def make_verifier(params: DedupParams) -> Verifier:
    """The verifier ``params.verify`` names, at ``params.threshold``."""
    kind = params.resolved_verify
    t = params.resolved_threshold
    if kind == "none":
        return NoVerification()
    if kind == "sketch":
        return SketchVerification(t, sketch_for(params))
    if kind == "hybrid":
        return HybridVerification(t, sketch_for(params), params.shingle)
    return ExactVerification(t)
