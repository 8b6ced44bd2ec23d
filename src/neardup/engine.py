"""Compose the stages into deduplication: texts -> clusters of near-duplicates and a kept mask.

    texts -> canonical hash + shingles -> sketches (MinHash) or fingerprints (SimHash)
          -> keys -> candidate pairs -> verified pairs -> union-find clusters -> representatives

Exact duplicates (equal canonical token sequences) are grouped first by their content hash and
only one document per group goes through candidate generation, so boilerplate copies cost
nothing. Documents without tokens are reported in ``empty_`` and never clustered. No I/O here:
callers feed batches of texts (``partial_fit``) and read the fitted arrays (names ending in _).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from . import candidates, clusters, features, minhash
from ._checks import check_batch_size, check_dedup_params, check_iterable_texts, check_texts
from ._kernels.shingles import unique_per_doc
from .errors import NeardupError, ParamError
from .features import FeatureParams
from .params import ShingleParams, SketchParams, _fingerprint
from .resemblance import pair_scores
from .shingles import ShingleBatch, shingle_batch, shingle_texts
from .simhash import IdfTable, SimhashParams, fit_idf_texts, simhash

Method = Literal["minhash", "simhash"]
Verify = Literal["sketch", "hybrid", "exact", "none"]

#: Hybrid verification re-checks exactly the pairs whose sketch estimate lies within this many
#: standard errors, sqrt(threshold (1 - threshold) / t), of the threshold.
HYBRID_Z = 3.0
Keep = Literal["first", "longest", "field"]

#: Most megashingle keys a document may have (super_features=True).
MAX_SUPER_FEATURES = 256

#: Thresholds above this (up to 1) are planned as this: the planner needs a curve below 1.
MAX_PLANNED_THRESHOLD = 0.99

#: Documents fed to the kernels per call when ``fit`` is given one big sequence.
DEFAULT_BATCH = 2000


@dataclass(frozen=True)
class DedupParams:
    """Everything that decides which documents are near-duplicates.

    method: "minhash" (Broder features = LSH bands over a MinHash sketch, default) or "simhash"
      (64-bit Charikar fingerprints within ``max_distance`` bits).
    threshold: resemblance (Jaccard of shingle sets) at or above which two documents are
      near-duplicates (minhash). Also chooses (k, s, r) when ``features`` is None.
    features: explicit Broder feature parameters (k features of s sketch values, r must match).
    sketch_kind, seed: the MinHash sketch ("oph" or "classic"; features need positions).
    verify: "sketch" (estimate from the sketch, default), "hybrid" (the sketch decides clear
      cases; pairs within HYBRID_Z standard errors of the threshold are re-checked by exact
      Jaccard on their texts, fetched again: exact-quality results at sketch memory), "exact"
      (Jaccard over the stored shingle sets: precision 1 by definition) or "none" (accept
      every candidate pair).
    max_bucket: feature buckets larger than this are chained instead of fully paired.
    keep: which member of a cluster survives: "first" (smallest index), "longest" (most
      characters) or "field" (largest, or with keep_prefer="min" smallest, value of the ``key``
      array given to ``finish``/``fit``: a quality score, a date...). Ties go to the first.
    super_features: look candidates up by Broder's megashingles (one key per r-subset of the k
      features, C(k, r) keys a document) instead of counting shared features; the same pairs,
      for small k and r only (e.g. k=6, r=2: 15 keys).
    max_distance, simhash_features, simhash_q, simhash_weighting: SimHash options
      (method="simhash"); "idf" weighting needs an IDF table fitted on the corpus first.
    """

    method: Method = "minhash"
    threshold: float = 0.8
    shingle: ShingleParams = field(default_factory=ShingleParams)
    features: FeatureParams | None = None
    sketch_kind: Literal["oph", "classic"] = "oph"
    seed: int = 1
    verify: Verify = "sketch"
    max_bucket: int = candidates.DEFAULT_MAX_BUCKET
    keep: Keep = "first"
    keep_prefer: Literal["max", "min"] = "max"
    max_distance: int = 3
    simhash_features: Literal["char", "word", "shingle"] = "char"
    simhash_q: int = 4
    simhash_weighting: Literal["count", "binary", "idf"] = "binary"
    max_t: int = 256
    super_features: bool = False

    def __post_init__(self) -> None:
        if self.method not in ("minhash", "simhash"):
            raise ParamError(f"method must be 'minhash' or 'simhash', got {self.method!r}")
        if not isinstance(self.threshold, int | float) or not 0.0 < self.threshold <= 1.0:
            raise ParamError(f"threshold must be a number in (0, 1], got {self.threshold!r}")
        if self.sketch_kind not in ("oph", "classic"):
            raise ParamError(
                f"sketch kind for deduplication must be 'oph' or 'classic' (features need "
                f"positional sketches; bottom-k is for estimation), got {self.sketch_kind!r}"
            )
        if self.verify not in ("sketch", "hybrid", "exact", "none"):
            raise ParamError(
                f"verify must be 'sketch', 'hybrid', 'exact' or 'none', got {self.verify!r}"
            )
        if self.keep not in ("first", "longest", "field"):
            raise ParamError(f"keep must be 'first', 'longest' or 'field', got {self.keep!r}")
        if self.keep_prefer not in ("max", "min"):
            raise ParamError(f"keep_prefer must be 'max' or 'min', got {self.keep_prefer!r}")
        if not isinstance(self.max_distance, int) or not 0 <= self.max_distance <= 32:
            raise ParamError(
                f"max_distance must be an integer from 0 to 32, got {self.max_distance!r}"
            )
        check_dedup_params(self)

    def check_super_features(self) -> None:
        """Megashingles need C(k, r) keys a document: refuse plans where that explodes."""
        if not self.super_features or self.method != "minhash":
            return
        fp = self.feature_params()
        count = math.comb(fp.k, fp.r)
        if count > MAX_SUPER_FEATURES:
            raise ParamError(
                f"super features need C(k={fp.k}, r={fp.r}) = {count:,} keys a document (at most "
                f"{MAX_SUPER_FEATURES}); give small explicit features, e.g. --features 6,14,2"
            )

    def feature_params(self) -> FeatureParams:
        """The explicit features, or the planner's choice for ``threshold`` and ``max_t``.

        With verification, a missed pair is lost for good while a false candidate only costs a
        check, so the planner weighs misses 1000 times more: P(threshold) >= 0.99 for every
        threshold. Without verification the features decide alone: equal costs, P(threshold)
        near 1/2, Broder's original setting.
        """
        if self.features is not None:
            return self.features
        # Pairs at resemblance 1 share every feature whatever the plan: plan for just below it.
        threshold = min(self.threshold, MAX_PLANNED_THRESHOLD)
        return _planned(threshold, self.max_t, 1.0 if self.verify == "none" else 1000.0)

    def sketch_params(self) -> SketchParams:
        return SketchParams(kind=self.sketch_kind, t=self.feature_params().t, seed=self.seed)

    def fingerprint(self) -> str:
        return _fingerprint(self)


@dataclass(frozen=True)
class DedupStats:
    """What a fit found and cost; ``as_dict`` feeds summaries and JSON reports."""

    documents: int
    empty: int
    exact_duplicates: int
    candidate_pairs: int
    accepted_pairs: int
    clusters: int
    removed: int
    seconds: float
    bytes_in: int
    bytes_per_doc_in_memory: float
    big_buckets: int
    big_bucket_docs: int
    rechecked_pairs: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


@dataclass
class _Parts:
    canonical: list[npt.NDArray[np.uint64]] = field(default_factory=list)
    lengths: list[npt.NDArray[np.int64]] = field(default_factory=list)
    keys: list[npt.NDArray[np.uint64]] = field(default_factory=list)
    sketches: list[npt.NDArray[np.uint16]] = field(default_factory=list)
    fps: list[npt.NDArray[np.uint64]] = field(default_factory=list)
    fp_sizes: list[npt.NDArray[np.int64]] = field(default_factory=list)
    simhash: list[npt.NDArray[np.uint64]] = field(default_factory=list)


class Deduplicator:
    """Find near-duplicate clusters in a collection: ``Deduplicator(p).fit(texts).clusters_``.

    Feed all texts with ``fit`` (any iterable; consumed in batches), or batch by batch with
    ``partial_fit`` then ``finish()``. Results: ``clusters_`` (int64[n]: the smallest document
    index of each document's cluster), ``kept_`` (bool[n]), ``empty_`` (bool[n]),
    ``pairs_`` ((a, b, score) of accepted pairs, exact duplicates included with score 1.0),
    ``stats_``. The same texts and parameters give identical results whatever the batching.
    """

    def __init__(self, params: DedupParams | None = None, idf: IdfTable | None = None) -> None:
        self.params = params or DedupParams()
        self.params.check_super_features()
        self.idf = idf
        #: What the Hamming planner chose (method="simhash"), set by ``finish``.
        self.hamming_plan_: str | None = None
        if self.params.method == "minhash":
            self._features = self.params.feature_params()
            self._sketch = SketchParams(self.params.sketch_kind, self._features.t, self.params.seed)
        self._parts = _Parts()
        self._n = 0
        self._bytes = 0
        self._started = time.perf_counter()
        self._finished = False

    @property
    def n_docs(self) -> int:
        """Documents fed so far."""
        return self._n

    @property
    def n_bytes(self) -> int:
        """Input bytes fed so far (as reported by the caller, else characters)."""
        return self._bytes

    # -- pass over the texts ---------------------------------------------------------------
    def partial_fit(self, texts: Sequence[str], nbytes: int | None = None) -> Deduplicator:
        """Sketch one batch of documents (their indices continue from the previous batch)."""
        if self._finished:
            raise NeardupError("this Deduplicator has finished; create a new one to fit again")
        check_texts(texts, self._n)
        p = self.params
        parts = self._parts
        fps, offsets, canonical = shingle_texts(texts, p.shingle)
        parts.canonical.append(canonical)
        parts.lengths.append(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
        if p.method == "minhash":
            sk = minhash.sketch(fps, offsets, self._sketch)
            parts.keys.append(features.features(sk, self._features))
            if p.verify in ("sketch", "hybrid"):
                # The low 16 bits of each value suffice to compare: unequal values agree there
                # with probability 2^-16, a bias of at most 1.5e-5 on the estimate.
                parts.sketches.append(sk.astype(np.uint16))
            elif p.verify == "exact":
                uniq, uoff = unique_per_doc(fps, offsets)
                parts.fps.append(uniq)
                parts.fp_sizes.append(np.diff(uoff))
        else:
            parts.simhash.append(self._simhash(texts))
        self._n += len(texts)
        self._bytes += nbytes if nbytes is not None else sum(map(len, texts))
        return self

    def simhash_params(self) -> SimhashParams:
        """The SimHash fingerprint parameters this deduplicator uses (method="simhash")."""
        p = self.params
        return SimhashParams(
            features=p.simhash_features,
            q=p.simhash_q,
            w=p.shingle.w,
            weighting=p.simhash_weighting,
            seed=p.seed,
            nfkc=p.shingle.nfkc,
        )

    def _simhash(self, texts: Sequence[str]) -> npt.NDArray[np.uint64]:
        return simhash(texts, self.simhash_params(), self.idf)

    def fit(
        self,
        texts: Iterable[str],
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[int, int], None] | None = None,
        key: npt.ArrayLike | None = None,
    ) -> Deduplicator:
        """Feed every text in batches of ``batch_size``, then finish. Returns self.

        SimHash with IDF weighting and no table given reads the texts twice: once to fit it;
        hybrid verification keeps them to re-check borderline pairs.
        """
        check_iterable_texts(texts)
        check_batch_size(batch_size)
        p = self.params
        fetch = None
        if p.method == "simhash" and p.simhash_weighting == "idf" and self.idf is None:
            texts = list(texts)
            self.idf = fit_idf_texts(texts, self.simhash_params(), batch_size)
        if p.method == "minhash" and p.verify == "hybrid":
            kept_texts = list(texts)
            texts = kept_texts

            def fetch(docs: np.ndarray) -> list[str]:
                return [kept_texts[i] for i in docs.tolist()]

        batch: list[str] = []
        for text in texts:
            batch.append(text)
            if len(batch) == batch_size:
                self.partial_fit(batch)
                batch = []
                if progress is not None:
                    progress(self._n, self._bytes)
        if batch:
            self.partial_fit(batch)
        return self.finish(key, fetch)

    # -- clustering ------------------------------------------------------------------------
    def finish(
        self,
        key: npt.ArrayLike | None = None,
        fetch_texts: Callable[[np.ndarray], Sequence[str]] | None = None,
    ) -> Deduplicator:
        """Candidate pairs, verification, clusters and representatives over everything fed.

        key: one value per document (numbers, strings or datetimes) when ``keep="field"``.
        fetch_texts: for ``verify="hybrid"``, returns the texts of the given sorted document
          indices, in that order (the CLI reads its input again; ``fit`` keeps the texts).
        """
        p = self.params
        parts = self._parts
        n = self._n
        memory_per_doc = self._memory_per_doc()
        canonical = _cat(parts.canonical, np.uint64)
        lengths = _cat(parts.lengths, np.int64)
        empty = canonical == np.uint64(minhash.EMPTY)

        # Exact duplicates: every document points at the first document with its content hash.
        _, first, inverse = np.unique(canonical, return_index=True, return_inverse=True)
        rep = first[inverse.ravel()].astype(np.int64)
        rep[empty] = np.flatnonzero(empty)
        is_rep = rep == np.arange(n)
        dup = np.flatnonzero(~is_rep)
        exact_a, exact_b = rep[dup], dup

        reps = np.flatnonzero(is_rep & ~empty)
        big_buckets = big_docs = n_candidates = rechecked = 0
        if p.method == "minhash":
            keys = _gather_rows(parts.keys, reps, (self._features.k,), np.uint64)
            parts.keys.clear()
            r = self._features.r
            if p.super_features:  # share >= r features <=> share one r-subset key
                keys, r = features.feature_combinations(keys, r), 1
            found = candidates.candidate_pairs(keys, r, max_bucket=p.max_bucket)
            big_buckets, big_docs = found.stats.big_buckets, found.stats.big_bucket_docs
            a, b = reps[found.a], reps[found.b]
            n_candidates = len(a)
            score = self._verify(a, b, n)
            if p.verify == "hybrid":
                rechecked = self._recheck(a, b, score, fetch_texts)
            ok = score >= p.threshold if p.verify != "none" else np.ones(len(a), dtype=bool)
        else:
            from .hamming import hamming_pairs, plan_tables

            fp = _gather_rows(parts.simhash, reps, (), np.uint64)
            plan = plan_tables(p.max_distance, max(len(fp), 2))
            self.hamming_plan_ = plan.describe().splitlines()[0]
            ha, hb, dist = hamming_pairs(fp, p.max_distance, plan)
            a, b = reps[ha], reps[hb]
            n_candidates = len(a)
            score = 1.0 - dist.astype(np.float64) / 64.0
            ok = np.ones(len(a), dtype=bool)
        a, b, score = a[ok], b[ok], score[ok]

        all_a = np.concatenate([exact_a, a])
        all_b = np.concatenate([exact_b, b])
        all_s = np.concatenate([np.ones(len(exact_a)), score])
        order = np.lexsort((all_b, all_a))
        self.pairs_ = (all_a[order], all_b[order], all_s[order])
        self.clusters_ = clusters.cluster_labels(n, all_a, all_b)
        if p.keep == "field":
            if key is None or np.asarray(key).shape != (n,):
                raise ParamError(
                    f"keep='field' needs key=<one value per document> ({n}) given to finish/fit"
                )
            self.kept_ = clusters.choose_representatives(
                self.clusters_, "field", key=key, prefer=p.keep_prefer
            )
        elif p.keep == "longest":
            self.kept_ = clusters.choose_representatives(self.clusters_, "longest", lengths=lengths)
        else:
            self.kept_ = clusters.choose_representatives(self.clusters_, "first")
        self.empty_ = empty
        sizes = np.bincount(self.clusters_, minlength=n)
        self.stats_ = DedupStats(
            documents=n,
            empty=int(empty.sum()),
            exact_duplicates=len(dup),
            candidate_pairs=int(n_candidates),
            accepted_pairs=len(a),
            clusters=int((sizes >= 2).sum()),
            removed=int(n - self.kept_.sum()),
            seconds=time.perf_counter() - self._started,
            bytes_in=self._bytes,
            bytes_per_doc_in_memory=memory_per_doc,
            big_buckets=int(big_buckets),
            big_bucket_docs=int(big_docs),
            rechecked_pairs=int(rechecked),
        )
        self._finished = True
        return self

    def _verify(self, a: np.ndarray, b: np.ndarray, n: int) -> npt.NDArray[np.float64]:
        """Score candidate pairs, gathering only the rows of documents that occur in a pair."""
        p = self.params
        parts = self._parts
        if p.verify == "none":
            return np.ones(len(a), dtype=np.float64)
        needed = np.unique(np.concatenate([a, b]))
        la, lb = np.searchsorted(needed, a), np.searchsorted(needed, b)
        if p.verify in ("sketch", "hybrid"):
            sk = _gather_rows(parts.sketches, needed, (self._sketch.t,), np.uint16)
            return minhash.estimate_pairs(sk, la, lb, self._sketch.kind)
        batch = _gather_sets(parts.fps, parts.fp_sizes, needed)
        return pair_scores(batch, la, lb, "jaccard")

    def _recheck(
        self,
        a: np.ndarray,
        b: np.ndarray,
        score: npt.NDArray[np.float64],
        fetch_texts: Callable[[np.ndarray], Sequence[str]] | None,
    ) -> int:
        """Replace, in place, the estimates of borderline pairs by their exact Jaccard."""
        p = self.params
        margin = HYBRID_Z * np.sqrt(p.threshold * (1 - p.threshold) / self._sketch.t)
        near = np.flatnonzero(np.abs(score - p.threshold) <= margin)
        if len(near) == 0:
            return 0
        if fetch_texts is None:
            raise ParamError(
                "verify='hybrid' needs the borderline documents' texts: pass fetch_texts to "
                "finish(), or use fit(), which keeps them"
            )
        docs = np.unique(np.concatenate([a[near], b[near]]))
        texts = fetch_texts(docs)
        if len(texts) != len(docs):
            raise NeardupError(f"fetch_texts returned {len(texts)} texts for {len(docs)} documents")
        batch = shingle_batch(list(texts), p.shingle)
        la, lb = np.searchsorted(docs, a[near]), np.searchsorted(docs, b[near])
        score[near] = pair_scores(batch, la, lb, "jaccard")
        return len(near)

    def _memory_per_doc(self) -> float:
        parts = self._parts
        arrays: list[np.ndarray] = [*parts.canonical, *parts.lengths, *parts.keys]
        arrays += [*parts.sketches, *parts.fps, *parts.fp_sizes, *parts.simhash]
        total = sum(x.nbytes for x in arrays)
        return total / max(self._n, 1)


@functools.cache
def _planned(threshold: float, max_t: int, cost_fn: float) -> FeatureParams:
    from .planner import plan

    return plan(threshold, max_t=max_t, cost_fn=cost_fn).params


def _gather_rows(
    parts: list[np.ndarray], rows: np.ndarray, tail: tuple[int, ...], dtype: type
) -> np.ndarray:
    """Rows ``rows`` (sorted global indices) of the concatenation of ``parts``, without it."""
    out: np.ndarray = np.empty((len(rows), *tail), dtype=dtype)
    start = 0
    done = 0
    for part in parts:
        stop = start + len(part)
        lo, hi = np.searchsorted(rows, [start, stop])
        out[done : done + hi - lo] = part[rows[lo:hi] - start]
        done += hi - lo
        start = stop
    return out


def _gather_sets(
    fps_parts: list[np.ndarray], size_parts: list[np.ndarray], docs: np.ndarray
) -> ShingleBatch:
    """The shingle sets of documents ``docs`` (sorted global indices) as one compact batch."""
    sizes = _gather_rows(size_parts, docs, (), np.int64)
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    start = 0
    for fps, part_sizes in zip(fps_parts, size_parts, strict=True):
        stop = start + len(part_sizes)
        lo, hi = np.searchsorted(docs, [start, stop])
        local = docs[lo:hi] - start
        part_offsets = np.zeros(len(part_sizes) + 1, dtype=np.int64)
        np.cumsum(part_sizes, out=part_offsets[1:])
        lengths = part_sizes[local]
        firsts = part_offsets[local]
        total = int(lengths.sum())
        if total:
            shift = np.repeat(firsts - (np.cumsum(lengths) - lengths), lengths)
            out[offsets[lo] : offsets[lo] + total] = fps[shift + np.arange(total)]
        start = stop
    return ShingleBatch(out, offsets)


def _cat(parts: list[np.ndarray], dtype: type, empty_shape: tuple[int, ...] = (0,)) -> np.ndarray:
    if not parts:
        return np.zeros(empty_shape, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)
