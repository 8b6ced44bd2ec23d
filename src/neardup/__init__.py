"""neardup: find near-duplicate documents in text collections, fast.

The public names are imported lazily (PEP 562): ``import neardup`` and ``neardup --help`` do not
load NumPy kernels or Numba until a name that needs them is first used.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .errors import (
    IndexCorrupt,
    IndexMismatchError,
    InputError,
    NeardupError,
    OutputError,
    ParamError,
    ParamTypeError,
)
from .params import (
    FORMAT_VERSION,
    DecontaminateParams,
    DedupParams,
    FeatureParams,
    MinhashParams,
    SampledParams,
    ShingleParams,
    SimhashMethodParams,
    SimhashParams,
    SketchParams,
)

if TYPE_CHECKING:
    from .candidates import CandidateResult, candidate_pairs
    from .client import Client
    from .clusters import choose_representatives, cluster_labels
    from .decontaminate import BenchmarkMatch, Decontaminator
    from .engine import Deduplicator, DedupStats
    from .features import acceptance, features
    from .hamming import HammingIndex, hamming_pairs, plan_tables
    from .index import Index, Match
    from .methods import Method, MinHashMethod, SampledMethod, Signatures, SimHashMethod
    from .minhash import EMPTY, estimate, estimate_pairs, expected_error, sketch, sketch_texts
    from .planner import Plan, plan
    from .resemblance import containment, dice, jaccard, pair_scores
    from .shingles import ShingleBatch, content_hashes, shingle_batch, shingle_sequence
    from .simhash import IdfTable, fit_idf_texts, simhash
    from .text import canonical_tokens

_LAZY: dict[str, str] = {
    "BenchmarkMatch": "decontaminate",
    "CandidateResult": "candidates",
    "Client": "client",
    "Decontaminator": "decontaminate",
    "DedupStats": "engine",
    "Deduplicator": "engine",
    "EMPTY": "minhash",
    "HammingIndex": "hamming",
    "IdfTable": "simhash",
    "Index": "index",
    "Match": "index",
    "Method": "methods",
    "MinHashMethod": "methods",
    "SampledMethod": "methods",
    "Plan": "planner",
    "ShingleBatch": "shingles",
    "Signatures": "methods",
    "SimHashMethod": "methods",
    "acceptance": "features",
    "candidate_pairs": "candidates",
    "canonical_tokens": "text",
    "choose_representatives": "clusters",
    "cluster_labels": "clusters",
    "containment": "resemblance",
    "content_hashes": "shingles",
    "dice": "resemblance",
    "estimate": "minhash",
    "estimate_pairs": "minhash",
    "expected_error": "minhash",
    "features": "features",
    "fit_idf_texts": "simhash",
    "hamming_pairs": "hamming",
    "jaccard": "resemblance",
    "pair_scores": "resemblance",
    "plan": "planner",
    "plan_tables": "hamming",
    "shingle_batch": "shingles",
    "shingle_sequence": "shingles",
    "simhash": "simhash",
    "sketch": "minhash",
    "sketch_texts": "minhash",
}


#: Public functions named like the module that defines them: the name means the function.
_SHADOWED = frozenset({"features", "simhash"})


def _load(name: str) -> Any:
    return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'neardup' has no attribute {name!r}")
    value = _load(name)
    if name not in _SHADOWED:
        globals()[name] = value
    return value


class _Package(types.ModuleType):
    """``neardup.features`` and ``neardup.simhash`` stay the functions even after their
    modules are imported (which binds the module to the package attribute of the same name)."""

    def __getattribute__(self, name: str) -> Any:
        if name in _SHADOWED:
            return _load(name)
        return super().__getattribute__(name)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = "0.1.0"

__all__ = [
    "EMPTY",
    "FORMAT_VERSION",
    "BenchmarkMatch",
    "CandidateResult",
    "Client",
    "DecontaminateParams",
    "Decontaminator",
    "DedupParams",
    "DedupStats",
    "Deduplicator",
    "FeatureParams",
    "HammingIndex",
    "IdfTable",
    "Index",
    "IndexCorrupt",
    "IndexMismatchError",
    "InputError",
    "Match",
    "Method",
    "MinHashMethod",
    "MinhashParams",
    "NeardupError",
    "OutputError",
    "ParamError",
    "ParamTypeError",
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
