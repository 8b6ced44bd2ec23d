"""A sample of the corpus -> the distribution of resemblance among its pairs -> the expected false
candidates and misses of a feature plan (k, s, r): Broder's "graph the filter and do experimental
determinations", done for the user.

Which pairs are measured: ``n`` documents drawn at random (the *queries*, seeded) are compared
with every document of the corpus. A pair {x, y} of the corpus is observed when x or y is a
query, so the observed pairs are a uniform sample of all N(N-1)/2 pairs and each stands for
``scale = N(N-1)/2 / observed`` of them (a Horvitz-Thompson weight); near-duplicate pairs, rare
among random pairs, are found ~2n/N of the time instead of (n/N)^2 as within a sample alone.

How: three reads of the input (count; the queries' texts; every document against the queries).
Pairs with resemblance at least ``floor`` are found by a permissive feature plan (P(floor) >=
0.999) matched against the queries' features, and their *exact* resemblance (Jaccard of the
shingle sets) is computed. Pairs below the floor are only counted; their share of false
candidates is bounded by P(floor) each.

For a plan with acceptance curve P(ρ) and a threshold T, with ρ_i the measured resemblances:
    near-duplicate pairs  ≈ scale · #{ρ_i >= T}
    false candidates      ≈ scale · Σ_{ρ_i < T} P(ρ_i)   (+ at most scale · below · P(floor))
    misses                ≈ scale · Σ_{ρ_i >= T} (1 - P(ρ_i));   recall = 1 - misses / pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .errors import NeardupError, ParamError
from .features import FeatureParams, acceptance, features
from .minhash import sketch
from .params import (
    MAX_SUPER_FEATURES,
    DedupParams,
    MinhashParams,
    ShingleParams,
    SketchParams,
    check_seed,
)
from .planner import features_for, plan, plan_as_dedup, planned, planned_threshold
from .resemblance import pair_scores
from .shingles import ShingleBatch, shingle_batch

#: A fresh pass over the corpus: batches of (texts, global positions).
Batches = Callable[[], Iterator[tuple[Sequence[str], npt.NDArray[np.int64]]]]


@dataclass(frozen=True)
class Forecast:
    """What a plan (k, s, r) is expected to do on the whole corpus at a threshold."""

    params: FeatureParams
    threshold: float
    label: str
    near_duplicate_pairs: float
    candidates: float
    false_candidates: float
    false_candidates_bound: float
    misses: float
    recall: float

    def describe(self) -> str:
        p = self.params
        bound = (
            f" (+ at most {self.false_candidates_bound:,.1f} from pairs below the floor)"
            if self.false_candidates_bound >= 0.05
            else ""
        )
        t = f"{self.threshold:g}"
        rows = [
            (f"near-duplicate pairs (rho >= {t})", self.near_duplicate_pairs, ""),
            ("candidate pairs", self.candidates, ""),
            (f"false candidates (rho < {t})", self.false_candidates, bound),
            (f"misses (rho >= {t}, not candidates)", self.misses, f"   recall {self.recall:.4f}"),
        ]
        head = f"{self.label}: k = {p.k}, s = {p.s}, r = {p.r} (t = {p.t}) at threshold {t}"
        return "\n".join(
            [head, *(f"  {name:<36}{value:14,.1f}{tail}" for name, value, tail in rows)]
        )


@dataclass(frozen=True)
class SampleEstimate:
    """Exact resemblance of the observed pairs at or above ``floor`` (see the module docstring).

    corpus_docs N, sample_docs n, observed_pairs (pairs with a query in them), scale (corpus
    pairs each observed pair stands for), rho (float64[m]) and below_floor (observed pairs not
    measured because their resemblance is below the floor, or that the search missed).
    """

    corpus_docs: int
    sample_docs: int
    observed_pairs: int
    scale: float
    floor: float
    rho: npt.NDArray[np.float64]
    below_floor: int
    search: FeatureParams
    shingle: ShingleParams

    def forecast(self, params: FeatureParams, threshold: float, label: str = "plan") -> Forecast:
        """Expected near-duplicate pairs, candidates, false candidates and misses of ``params``."""
        p = acceptance(self.rho, params.k, params.s, params.r)
        high = self.rho >= threshold
        pairs = self.scale * float(high.sum())
        misses = self.scale * float((1.0 - p[high]).sum())
        false = self.scale * float(p[~high].sum())
        bound = (
            self.scale
            * self.below_floor
            * float(acceptance(self.floor, params.k, params.s, params.r))
        )
        return Forecast(
            params=params,
            threshold=threshold,
            label=label,
            near_duplicate_pairs=pairs,
            candidates=self.scale * float(p.sum()),
            false_candidates=false,
            false_candidates_bound=bound,
            misses=misses,
            recall=1.0 - misses / pairs if pairs else 1.0,
        )

    def histogram(self, width: float = 0.05) -> list[tuple[float, float, int]]:
        """(low, high, measured pairs) for bins [low, high) of ``width`` from the floor up to 1,
        then (1, 1, pairs with identical shingle sets)."""
        steps = max(1, round((1.0 - self.floor) / width))
        edges = np.linspace(self.floor, 1.0, steps + 1)
        counts = np.bincount(
            np.searchsorted(edges, self.rho[self.rho < 1.0], side="right") - 1, minlength=steps
        )[:steps]
        rows = [
            (float(lo), float(hi), int(c))
            for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)
        ]
        return [*rows, (1.0, 1.0, int((self.rho >= 1.0).sum()))]

    def describe(self, forecasts: list[Forecast]) -> str:
        """The report ``neardup plan --sample`` prints."""
        lines = [
            f"sample: {self.sample_docs:,} random documents compared with all {self.corpus_docs:,} "
            f"({self.observed_pairs:,} pairs observed; each stands for {self.scale:,.2f} pairs "
            "of the corpus)",
            f"shingles: {self.shingle.fingerprint()}",
            f"pairs found with resemblance >= {self.floor:g}: {len(self.rho):,} "
            f"(search plan k={self.search.k}, s={self.search.s}, r={self.search.r}); "
            f"{self.below_floor:,} observed pairs lie below",
            "",
            "  resemblance      pairs in sample   est. pairs in corpus",
        ]
        for lo, hi, c in self.histogram():
            label = f"{lo:.2f} - {hi:.2f}" if hi > lo else "1 (identical)"
            lines.append(f"  {label:<13}   {c:15,}   {c * self.scale:20,.1f}")
        for f in forecasts:
            lines += ["", f.describe()]
        return "\n".join(lines)


def check_sample(n: int, threshold: float, floor: float | None, seed: int) -> float:
    """The floor in force (``floor``, else max(0.3, threshold / 2) but never above the
    threshold); a bad sample size, floor or seed refused before any of the corpus is read."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ParamError(f"the sample size (--sample-size) must be a positive integer, got {n!r}")
    check_seed(seed)
    if floor is None:
        floor = min(threshold, max(0.3, threshold / 2))
        if floor < 0.1:
            raise ParamError(
                f"a sample measures resemblance down to 0.1 at the lowest, above the threshold "
                f"{threshold:g}; give a threshold of 0.1 or more (--threshold)"
            )
    if not isinstance(floor, int | float) or not 0.1 <= floor < 1.0:
        raise ParamError(
            f"the resemblance floor (--floor) must lie in [0.1, 1), got {floor!r}; below 0.1 almost "
            "every pair would be a candidate of the search"
        )
    if floor > threshold:
        raise ParamError(
            f"the resemblance floor {floor:g} lies above the threshold {threshold:g}: pairs "
            "between them would be neither measured nor counted as near duplicates; give a "
            "floor at most the threshold (--floor)"
        )
    return float(floor)


