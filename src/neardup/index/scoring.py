"""How an index scores a query batch's candidate pairs: as the engine does, method then
verifier (re-checking on texts where it must), kept at or above the query's floor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._types import FloatArray
from ..errors import NeardupError
from ..methods import Method, Signatures
from ..verify import Evidence, Verifier, concat_evidence
from .codec import decode_evidence, decode_signatures
from .store import IntArray, StoredDocs


def near_pairs(
    method: Method,
    verifier: Verifier,
    like: tuple[Signatures, Evidence],
    q: IntArray,
    s: IntArray,
    stored: StoredDocs,
    sigs: Signatures,
    ev: Evidence,
    texts: Sequence[str | None] | None,
    floor: float,
) -> tuple[IntArray, IntArray, FloatArray, dict[str, FloatArray]]:
    """Score candidate (query row, stored position) pairs as the engine does: the accepted
    ones with their scores (and the method's further scores). ``like``: an empty signature
    and evidence block of the index's kind, which the stored blobs decode as."""
    nq = len(sigs)
    stored_sigs = decode_signatures(stored.sigs, like[0])
    x, y = sigs.take(q), stored_sigs.take(s)
    method_score = method.score(x, y)
    method_ok = method.accept(method_score)
    both = concat_evidence([ev, decode_evidence(stored.evidence, like[1])])
    b = s + nq
    verdict = verifier.decide(both, q, b, method_score, method_ok)

    def fetch(rows: IntArray) -> list[str]:
        out: list[str] = []
        for r in rows.tolist():
            t = texts[r] if r < nq and texts is not None else None
            if r >= nq:
                t = stored.texts[r - nq]
            if t is None:
                raise NeardupError(
                    "hybrid verification needs stored texts, and this index keeps none; "
                    "rebuild it with store_text=True (--store-text)"
                )
            out.append(t)
        return out

    verdict = verifier.recheck(q, b, verdict, fetch)
    ok = np.flatnonzero(verdict.ok & (verdict.score >= floor - 1e-12))
    detail: Any = getattr(method, "detail_scores", None)
    extra = detail(x, y) if detail is not None else {}
    scores = np.asarray(verdict.score, dtype=np.float64)[ok]
    return (
        q[ok],
        s[ok],
        scores,
        {k: np.asarray(v, dtype=np.float64)[ok] for k, v in extra.items()},
    )
