"""Threshold ρ0 (+ byte budget, error costs) -> Broder feature plan (k, s, r, t = k·s) minimising
the weighted L1 distance between the acceptance curve P(ρ) = P[Bin(k, ρ^s) >= r] and a step at ρ0.

The planner minimises

    E = [cost_fp · ∫_0^ρ0 P(ρ) dρ  +  cost_fn · ∫_ρ0^1 (1 - P(ρ)) dρ] / [cost_fp · ρ0 + cost_fn · (1 - ρ0)].

The numerator is the expected cost of a wrong decision for a pair whose resemblance ρ is uniform
on [0, 1] (false positives below ρ0, false negatives above). The denominator is the same cost for
the worst possible curve (accept exactly the pairs below ρ0), so E is a fraction in [0, 1] that
can be compared across thresholds and costs; it does not change which plan wins.

Why the two integrals are *not* each divided by their own interval length: that would make one
unit of resemblance on the narrow side (above ρ0 = 0.8 the interval is four times narrower) count
more than one on the wide side, pulling the curve off the threshold (measured: P(0.8) = 0.75
with equal costs). Undivided, the equal-cost optimum puts P(ρ0) near 1/2, Broder's rule of thumb
(for r = 1: s ≈ ln(k / ln 2) / ln(1/ρ0)), so "threshold" means what it says; the costs then move
the curve deliberately. The plan also reports the mean error *rates* on each side
(the integrals divided by their interval lengths) because those are easier to read.

The search is exhaustive over k (bounded by the byte budget, 8 bytes per feature, and by the
maximum sketch length), s (k·s <= max_t) and r <= max_r; the plan uses exactly t = k·s sketch
values, so a sketch of that length leaves no value unused. Ties go to the smaller t, then k.
Larger r gives steeper curves at the same t; batch candidate generation costs the same for any r
(pairs sharing one feature are emitted and counted), but a key-lookup index needs C(k, r)
combined keys per document (``features.feature_combinations``), hence the default max_r = 3.

One decision for every caller: ``features_for(params)`` is the features a MinHash deduplication
uses (``make_method`` builds the method with them: ``neardup dedup``, the index, the service,
Dask), and ``plan_for(params)`` is that decision with its report (``neardup plan``). The cost
model follows the verification (``cost_model``): verified candidates make a false candidate
cost one check while a missed pair is lost for good, so misses weigh ``VERIFIED_FN_COST``;
unverified, the features decide alone and the costs are equal (P(ρ0) near 1/2).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .errors import ParamError
from .features import acceptance, binomial_term, rejection
from .params import (
    DEDUP_EXAMPLE,
    MAX_PLANNED_THRESHOLD,
    MAX_SUPER_FEATURES,
    MAX_T,
    DedupParams,
    FeatureParams,
    MinhashParams,
    SketchParams,
    Verify,
    check_kind,
)

#: Resemblances at which a plan reports its acceptance probability.
REPORT_RHOS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)

_PANELS = 64
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)


def _quadrature(lo: float, hi: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Composite 8-point Gauss-Legendre nodes and weights on [lo, hi] (64 panels)."""
    edges = np.linspace(lo, hi, _PANELS + 1)
    half = (edges[1:] - edges[:-1])[:, None] / 2
    mid = (edges[1:] + edges[:-1])[:, None] / 2
    nodes = (mid + half * _NODES[None, :]).ravel()
    weights = (half * _WEIGHTS[None, :]).ravel()
    return nodes, weights


