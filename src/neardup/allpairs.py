"""Candidate pairs and big buckets -> every pair at or above the threshold, complete and exact.

Keep-aware removal needs one kept document per removed one; "every pair at or above t" needs
more. The pairs of buckets up to ``max_bucket`` members are listed (``candidates.
pairs_by_column``) and verified by the verifier's own rule (``leaders.check_pair``: the sketch,
exact Jaccard in its error band). Inside bigger buckets, where listing every pair would cost the
square of the bucket, the members' exact shingle sets are joined (``setjoin``: prefix, size
and positional filters), whose work follows the pairs it finds. A pair found both ways keeps its
exact score. Verifiers without exact sets (``sketch``, ``none``) list big buckets whole instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._kernels import leaders as _k
from ._types import FloatArray, IntArray
from .candidates import CandidateResult
from .exact import SetStore, score_exactly
from .setjoin import similar_pairs
from .shingles import ShingleBatch
from .verify import PairCheck

#: The exact shingle sets of the given rows (ascending), in that order.
SetsOf = Callable[[IntArray], ShingleBatch]


@dataclass(frozen=True)
class AllPairs:
    """Every accepted pair (a < b, sorted, rows of the check) and what finding them cost."""

    a: IntArray
    b: IntArray
    score: FloatArray
    listed: int  # pairs listed from buckets and checked
    exact: int  # of them, decided by exact Jaccard
    joined: int  # documents of big buckets joined exactly
    join_verified: int  # candidate pairs the join verified


def store_sets(store: SetStore) -> SetsOf:
    """The sets of rows held in (or added to) ``store``."""

    def sets_of(rows: IntArray) -> ShingleBatch:
        store.add(rows)
        return store.sets().take(store.row[rows])

    return sets_of


def every_pair(
    found: CandidateResult,
    m: int,
    count_ok: npt.NDArray[np.bool_],
    count_score: FloatArray,
    check: PairCheck,
    store: SetStore | None,
) -> AllPairs:
    """Every pair at or above the threshold among m rows, from ``found`` (pairs of buckets up to
    the size limit, with their shared-key counts, and the bigger buckets as CSR; rows of
    ``check``). ``store`` fetches exact sets (hybrid); exact verification reads its own."""
    ok = count_ok[found.count]
    a, b, count = found.a[ok], found.b[ok], found.count[ok]
    empty_codes = np.zeros(0, dtype=np.int64)
    score, how = _k.score_pairs(
        a, b, count, m, check.kernel_args(count_score, empty_codes, np.zeros(0))
    )
    wanted = how == _k.WANTS_EXACT
    if wanted.any():
        if store is None:
            raise ValueError("exact scores are wanted but no SetStore was given")
        score[wanted] = score_exactly(
            store, a[wanted], b[wanted], lambda rows: np.ones(len(rows), dtype=np.bool_)
        )
    keep = score >= check.threshold if check.kind != _k.BY_COUNT else np.ones(len(a), bool)
    a, b, score = a[keep], b[keep], score[keep]
    exact_decided = int(wanted.sum() + (how == _k.BY_EXACT).sum())
    joined = verified = 0
    members = np.unique(found.big_members)
    if len(members):
        sets_of = _sets_source(check, store)
        join = similar_pairs(sets_of(members), check.threshold)
        joined, verified = len(members), join.verified
        a = np.concatenate([members[join.a], a])  # the join's exact scores come first
        b = np.concatenate([members[join.b], b])
        score = np.concatenate([join.score, score])
    code = a * np.int64(m) + b
    _, first = np.unique(code, return_index=True)  # the first of repeats: exact when joined
    a, b, score = a[first], b[first], score[first]
    return AllPairs(a, b, score, len(found.a), exact_decided, joined, verified)


def _sets_source(check: PairCheck, store: SetStore | None) -> SetsOf:
    """Where exact sets come from: the verifier's own (exact) or the store (hybrid)."""
    if check.kind == _k.EXACT_SETS:
        held = ShingleBatch(check.set_fps, check.set_off)
        return lambda rows: held.take(rows)
    if store is None:
        raise ValueError("joining big buckets needs exact sets: give a SetStore")
    return store_sets(store)


def joins_big_buckets(check: PairCheck) -> bool:
    """Whether this verifier can join big buckets exactly (else they are listed whole)."""
    return check.kind == _k.EXACT_SETS or check.wants_sets
