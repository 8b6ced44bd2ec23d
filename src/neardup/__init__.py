"""neardup: find near-duplicate documents in text collections, fast."""

from __future__ import annotations

from .candidates import CandidateResult, candidate_pairs
from .client import Client
from .clusters import choose_representatives, cluster_labels
from .engine import Deduplicator, DedupStats
from .errors import IndexMismatchError, InputError, NeardupError, ParamError
from .features import acceptance, features
from .hamming import HammingIndex, hamming_pairs, plan_tables
from .index import Index, Match
from .methods import Method, MinHashMethod, SampledMethod, Signatures, SimHashMethod
from .minhash import EMPTY, estimate, estimate_pairs, expected_error, sketch, sketch_texts
from .params import (
    FORMAT_VERSION,
    DedupParams,
    FeatureParams,
    MinhashParams,
    SampledParams,
    ShingleParams,
    SimhashMethodParams,
    SimhashParams,
    SketchParams,
)
from .planner import Plan, plan
from .resemblance import containment, dice, jaccard, pair_scores
from .shingles import ShingleBatch, content_hashes, shingle_batch, shingle_sequence
from .simhash import IdfTable, fit_idf_texts, simhash
from .text import canonical_tokens

__version__ = "0.1.0"

__all__ = [
    "EMPTY",
    "FORMAT_VERSION",
    "CandidateResult",
    "Client",
    "DedupParams",
    "DedupStats",
    "Deduplicator",
    "FeatureParams",
    "HammingIndex",
    "IdfTable",
    "Index",
    "IndexMismatchError",
    "InputError",
    "Match",
    "Method",
    "MinHashMethod",
    "MinhashParams",
    "NeardupError",
    "ParamError",
    "Plan",
    "SampledMethod",
    "SampledParams",
    "ShingleBatch",
    "ShingleParams",
    "Signatures",
    "SimHashMethod",
    "SimhashMethodParams",
    "SimhashParams",
    "SketchParams",
    "__version__",
    "acceptance",
    "candidate_pairs",
    "canonical_tokens",
    "choose_representatives",
    "cluster_labels",
    "containment",
    "content_hashes",
    "dice",
    "estimate",
    "estimate_pairs",
    "expected_error",
    "features",
    "fit_idf_texts",
    "hamming_pairs",
    "jaccard",
    "pair_scores",
    "plan",
    "plan_tables",
    "shingle_batch",
    "shingle_sequence",
    "simhash",
    "sketch",
    "sketch_texts",
]