@dataclass(frozen=True)
class Plan:
    """A chosen (k, s, r) and what it does around the threshold.

    fp_integral: ∫_0^threshold P(ρ) dρ; fn_integral: ∫_threshold^1 (1 - P(ρ)) dρ.
    fp_rate: mean P(ρ) for ρ uniform on [0, threshold] (mean false-positive rate).
    fn_rate: mean 1 - P(ρ) for ρ uniform on [threshold, 1] (mean false-negative rate).
    error: (cost_fp * fp_integral + cost_fn * fn_integral) / (cost_fp * threshold
      + cost_fn * (1 - threshold)), the quantity the planner minimises (module docstring).
    rho_half: the resemblance at which P = 1/2 (the curve's effective threshold).
    curve: (ρ, P(ρ)) at REPORT_RHOS and at the threshold, ascending in ρ.
    how: how the features were chosen and under which costs ("planned with fn-cost 1000
      (verified)", "given"); empty for a bare ``plan``/``evaluate``. Named in the report and in
      the MinHash method's summary line.
    """

    k: int
    s: int
    r: int
    t: int
    bytes_per_doc: int
    threshold: float
    cost_fp: float
    cost_fn: float
    fp_integral: float
    fn_integral: float
    fp_rate: float
    fn_rate: float
    error: float
    rho_half: float
    p_at_threshold: float
    curve: tuple[tuple[float, float], ...]
    how: str = ""

    @property
    def params(self) -> FeatureParams:
        """The feature parameters of this plan."""
        return FeatureParams(self.k, self.s, self.r)

    def describe(self) -> str:
        """A readable multi-line report (what ``neardup plan`` prints)."""
        lines = [
            f"Broder features (LSH banding) for resemblance threshold {self.threshold:g}",
            f"  k = {self.k} features (bands) of s = {self.s} sketch values each; "
            f"a pair needs r = {self.r} shared feature{'s' if self.r > 1 else ''}",
            f"  sketch length t = k*s = {self.t} values; {self.bytes_per_doc} bytes of features "
            "per document",
            f"  P(rho) = 1/2 at rho = {self.rho_half:.3f}; "
            f"P({self.threshold:g}) = {probability(self.p_at_threshold, '.3f')}",
            *([f"  chosen: {self.how}"] if self.how else []),
            f"  mean false-positive rate, rho uniform below {self.threshold:g}: {self.fp_rate:.3g}",
            f"  mean false-negative rate, rho uniform above {self.threshold:g}: {self.fn_rate:.3g}",
            f"  normalised error (cost_fp = {self.cost_fp:g}, cost_fn = {self.cost_fn:g}): "
            f"{self.error:.3g}  (0 = ideal step at the threshold, 1 = its opposite)",
            "",
            "     rho   P(candidate)    P(missed)",
        ]
        miss = rejection(np.array([rho for rho, _ in self.curve]), self.k, self.s, self.r)
        for (rho, p), m in zip(self.curve, miss, strict=True):
            mark = "  <- threshold" if rho == self.threshold else ""
            shown = f"{rho:6.3f}" if round(rho, 3) == rho else f"{rho:6.4g}"  # 1e-09, not 0.000
            lines.append(f"  {shown}   {p:12.4g}   {float(m):10.4g}{mark}")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line for a run's summary: P at the threshold and how the features were chosen."""
        return _summary_line(self.threshold, self.p_at_threshold, self.how)

    def __str__(self) -> str:
        return self.describe()


def check_threshold(threshold: float) -> float:
    """A threshold strictly between 0 and 1, as a float (a curve needs room on both sides)."""
    if not isinstance(threshold, numbers.Real) or isinstance(threshold, bool):
        raise ParamError(f"threshold must be a number between 0 and 1, got {threshold!r}")
    x = float(threshold)
    if not 0.0 < x < 1.0:
        raise ParamError(f"threshold must lie strictly between 0 and 1, got {threshold!r}")
    return x


