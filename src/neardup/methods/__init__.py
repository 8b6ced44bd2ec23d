"""Near-duplicate search methods behind one protocol (see ``base``): MinHash and SimHash."""

from __future__ import annotations

from ..params import DedupParams, MinhashParams, SimhashMethodParams
from ..simhash import IdfTable
from .base import Candidates, Method, Signatures, query_candidates
from .minhash import MinHashMethod
from .simhash import SimHashMethod

__all__ = [
    "Candidates",
    "Method",
    "MinHashMethod",
    "Signatures",
    "SimHashMethod",
    "make_method",
    "needs_fit",
    "query_candidates",
]


def make_method(params: DedupParams, idf: IdfTable | None = None) -> Method:
    """The method object ``params.method`` describes."""
    m = params.method
    if isinstance(m, MinhashParams):
        return MinHashMethod(m, params.feature_params(), params.seed)
    if isinstance(m, SimhashMethodParams):
        return SimHashMethod(m, params.simhash_params(), idf)
    raise TypeError(f"no method for {type(m).__name__}")


def needs_fit(params: DedupParams) -> bool:
    """True when the method learns from the corpus before signing it (SimHash IDF weights)."""
    m = params.method
    return isinstance(m, SimhashMethodParams) and m.weighting == "idf"
