"""Candidate pairs -> verified pairs: score each candidate against the resemblance threshold.

Verification is its own stage, the same for every method (MinHash, SimHash, sampled...):

============  =================================================  ================================
kind          how a pair is decided                              kept per document
============  =================================================  ================================
``none``      the method's own decision (features / Hamming)      nothing
``sketch``    MinHash estimate of Jaccard >= threshold            2 bytes per sketch value (low 16
                                                                  bits of the t-value sketch)
``hybrid``    the sketch decides clear pairs; pairs within        as ``sketch``; the borderline
              ``HYBRID_Z`` standard errors of the threshold are   documents' texts are fetched
              re-checked by exact Jaccard of their texts          again, once, at the end
``exact``     Jaccard of the stored shingle sets >= threshold     8 bytes per distinct shingle
============  =================================================  ================================

A verifier turns a batch into ``Evidence`` (what it keeps per document), and decides pairs
from the evidence of both documents. The low 16 bits of a sketch value suffice to compare:
unequal values agree there with probability 2^-16, a bias of at most 1.5e-5 on the estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from .errors import NeardupError, ParamError
from .minhash import estimate_pairs
from .params import DedupParams, ShingleParams, SketchParams, Verify
from .resemblance import pair_scores
from .shingles import ShingleBatch, shingle_batch
from .textbatch import TextBatch

#: Hybrid verification re-checks exactly the pairs whose sketch estimate lies within this many
#: standard errors, sqrt(threshold (1 - threshold) / t), of the threshold.
HYBRID_Z = 3.0
#: Texts per task when the hybrid re-check shingles in several threads.
RECHECK_CHUNK = 4096

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
#: Returns the texts of the given sorted document indices, in that order.
FetchTexts = Callable[[IntArray], Sequence[str]]


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
        off = self.sets.offsets
        sizes = (off[rows + 1] - off[rows]).astype(np.int64)
        new_off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=new_off[1:])
        total = int(new_off[-1])
        idx = np.repeat(off[rows] - new_off[:-1], sizes) + np.arange(total, dtype=np.int64)
        return SetEvidence(ShingleBatch(self.sets.fps[idx], new_off))


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


class Verifier(Protocol):
    """Decides candidate pairs against the threshold (see the module docstring)."""

    name: Verify
    needs_texts: bool

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


class NoVerification:
    """The method decides alone: its own score and acceptance are the verdict."""

    name: Verify = "none"
    needs_texts = False

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


class SketchVerification:
    """Jaccard estimated from the documents' MinHash sketches (low 16 bits of each value)."""

    name: Verify = "sketch"
    needs_texts = False

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


class HybridVerification(SketchVerification):
    """The sketch decides clear pairs; borderline pairs are re-checked by exact Jaccard."""

    name: Verify = "hybrid"
    needs_texts = True

    def __init__(self, threshold: float, sketch: SketchParams, shingle: ShingleParams) -> None:
        super().__init__(threshold, sketch)
        self.shingle = shingle

    def margin(self) -> float:
        """Half-width of the band around the threshold whose pairs are re-checked."""
        t = self.threshold
        return float(HYBRID_Z * np.sqrt(t * (1 - t) / self.sketch.t))

    def borderline(self, verdict: Verdict) -> BoolArray:
        """Pairs ``recheck`` scores again from the texts (within the margin of the threshold)."""
        return np.asarray(np.abs(verdict.score - self.threshold) <= self.margin())

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
        texts = list(fetch(docs))
        if len(texts) != len(docs):
            raise NeardupError(f"fetch_texts returned {len(texts)} texts for {len(docs)} documents")
        batch = self._shingled(texts, jobs)
        la, lb = np.searchsorted(docs, a[near]), np.searchsorted(docs, b[near])
        score[near] = pair_scores(batch, la, lb, "jaccard")
        ok = verdict.ok.copy()
        ok[near] = verdict.method_ok[near] & (score[near] >= self.threshold)
        return Verdict(score, ok, verdict.method_ok, len(near))

    def _shingled(self, texts: list[str], jobs: int) -> ShingleBatch:
        """The texts' shingle sets, ``RECHECK_CHUNK`` texts a task in ``jobs`` threads (the
        kernels release the GIL): at 1M documents the re-check shingles ~50,000 texts."""
        if jobs <= 1 or len(texts) < 2 * RECHECK_CHUNK:
            return shingle_batch(texts, self.shingle)
        from .io._prefetch import ordered_map

        chunks = [texts[i : i + RECHECK_CHUNK] for i in range(0, len(texts), RECHECK_CHUNK)]
        done = ordered_map(lambda c: shingle_batch(c, self.shingle), chunks, jobs)
        return ShingleBatch.concat([b for _, b in done])


class ExactVerification:
    """Exact Jaccard of the stored shingle sets: precision 1 by definition."""

    name: Verify = "exact"
    needs_texts = False

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
        return SketchVerification(t, params.sketch_params())
    if kind == "hybrid":
        return HybridVerification(t, params.sketch_params(), params.shingle)
    return ExactVerification(t)