def _check_cost(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise ParamError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _rho_half(k: int, s: int, r: int) -> float:
    """ρ where P(ρ) = 1/2, by bisection (P is increasing from 0 to 1)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if float(acceptance(mid, k, s, r)) < 0.5:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def evaluate(
    params: FeatureParams, threshold: float, *, cost_fp: float = 1.0, cost_fn: float = 1.0
) -> Plan:
    """The Plan (error integrals, report points) of given feature parameters at a threshold."""
    check_kind(params, FeatureParams, "FeatureParams(k=38, s=6, r=3)")
    rho0 = check_threshold(threshold)
    cfp, cfn = (
        _check_cost("cost_fp (--fp-cost)", cost_fp),
        _check_cost("cost_fn (--fn-cost)", cost_fn),
    )
    k, s, r = params.k, params.s, params.r
    lo_x, lo_w = _quadrature(0.0, rho0)
    hi_x, hi_w = _quadrature(rho0, 1.0)
    fp = float(lo_w @ acceptance(lo_x, k, s, r))
    fn = float(hi_w @ rejection(hi_x, k, s, r))
    rhos = sorted(set(REPORT_RHOS) | {rho0})
    values = acceptance(np.array(rhos), k, s, r)
    return Plan(
        k=k,
        s=s,
        r=r,
        t=params.t,
        bytes_per_doc=params.bytes_per_doc,
        threshold=rho0,
        cost_fp=cfp,
        cost_fn=cfn,
        fp_integral=fp,
        fn_integral=fn,
        fp_rate=fp / rho0,
        fn_rate=fn / (1.0 - rho0),
        error=(cfp * fp + cfn * fn) / (cfp * rho0 + cfn * (1.0 - rho0)),
        rho_half=_rho_half(k, s, r),
        p_at_threshold=float(acceptance(rho0, k, s, r)),
        curve=tuple((float(x), float(p)) for x, p in zip(rhos, values, strict=True)),
    )


def _lower_tail(log_p: np.ndarray, log_q: np.ndarray, k: int, r: int) -> np.ndarray:
    """1 - P = Σ_{i<r} C(k,i) p^i q^(k-i) from log p and log q = log(1-p) (r terms only)."""
    total = np.zeros_like(log_p)
    for i in range(r):
        total += binomial_term(log_p, log_q, k, i)
    return np.minimum(total, 1.0)


@functools.cache
def planned(
    threshold: float, max_t: int, cost_fn: float, max_keys: int | None = None
) -> FeatureParams:
    """The planner's features for a threshold (cached: deduplication asks once per run); the
    search alone, without the report ``plan`` adds (a tenth of a second at start-up).
    ``max_keys``: at most C(k, r) keys a document (super features), None: any."""
    rho0 = check_threshold(threshold)
    cfn = _check_cost("cost_fn (--fn-cost)", cost_fn)
    if (
        not isinstance(max_t, numbers.Integral)
        or isinstance(max_t, bool)
        or not 1 <= max_t <= MAX_T
    ):
        raise ParamError(f"max_t must be an integer from 1 to {MAX_T}, got {max_t!r}")
    k, s, r = _search(rho0, 1.0, cfn, (max_t, max_t, 3), max_keys)
    return FeatureParams(k, s, r)


def plan(
    threshold: float,
    *,
    max_bytes: int | None = None,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
    max_t: int = 256,
    max_r: int = 3,
) -> Plan:
    """Choose Broder feature parameters (k, s, r) for a resemblance threshold.

    threshold: resemblance ρ0 in (0, 1) above which pairs should be found.
    max_bytes: feature storage budget per document (8 bytes per feature); None = no budget
      beyond max_t.
    cost_fp, cost_fn: relative cost of a false positive and of a false negative.
    max_t: longest sketch the plan may need (t = k*s <= max_t).
    max_r: largest number of shared features to consider (counting many is slower).
    Returns the plan with the smallest normalised error E (module docstring), ties to smaller t.
    """
    rho0 = check_threshold(threshold)
    cfp, cfn = (
        _check_cost("cost_fp (--fp-cost)", cost_fp),
        _check_cost("cost_fn (--fn-cost)", cost_fn),
    )
    if (
        not isinstance(max_t, numbers.Integral)
        or isinstance(max_t, bool)
        or not 1 <= max_t <= MAX_T
    ):
        raise ParamError(f"max_t must be an integer from 1 to {MAX_T}, got {max_t!r}")
    if not isinstance(max_r, numbers.Integral) or isinstance(max_r, bool) or max_r < 1:
        raise ParamError(f"max_r must be a positive integer, got {max_r!r}")
    k_max = max_t
    if max_bytes is not None:
        if (
            not isinstance(max_bytes, numbers.Integral)
            or isinstance(max_bytes, bool)
            or max_bytes < 8
        ):
            raise ParamError(
                f"max_bytes (--budget) must be an integer of at least 8 (one 8-byte feature), got "
                f"{max_bytes!r}"
            )
        k_max = min(k_max, max_bytes // 8)

    k, s, r = _search(rho0, cfp, cfn, (k_max, max_t, max_r))
    return evaluate(FeatureParams(k, s, r), rho0, cost_fp=cfp, cost_fn=cfn)


#: How many false candidates a missed pair costs when candidates are verified (every
#: verification but "none"): a false candidate costs one check, a miss is lost for good.
VERIFIED_FN_COST = 1000.0


def cost_model(verify: Verify) -> tuple[float, float]:
    """(cost_fp, cost_fn) the features of a deduplication are planned with: misses weigh
    ``VERIFIED_FN_COST`` when candidates are verified, so P(threshold) >= 0.99 for every
    threshold; unverified ("none"), the features decide alone: equal costs, P(threshold) near
    1/2, Broder's original setting."""
    return (1.0, 1.0) if verify == "none" else (1.0, VERIFIED_FN_COST)


def _minhash(params: DedupParams) -> MinhashParams:
    check_kind(params, DedupParams, DEDUP_EXAMPLE)
    if not isinstance(params.method, MinhashParams):
        raise ParamError("feature parameters belong to the MinHash method")
    return params.method


def planned_threshold(params: DedupParams) -> float:
    """The threshold the features are planned (and judged) at: pairs at resemblance 1 share
    every feature whatever the plan, so thresholds above MAX_PLANNED_THRESHOLD plan as it."""
    return min(params.resolved_threshold, MAX_PLANNED_THRESHOLD)


def features_for(params: DedupParams) -> FeatureParams:
    """The features a MinHash deduplication with these parameters uses: its explicit features,
    or the planner's choice for its threshold under its verification's cost model. The one
    decision: the method is built with it and ``neardup plan`` prints it (``plan_for``)."""
    m = _minhash(params)
    if m.features is not None:
        return m.features
    _, cost_fn = cost_model(params.resolved_verify)
    most = MAX_SUPER_FEATURES if m.super_features else None  # a key per r of the k features
    return planned(planned_threshold(params), m.max_t, cost_fn, most)


def sketch_for(params: DedupParams) -> SketchParams:
    """The sketch a deduplication computes (its MinHash method and its sketch verification):
    the features' t = k*s values under MinHash, else the verifier's own 128."""
    check_kind(params, DedupParams, DEDUP_EXAMPLE)
    if isinstance(params.method, MinhashParams):
        return SketchParams(kind=params.method.sketch, t=features_for(params).t, seed=params.seed)
    return SketchParams(kind="oph", t=128, seed=params.seed)


def _how(params: DedupParams) -> str:
    """How a deduplication's features are chosen: "given", or planned under which costs."""
    if _minhash(params).features is not None:
        return "given"
    verified = "unverified" if params.resolved_verify == "none" else "verified"
    return f"planned with fn-cost {cost_model(params.resolved_verify)[1]:g} ({verified})"


def _summary_line(threshold: float, p_at_threshold: float, how: str) -> str:
    tail = f", {how}" if how else ""
    return f"P({threshold:g}) = {probability(p_at_threshold, '.3g')}{tail}"


def probability(p: float, spec: str) -> str:
    """``p`` in the format ``spec``, unless that would show it as 0 or 1 when it is neither:
    then 3 significant digits (2.04e-10) or as many decimals as keep it below 1 (0.9998)."""
    text = format(p, spec)
    if 0.0 < p < 1.0 and float(text) in (0.0, 1.0):
        if float(text) == 0.0:
            return f"{p:.3g}"
        for decimals in range(4, 17):
            text = f"{p:.{decimals}f}"
            if float(text) < 1.0:
                break
    return text


def plan_for(params: DedupParams) -> Plan:
    """``features_for(params)`` with its report at the deduplication's threshold: what
    ``neardup plan`` prints; its ``summary()`` ends the MinHash method's summary line."""
    check_kind(params, DedupParams, DEDUP_EXAMPLE)
    cost_fp, cost_fn = cost_model(params.resolved_verify)
    features, threshold = features_for(params), planned_threshold(params)
    return _evaluated(features, threshold, cost_fp, cost_fn, _how(params))


def summary_for(params: DedupParams) -> str:
    """``plan_for(params).summary()`` without the report (0.1 s): P at the threshold and how
    the features were chosen, for the method line every run's summary prints."""
    return _summary(features_for(params), planned_threshold(params), _how(params))


@functools.lru_cache(maxsize=64)
def _summary(f: FeatureParams, threshold: float, how: str) -> str:
    """``summary_for``'s line (P at the threshold: 1.5 ms) once per plan: the index's dedup
    builds a method per piece of a batch."""
    return _summary_line(threshold, float(acceptance(threshold, f.k, f.s, f.r)), how)


def plan_as_dedup(
    params: DedupParams,
    *,
    cost_fp: float | None = None,
    cost_fn: float | None = None,
    max_bytes: int | None = None,
) -> tuple[Plan, Plan]:
    """(the plan asked for, ``plan_for(params)``): the same plan unless other costs or a byte
    budget are given, when the first is the search under them (or, with explicit features,
    those features judged by them), within the same sketch length and threshold."""
    used = plan_for(params)
    if cost_fp is None and cost_fn is None and max_bytes is None:
        return used, used
    m = _minhash(params)
    model_fp, model_fn = cost_model(params.resolved_verify)
    cfp = model_fp if cost_fp is None else cost_fp
    cfn = model_fn if cost_fn is None else cost_fn
    how = f"planned with fn-cost {cfn:g}, fp-cost {cfp:g}"
    if max_bytes is not None:
        how += f", budget {max_bytes} bytes"
    if m.features is not None:
        if max_bytes is not None:
            raise ParamError("--budget limits planned features; drop --budget or --features")
        chosen = evaluate(m.features, used.threshold, cost_fp=cfp, cost_fn=cfn)
        how = "given"
    else:
        chosen = plan(used.threshold, max_bytes=max_bytes, cost_fp=cfp, cost_fn=cfn, max_t=m.max_t)
    return dataclasses.replace(chosen, how=how), used


@functools.lru_cache(maxsize=64)
def _evaluated(
    features: FeatureParams, threshold: float, cost_fp: float, cost_fn: float, how: str
) -> Plan:
    """``evaluate`` (70 ms) once per plan: a method is built per batch in some jobs."""
    plan = evaluate(features, threshold, cost_fp=cost_fp, cost_fn=cost_fn)
    return dataclasses.replace(plan, how=how)


#: The search's answers (k, s, r) for the usual thresholds at the default limits (cost_fp = 1,
#: k and t up to 256, r up to 3), by cost_fn: 1 (no verification), 1000 (verification). A run
#: with these settings skips the search (a tenth of a second at start-up); a test recomputes
#: every entry with ``_exhaustive_search``.
KNOWN_PLANS: dict[float, dict[float, tuple[int, int, int]]] = {
    1.0: {
        0.5: (46, 4, 3), 0.55: (51, 5, 3), 0.6: (42, 6, 3), 0.65: (37, 6, 3),
        0.7: (33, 7, 3), 0.75: (28, 9, 3), 0.8: (25, 10, 3), 0.85: (19, 13, 3),
        0.9: (15, 17, 3), 0.95: (9, 28, 3), 0.99: (4, 64, 3),
    },
    1000.0: {
        0.5: (85, 3, 3), 0.55: (66, 3, 3), 0.6: (64, 4, 2), 0.65: (60, 4, 3),
        0.7: (51, 5, 2), 0.75: (43, 5, 3), 0.8: (38, 6, 3), 0.85: (32, 8, 3),
        0.9: (25, 10, 3), 0.95: (17, 15, 3), 0.99: (9, 28, 3),
    },
}  # fmt: skip
#: The search's limits: (k_max, max_t, max_r).
Limits = tuple[int, int, int]
KNOWN_LIMITS: Limits = (256, 256, 3)  # the limits of KNOWN_PLANS


def _search(
    rho0: float, cfp: float, cfn: float, limits: Limits, max_keys: int | None = None
) -> tuple[int, int, int]:
    """The (k, s, r) of smallest normalised error (with at most ``max_keys`` C(k, r), if
    given): from KNOWN_PLANS when it has the answer."""
    if cfp == 1.0 and limits == KNOWN_LIMITS:
        known = KNOWN_PLANS.get(cfn, {}).get(rho0)
        if known is not None and (max_keys is None or math.comb(known[0], known[2]) <= max_keys):
            return known
    return _exhaustive_search(rho0, cfp, cfn, limits, max_keys)


@functools.lru_cache(maxsize=64)
def _exhaustive_search(
    rho0: float, cfp: float, cfn: float, limits: Limits, max_keys: int | None = None
) -> tuple[int, int, int]:
    """The (k, s, r) of smallest normalised error over every candidate (those of at most
    ``max_keys`` C(k, r), if given); cached because engines re-plan per call."""
    k_max, max_t, max_r = limits
    lo_x, lo_w = _quadrature(0.0, rho0)
    hi_x, hi_w = _quadrature(rho0, 1.0)
    x = np.concatenate([lo_x, hi_x])
    n_lo = lo_x.size
    log_rho = np.log(x)
    best = (math.inf, 0, 0, 0)
    for k in range(1, k_max + 1):
        s_vals = np.arange(1, max_t // k + 1, dtype=np.float64)
        log_p = s_vals[:, None] * log_rho[None, :]  # (n_s, n_nodes)
        log_q = np.log(-np.expm1(log_p))
        tail = np.zeros_like(log_p)  # the lower tail grows one term per r (as _lower_tail sums)
        for r in range(1, min(max_r, k) + 1):
            tail += binomial_term(log_p, log_q, k, r - 1)
            if max_keys is not None and math.comb(k, r) > max_keys:
                continue
            miss = np.minimum(tail, 1.0)
            fp = (1.0 - miss[:, :n_lo]) @ lo_w
            fn = miss[:, n_lo:] @ hi_w
            err = (cfp * fp + cfn * fn) / (cfp * rho0 + cfn * (1.0 - rho0))
            i = int(np.argmin(err))
            cand = (round(float(err[i]), 12), k * (i + 1), k, r)
            if cand < best:
                best = cand
    _, t, k, r = best
    return k, t // k, r