def _merged(a: ShingleBatch, b: ShingleBatch) -> ShingleBatch:
    """The documents of a, then those of b, as one batch."""
    return ShingleBatch(
        np.concatenate([a.fps, b.fps]), np.concatenate([a.offsets, b.offsets[1:] + len(a.fps)])
    )


def _matches(
    q_keys: npt.NDArray[np.uint64],
    q_owner: npt.NDArray[np.int64],
    feats: npt.NDArray[np.uint64],
    r: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(document row, query) pairs sharing at least r features; q_keys sorted, with owners."""
    n, k = feats.shape
    flat = feats.ravel()
    lo = np.searchsorted(q_keys, flat, side="left")
    hi = np.searchsorted(q_keys, flat, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.repeat(np.arange(n * k, dtype=np.int64) // k, counts)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    owners = q_owner[np.arange(total, dtype=np.int64) + starts]
    codes = rows * (len(q_owner) + 1) + owners
    uniq, shared = np.unique(codes, return_counts=True)
    keep = uniq[shared >= r]
    return keep // (len(q_owner) + 1), keep % (len(q_owner) + 1)


@dataclass
class _Queries:
    """The sampled query documents: their shingle sets and their features sorted by key, so
    each corpus batch finds the queries it resembles by sorting, never all pairs."""

    positions: npt.NDArray[np.int64]  # global positions, sorted
    sets: ShingleBatch
    keys: npt.NDArray[np.uint64]
    owner: npt.NDArray[np.int64]  # the query of each key
    shingle: ShingleParams
    sketch: SketchParams
    search: FeatureParams

    @classmethod
    def of(
        cls,
        texts: list[str],
        positions: npt.NDArray[np.int64],
        shingle: ShingleParams,
        sp: SketchParams,
        search: FeatureParams,
    ) -> _Queries:
        """The queries ``texts`` (at ``positions``), featured under ``search``."""
        sets = shingle_batch(texts, shingle)
        feats = features(sketch(sets.fps, sets.offsets, sp), search)
        owner_all = np.repeat(np.arange(len(texts), dtype=np.int64), search.k)
        flat = feats.ravel()
        valid = flat != np.uint64(0xFFFFFFFFFFFFFFFF)  # empty documents have no features
        order = np.argsort(flat[valid], kind="stable")
        return cls(
            positions, sets, flat[valid][order], owner_all[valid][order], shingle, sp, search
        )

    def scores(
        self, texts: Sequence[str], pos: npt.NDArray[np.int64], floor: float
    ) -> npt.NDArray[np.float64]:
        """Jaccard of the (query, document) candidate pairs of one batch at ``floor`` or
        above; a pair of two queries counts once, from its later member."""
        sets = shingle_batch(texts, self.shingle)
        feats = features(sketch(sets.fps, sets.offsets, self.sketch), self.search)
        rows, qs = _matches(self.keys, self.owner, feats, self.search.r)
        d_pos = pos[rows]
        q_pos = self.positions[qs]
        # a pair of two queries is seen from both sides: count it from its later member only
        keep = (d_pos != q_pos) & ~(np.isin(d_pos, self.positions) & (d_pos < q_pos))
        rows, qs = rows[keep], qs[keep]
        if not rows.size:
            return np.zeros(0, np.float64)
        both = _merged(self.sets, sets)
        score = pair_scores(both, qs, rows + len(self.positions), "jaccard")
        return score[score >= floor]


def estimate_from_sample(
    batches: Batches,
    n: int = 1000,
    *,
    threshold: float = 0.8,
    shingle: ShingleParams = ShingleParams(),
    floor: float | None = None,
    seed: int = 1,
) -> SampleEstimate:
    """Measure the resemblance distribution of the corpus from ``n`` random query documents.

    ``batches()`` must start a new pass over the corpus each call, yielding (texts, global
    positions) in order. ``floor`` defaults to max(0.3, threshold / 2), at most the threshold.
    """
    floor = check_sample(n, threshold, floor, seed)
    total = sum(len(texts) for texts, _ in batches())
    if total < 2:
        raise NeardupError(f"the corpus has {total} document(s); a sample needs at least 2")
    m = min(n, total)
    rng = np.random.default_rng([seed, 91])
    queries = np.sort(rng.choice(total, size=m, replace=False)).astype(np.int64)
    q_texts: list[str] = []
    for texts, pos in batches():
        for i in np.flatnonzero(np.isin(pos, queries)).tolist():
            q_texts.append(texts[i])
    search = plan(floor, cost_fn=1000.0).params
    probe = _Queries.of(q_texts, queries, shingle, SketchParams(t=search.t, seed=seed), search)
    rho = [score for texts, pos in batches() if len(score := probe.scores(texts, pos, floor))]
    measured = np.concatenate(rho) if rho else np.zeros(0, np.float64)
    all_pairs = total * (total - 1) / 2
    observed = m * (total - m) + m * (m - 1) // 2
    return SampleEstimate(
        corpus_docs=total,
        sample_docs=m,
        observed_pairs=observed,
        scale=all_pairs / observed,
        floor=floor,
        rho=np.sort(measured),
        below_floor=observed - len(measured),
        search=search,
        shingle=shingle,
    )


def plan_with_sample(
    batches: Batches,
    params: DedupParams,
    *,
    n: int = 1000,
    seed: int = 1,
    floor: float | None = None,
    cost_fp: float | None = None,
    cost_fn: float | None = None,
    max_bytes: int | None = None,
) -> tuple[SampleEstimate, list[Forecast]]:
    """The sample's estimate (shingled as ``params`` say) and two forecasts at its threshold:
    the features asked for (``params``' given features, the search under ``cost_fp``,
    ``cost_fn`` and ``max_bytes`` as ``neardup plan`` makes it, else the equal-cost plan),
    then the plan ``neardup dedup`` uses with ``params`` (``planner.features_for``)."""
    if not isinstance(params, DedupParams) or not isinstance(params.method, MinhashParams):
        raise ParamError(
            "a sample forecasts MinHash features (SimHash's tables have no resemblance curve); "
            "drop --method simhash (or --max-distance) or --sample"
        )
    threshold = params.resolved_threshold
    check_sample(n, threshold, floor, seed)  # the plans are checked before any reading too
    asked, _ = plan_as_dedup(params, cost_fp=cost_fp, cost_fn=cost_fn, max_bytes=max_bytes)
    m = params.method
    if m.features is not None:
        first, label = m.features, "given features"
    elif (cost_fp, cost_fn, max_bytes) != (None, None, None):
        first, label = asked.params, asked.how
    else:
        most = MAX_SUPER_FEATURES if m.super_features else None
        first = planned(planned_threshold(params), m.max_t, 1.0, most)
        label = "planned (equal costs)"
    dedup = features_for(params)
    est = estimate_from_sample(
        batches, n, threshold=threshold, shingle=params.shingle, floor=floor, seed=seed
    )
    return est, [
        est.forecast(first, threshold, label),
        est.forecast(dedup, threshold, "neardup dedup's plan"),
    ]
