"""Near-duplicate search methods behind one protocol (see ``base``): MinHash, SimHash, sampled."""

from __future__ import annotations

from ..params import DedupParams, MinhashParams, SampledParams, SimhashMethodParams
from ..planner import features_for, summary_for
from ..simhash import IdfTable
from .base import (
    Candidates,
    KeyedCandidates,
    Method,
    Signatures,
    keyed_candidates,
    posting_rows,
    postings,
    query_candidates,
)
from .minhash import MinHashMethod
from .sampled import SampledMethod
from .simhash import SimHashMethod

__all__ = [
    "Candidates",
    "KeyedCandidates",
    "Method",
    "MinHashMethod",
    "SampledMethod",
    "Signatures",
    "SimHashMethod",
    "keyed_candidates",
    "make_method",
    "needs_fit",
    "posting_rows",
    "postings",
    "query_candidates",
]


def make_method(params: DedupParams, idf: IdfTable | None = None) -> Method:
    """The method object ``params.method`` describes."""
    m = params.method
    if isinstance(m, MinhashParams):
        return MinHashMethod(m, features_for(params), params.seed, summary_for(params))
    if isinstance(m, SimhashMethodParams):
        return SimHashMethod(m, params.simhash_params(), idf)
    if isinstance(m, SampledParams):
        return SampledMethod(m, params.resolved_threshold)
    raise TypeError(f"no method for {type(m).__name__}")


def needs_fit(params: DedupParams) -> bool:
    """True when the method learns from the corpus before signing it (SimHash IDF weights)."""
    m = params.method
    return isinstance(m, SimhashMethodParams) and m.weighting == "idf"
