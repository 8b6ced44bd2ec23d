"""MinHash method: texts -> MinHash sketch -> Broder features -> pairs sharing >= r features.

Signatures are the k features (uint64[n, k]); with super features, one megashingle per
r-subset of them (C(k, r) keys, any one shared is enough). The method accepts every candidate
(score 1.0): the features already decided; verification checks the resemblance itself.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..features import EMPTY, feature_combinations
from ..features import features as band_features
from ..params import FeatureParams, MinhashParams, SketchParams
from ..textbatch import TextBatch
from .base import Candidates, FloatArray, Signatures, keyed_candidates


class MinHashMethod:
    """Broder features over a MinHash sketch (LSH banding), looked up by sorting."""

    name = "minhash"

    def __init__(
        self,
        params: MinhashParams,
        feature_params: FeatureParams,
        seed: int,
        summary: str = "",
    ) -> None:
        """summary: how the features were chosen (``planner.summary_for``), ends ``describe``."""
        self.params = params
        self.features = feature_params
        self.summary = summary
        self.sketch_params = SketchParams(kind=params.sketch, t=feature_params.t, seed=seed)
        self.min_shared = 1 if params.super_features else feature_params.r

    def signatures(self, batch: TextBatch) -> Signatures:
        keys = band_features(batch.sketch(self.sketch_params), self.features)
        if self.params.super_features:  # share >= r features <=> share one r-subset key
            keys = feature_combinations(keys, self.features.r)
        return Signatures(keys)

    @property
    def max_bucket(self) -> int:
        """Buckets with more documents are chained (big buckets)."""
        return self.params.max_bucket

    def candidate_keys(self, sigs: Signatures) -> npt.NDArray[np.uint64]:
        """The keys whose shared buckets make candidates: the features (or megashingles)."""
        return np.asarray(sigs.data, dtype=np.uint64)

    def candidate_scores(
        self, count: npt.NDArray[np.int32]
    ) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
        """Every candidate scores 1.0 and is accepted: the features already decided."""
        n = len(count)
        return np.ones(n, dtype=np.float64), np.ones(n, dtype=np.bool_)

    def candidates(self, sigs: Signatures, jobs: int = 1) -> Candidates:
        keys = self.candidate_keys(sigs)
        n, k = keys.shape
        return keyed_candidates(self, lambda j: keys[:, j], n, k, jobs)

    def lookup_keys(self, sigs: Signatures) -> npt.NDArray[np.uint64]:
        return np.asarray(sigs.data, dtype=np.uint64)

    def score(self, x: Signatures, y: Signatures) -> FloatArray:
        """Share of features in common (the features' own view of resemblance)."""
        same = (x.data == y.data) & (x.data != EMPTY)
        return same.mean(axis=1) if same.shape[1] else np.ones(len(x), dtype=np.float64)

    def accept(self, score: FloatArray) -> npt.NDArray[np.bool_]:
        return np.ones(score.shape[0], dtype=np.bool_)

    def describe(self) -> str:
        f = self.features
        how = "megashingles" if self.params.super_features else "shared features"
        line = f"MinHash features k={f.k}, s={f.s}, r={f.r} (t={f.t}, {self.params.sketch}; {how})"
        return f"{line}; {self.summary}" if self.summary else line
