"""SimHash method: texts -> 64-bit Charikar fingerprints -> pairs within k bits (permuted tables).

Signatures are the fingerprints (uint64[n]). Candidates among a collection come from
``hamming.hamming_pairs``; lookup keys for an index are the permuted tables' keys (the bits of
each table's kept blocks, hashed with the table number), so sharing one key is the pigeonhole
condition and the popcount check in ``accept`` finishes the search. Score: 1 - distance / 64.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..hamming import HammingPlan, hamming_pairs, plan_tables, table_keys
from ..params import SimhashMethodParams, SimhashParams
from ..simhash import IdfTable, simhash_from_sequence
from ..textbatch import TextBatch
from .base import Candidates, FloatArray, Signatures

#: Collection size the lookup-key tables are planned for (an index's tables are fixed at creation).
INDEX_PLAN_DOCS = 1_000_000


def _popcount(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    return np.bitwise_count(x).astype(np.int64)


class SimHashMethod:
    """64-bit SimHash fingerprints; pairs within ``max_distance`` bits."""

    name = "simhash"
    min_shared = 1

    def __init__(
        self, params: SimhashMethodParams, fingerprint: SimhashParams, idf: IdfTable | None = None
    ) -> None:
        self.params = params
        self.fingerprint = fingerprint
        self.idf = idf
        self.plan_: HammingPlan | None = None
        self._index_plan: HammingPlan | None = None

    def signatures(self, batch: TextBatch) -> Signatures:
        fps, offsets = batch.sequence(self.fingerprint.shingle_params())
        return Signatures(simhash_from_sequence(fps, offsets, self.fingerprint, self.idf).fps)

    def candidates(self, sigs: Signatures, jobs: int = 1) -> Candidates:
        k = self.params.max_distance
        self.plan_ = plan_tables(k, max(len(sigs), 2))
        a, b, dist = hamming_pairs(sigs.data, k, self.plan_)
        return Candidates(
            a=a,
            b=b,
            score=1.0 - dist.astype(np.float64) / 64.0,
            accepted=np.ones(len(a), dtype=np.bool_),
        )

    def lookup_keys(self, sigs: Signatures) -> npt.NDArray[np.uint64]:
        if self._index_plan is None:  # planned once: the index's tables never change
            self._index_plan = plan_tables(self.params.max_distance, INDEX_PLAN_DOCS, mode="query")
        return table_keys(sigs.data, self._index_plan)

    def score(self, x: Signatures, y: Signatures) -> FloatArray:
        return 1.0 - _popcount(x.data ^ y.data).astype(np.float64) / 64.0

    def accept(self, score: FloatArray) -> npt.NDArray[np.bool_]:
        return np.asarray(score >= 1.0 - self.params.max_distance / 64.0 - 1e-12)

    def describe(self) -> str:
        head = f"SimHash {self.fingerprint.features} features, k={self.params.max_distance}"
        if self.plan_ is not None:
            return f"{head}; {self.plan_.describe().splitlines()[0]}"
        return head
