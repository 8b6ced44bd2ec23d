"""Candidate keys -> kept set: each document compared only with the kept leaders of its buckets.

Keep-aware removal needs, for each document in keep priority, one *kept* document that
resembles it, never every pair. A bucket is a run of equal keys in one key column (a Broder
feature, an LSH band); the documents already kept in a bucket are its leaders. Visiting documents
in priority order, a document's candidates are the leaders sharing at least ``min_shared`` of
its buckets; it is removed as a duplicate of the best accepted candidate, else kept and made a
leader of its buckets. A removed document is never compared again, so a cluster of m near-copies
costs about m comparisons (one per copy against the kept original), not m²/2, and no pair list
is built for removal. The result is the keep-aware rule applied to every candidate pair whose
better document is kept — what ``removal.keep_aware`` gives on the complete verified candidate
pairs — with buckets of any size, none chained.

Verification is the verifier's own rule in kernel form (``verify.PairCheck``). Under hybrid
verification a sketch estimate in the binomial error band of the threshold is decided by exact
Jaccard of the two documents' shingle sets, computed from texts fetched in one batch per round
(a leader's set is kept for the rest of the removal, a member's dropped once scored), and the
pass is run again with the scores until no decision waits for one: every decision in the band
is exact in the final pass. In a component of thousands of documents where a round finds at
least ``HOLD_SHARE`` of them waiting for scores (distinct documents around one template, each
flip making others wait again), every member's set is gathered for the next pass, within half
the sets' byte budget, and dropped after it: that pass scores its band pairs itself, one more
pass instead of a round per cascade. A pass after the first decides again only the documents
whose decision may change: those with new exact scores, and those whose buckets gained or lost a
leader earlier in the pass; the others keep their decision (and, if kept, their leadership).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from . import _heap
from ._kernels import leaders as _k
from ._prefetch import ordered_map
from ._types import FloatArray, IntArray
from .candidates import sorted_column
from .errors import ParamError
from .exact import SetStore, score_exactly
from .verify import PairCheck


@dataclass(frozen=True)
class Buckets:
    """Each document's buckets of two or more members (CSR over ``docs``).

    docs: the documents in some bucket (indices into the caller's rows, ascending); the
    buckets of ``docs[i]`` are ``buckets[offsets[i]:offsets[i+1]]``, ascending (column order).
    """

    docs: IntArray
    offsets: IntArray
    buckets: IntArray
    n_buckets: int

    @property
    def records(self) -> int:
        """(document, bucket) memberships held."""
        return int(self.buckets.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.docs.nbytes + self.offsets.nbytes + self.buckets.nbytes)


def column_buckets(
    values: npt.NDArray[np.uint64], first_bucket: int
) -> tuple[IntArray, IntArray, int]:
    """One key column (uint64[n], EMPTY = no key) -> (document, bucket) of every member of a
    bucket of two or more, buckets numbered from ``first_bucket`` in key order."""
    packed, col, shift = sorted_column(values)
    docs, buckets, made = _k.column_records(packed, col, shift, int(first_bucket))
    return docs, buckets, int(made)


def bucket_lists(
    column: Callable[[int], npt.NDArray[np.uint64]], n: int, k: int, jobs: int = 1
) -> Buckets:
    """Every document's buckets, from key columns fetched one at a time (``column(j)``:
    uint64[n]); at most ``jobs`` columns are in memory at once. Singleton buckets are dropped,
    so a collection without near-copies holds almost nothing. Each column's records are kept
    in 32 bits (below 2**31 documents) until the counting sort by document places them."""
    narrow = np.int32 if n < 2**31 else np.int64

    def one(j: int) -> tuple[IntArray, IntArray, int]:
        docs, local, made = column_buckets(column(j), 0)
        return docs.astype(narrow), local.astype(narrow), made

    counts = np.zeros(n + 1, dtype=np.int64)
    parts: list[tuple[IntArray, IntArray, int]] = []
    total = 0
    for _, (docs, local, made) in ordered_map(one, range(k), jobs):
        _k.count_records(docs, counts)
        parts.append((docs, local, total))
        total += made
    offsets = np.cumsum(counts)
    by_doc = np.empty(int(offsets[-1]), dtype=np.int64)
    fill = offsets[:-1].copy()
    while parts:  # column order: each document's buckets ascend
        docs, local, first = parts.pop(0)
        _k.place_records(docs, local, first, fill, by_doc)
    del fill
    active = np.flatnonzero(counts[1:] > 0).astype(np.int64)
    compact = np.zeros(len(active) + 1, dtype=np.int64)
    np.cumsum(counts[1:][active], out=compact[1:])
    return Buckets(active, compact, by_doc, total)


@dataclass(frozen=True)
class LeaderResult:
    """The removal over the documents of ``Buckets`` (rows 0..m-1) and what it cost.

    kept: bool[m]; duplicate_of: int64[m] (row of the kept document, -1 if kept); score:
    float64[m] (NaN if kept). a, b, pair_score: every accepted pair (document, better kept
    document) compared. checks: comparisons made, every pass; exact: comparisons decided by
    exact Jaccard, every pass; sets:
    documents whose shingle sets were computed again; rounds: passes made.
    """

    kept: npt.NDArray[np.bool_]
    duplicate_of: IntArray
    score: FloatArray
    a: IntArray
    b: IntArray
    pair_score: FloatArray
    checks: int
    exact: int
    sets: int
    set_bytes: int
    rounds: int


#: Share of a component's documents waiting for exact scores in one round from which every
#: member's set is gathered for the next pass (see the module docstring).
HOLD_SHARE = 0.25
#: Documents a component needs for that: a small one's rounds are cheap (each pass runs only the
#: components that wait, deciding again only what the scores can change), and gathering the
#: sets of thousands of small clusters at once costs more memory than the rounds it saves.
HOLD_MIN_DOCS = 1000
#: Share of the sets' byte budget the sets gathered for a pass may fill, each component's by
#: its share of the rows (the rest is the leaders').
HOLD_BUDGET_SHARE = 0.5


class _ExactScores:
    """Exact Jaccard of the pairs (document, leader) one part's passes wanted, by code
    ``d * m + x``.

    Leaders' sets are held in the store while the removal runs (a leader meets its cluster's
    members again); a member's set is computed, scored against its leaders and dropped. The
    store is shared by the parts: ``lock`` lets one part at a time fetch and score.
    """

    def __init__(self, m: int, store: SetStore | None, lock: threading.Lock) -> None:
        self.m = m
        self.store = store
        self.lock = lock
        self.done = np.zeros(0, dtype=np.int64)  # the components ``hold`` has held
        self.codes = np.zeros(0, dtype=np.int64)
        self.scores = np.zeros(0, dtype=np.float64)
        self.held: tuple[npt.NDArray[np.uint64], IntArray, IntArray] | None = None

    def held_bytes(self) -> int:
        """Bytes of exact sets in memory, in the store and gathered by ``hold`` (about what
        computing them from their texts took)."""
        gathered = 0 if self.held is None else sum(int(a.nbytes) for a in self.held)
        return gathered + (0 if self.store is None else int(self.store.held))

    def hold(self, component: IntArray, waiting: IntArray) -> None:
        """Gather the sets of every row of each component of at least ``HOLD_MIN_DOCS`` rows
        where the ``waiting`` rows are at least ``HOLD_SHARE`` of them, for the next pass to
        score their pairs in the band itself (``held``, what the kernel reads; dropped with
        ``drop``). A component is held once, within its rows' share of ``HOLD_BUDGET_SHARE`` of
        the store's budget: what is held depends on the component alone, never on the parts or
        threads."""
        store = self._store()
        comps, count = np.unique(component[waiting], return_counts=True)
        size = np.bincount(component, minlength=int(component.max()) + 1)[comps]
        crowded = (size >= HOLD_MIN_DOCS) & (count >= HOLD_SHARE * size)
        busy = comps[crowded & ~np.isin(comps, self.done)]
        if len(busy) == 0:
            return
        self.done = np.union1d(self.done, busy)
        rows = np.flatnonzero(np.isin(component, busy))
        group = np.searchsorted(busy, component[rows])
        room = None
        if store.budget is not None:  # each component's rows' share of the budget
            share = HOLD_BUDGET_SHARE * store.budget * size[np.isin(comps, busy)] // self.m
            room = share.astype(np.int64)
        with self.lock:
            rows, sets = store.gather(rows, group, room)
        where = np.full(self.m, -1, dtype=np.int64)
        where[rows] = np.arange(len(rows), dtype=np.int64)
        self.held = (sets.fps, sets.offsets, where)

    def drop(self) -> None:
        """Drop the sets ``hold`` gathered (the pass they were for has run)."""
        self.held = None

    def _store(self) -> SetStore:
        if self.store is None:
            raise ParamError(
                "hybrid verification needs the texts of borderline documents: give a SetStore"
            )
        return self.store

    def add(self, d: IntArray, x: IntArray) -> None:
        """Score the wanted pairs (d[i], leader x[i]) not scored yet, but those whose two sets
        are held (``hold``): the next pass scores them if it meets them again."""
        if self.held is not None:
            row = self.held[2]
            free = (row[d] < 0) | (row[x] < 0)
            d, x = d[free], x[free]
        codes, first = np.unique(d * np.int64(self.m) + x, return_index=True)
        at = np.asarray(np.searchsorted(self.codes, codes), dtype=np.int64)
        fresh = np.ones(len(codes), dtype=np.bool_)
        inside = at < len(self.codes)
        fresh[inside] = self.codes[at[inside]] != codes[inside]
        codes, d, x, at = codes[fresh], d[first[fresh]], x[first[fresh]], at[fresh]
        if len(codes) == 0:
            return
        leaders = np.unique(x)
        store = self._store()
        with self.lock:
            scores = score_exactly(
                store, d, x, lambda rows: np.isin(rows, leaders) | (store.row[rows] >= 0)
            )
        self.codes = np.insert(self.codes, at, codes)  # both ascend: a merge, not a sort
        self.scores = np.insert(self.scores, at, scores)


@dataclass
class _Fates:
    """Each row's fate so far, shared by every part (the kernel updates a part's rows in place):
    kept, duplicate_of (-1 if kept), score (NaN if kept)."""

    kept: npt.NDArray[np.bool_]
    dup: IntArray
    score: FloatArray

    @classmethod
    def start(cls, m: int) -> _Fates:
        """Every row kept."""
        return cls(
            np.ones(m, dtype=np.bool_),
            np.full(m, -1, dtype=np.int64),
            np.full(m, np.nan, dtype=np.float64),
        )


@dataclass
class _Found:
    """What one part's passes found: the accepted pairs, and the passes and comparisons made."""

    pa: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pb: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ps: FloatArray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    rounds: int = 0
    checks: int = 0
    exact_checks: int = 0

    def merge(
        self,
        redone: npt.NDArray[np.bool_],
        a: IntArray,
        b: IntArray,
        s: FloatArray,
        stats: IntArray,
    ) -> None:
        """Count a pass, and take its pairs in place of those of the documents it decided."""
        self.rounds += 1
        self.checks += int(stats[_k.CHECKS])
        self.exact_checks += int(stats[_k.EXACT])
        settled = ~redone[self.pa]  # pairs of documents whose decision stands
        self.pa = np.concatenate([self.pa[settled], a])
        self.pb = np.concatenate([self.pb[settled], b])
        self.ps = np.concatenate([self.ps[settled], s])

    @staticmethod
    def result(
        parts: list[_Found], fates: _Fates, sets: SetStore | None, rank: IntArray
    ) -> LeaderResult:
        """The removal, with what it cost (``sets``: the exact sets computed and held; rounds:
        the most passes a part made); the pairs in the order one pass over every document lists
        them (by the deciding document's rank, each one's as found), whatever the passes and
        threads that found them."""
        pa, pb, ps = (np.concatenate([getattr(f, n) for f in parts]) for n in ("pa", "pb", "ps"))
        order = np.argsort(rank[pa], kind="stable")
        return LeaderResult(
            fates.kept,
            fates.dup,
            fates.score,
            pa[order],
            pb[order],
            ps[order],
            checks=sum(f.checks for f in parts),
            exact=sum(f.exact_checks for f in parts),
            sets=0 if sets is None else sets.computed,
            set_bytes=0 if sets is None else sets.held + sets.spilled,
            rounds=max(f.rounds for f in parts),
        )


#: Documents a removal must decide before it is cut into parts for several threads.
PARALLEL_PASS_DOCS = 50_000


def component_parts(
    component: IntArray, weight: IntArray, jobs: int
) -> list[npt.NDArray[np.bool_]]:
    """The rows cut into at most ``jobs`` masks of whole components, of about equal ``weight``
    each: components share no bucket, so each part is decided alone (in its own thread)."""
    m = len(component)
    if jobs <= 1 or m == 0 or m < PARALLEL_PASS_DOCS:
        return [np.ones(m, dtype=np.bool_)]
    load = np.bincount(component, weights=weight, minlength=int(component.max()) + 1)
    before = np.cumsum(load) - load  # the weight of the components numbered lower
    part = np.minimum((before * jobs) // max(float(load.sum()), 1.0), jobs - 1).astype(np.int64)
    of_doc = part[component]
    masks = [of_doc == p for p in range(jobs)]
    return [mask for mask in masks if mask.any()]


def leader_slots(buckets: Buckets, max_leaders: int) -> IntArray:
    """Where each bucket's leaders go in one array: bucket b's slab is ``slots[b]:slots[b+1]``,
    room for its members, at most ``max_leaders`` (int64[n_buckets + 1])."""
    members = np.bincount(buckets.buckets, minlength=buckets.n_buckets)
    slots = np.zeros(buckets.n_buckets + 1, dtype=np.int64)
    np.cumsum(np.minimum(members, max(int(max_leaders), 0)), out=slots[1:])
    return slots


@dataclass(frozen=True)
class _Removal:
    """What every part's passes share: the rows in keep order, their buckets, the rule."""

    order: IntArray
    rank: IntArray
    buckets: Buckets
    min_shared: int
    count_ok: npt.NDArray[np.bool_]
    count_score: FloatArray
    check: PairCheck
    keep_pairs: bool
    slots: IntArray
    component: IntArray
    fates: _Fates

    def decide(self, part: npt.NDArray[np.bool_], exact: _ExactScores) -> _Found:
        """The rows of ``part`` (whole components) decided: passes until none wants an exact
        score, the wanted ones scored between passes. A pass after the first runs only the
        components that wanted scores, and decides again only their rows the scores can change."""
        b, fates, found = self.buckets, self.fates, _Found()
        args = self.check.kernel_args
        run = fresh = part  # the first pass decides every row of the part
        while True:
            redone = np.zeros(len(part), dtype=np.bool_)
            a, x, s, wa, wx, stats = _k.leader_pass(
                self.order, self.rank, b.offsets, b.buckets, self.slots, self.min_shared,
                self.count_ok, args(self.count_score, exact.codes, exact.scores, exact.held),
                run, fresh, redone, fates.kept, fates.dup, fates.score, self.keep_pairs,
            )  # fmt: skip
            found.merge(redone, a, x, s, stats)
            freed = self.buckets.nbytes + exact.held_bytes()  # the sets counted before the drop
            exact.drop()
            # the pass's bucket lists, freed: a pass or an exact round does not stack
            _heap.trim(freed)
            if len(wa) == 0:
                return found
            exact.hold(self.component, np.unique(wa))
            exact.add(wa, wx)  # pairs with both sets held are left to the next pass
            _heap.trim(self.buckets.nbytes + exact.held_bytes())
            run = np.isin(self.component, np.unique(self.component[wa]))
            fresh = np.zeros(len(part), dtype=np.bool_)
            fresh[wa] = True  # their estimates in the band now have exact scores


def remove_by_leaders(
    buckets: Buckets,
    rank: IntArray,
    min_shared: int,
    count_ok: npt.NDArray[np.bool_],
    count_score: FloatArray,
    check: PairCheck,
    sets: SetStore | None = None,
    keep_pairs: bool = True,
    max_leaders: int = 2**62,
    jobs: int = 1,
) -> LeaderResult:
    """Keep-aware removal of the documents of ``buckets`` against their buckets' kept leaders.

    rank: int64[m], distinct keep priorities of the rows (smaller = kept first). A pair sharing
    c buckets is a candidate when c >= min_shared and ``count_ok[c]`` (the method's decision
    from the count; ``count_score[c]`` is its score, used when the verifier defers to the
    method). ``check``: the verifier's rule over the rows. sets: where exact shingle sets of
    rows are fetched and held (hybrid verification; see the module docstring). keep_pairs:
    also return the accepted pairs. max_leaders: the most leaders a bucket takes (its first
    kept documents), which bounds the comparisons per document in buckets of boilerplate. The
    result does not depend on how the rows' buckets were numbered, nor on ``jobs`` (threads:
    many documents are cut into parts of whole components, each decided, passes and exact
    rounds alike, in its own thread; the exact sets are fetched one part at a time).
    """
    m = len(buckets.docs)
    rank = np.ascontiguousarray(rank, dtype=np.int64)
    if rank.shape != (m,):
        raise ParamError(f"rank must have one entry per document ({m}), got shape {rank.shape}")
    # Components of the bucket graph are independent: each is decided alone, and after a pass
    # those that wanted no exact score are settled, and only the others run again.
    component = _k.bucket_components(buckets.offsets, buckets.buckets, buckets.n_buckets)
    removal = _Removal(
        np.argsort(rank, kind="stable").astype(np.int64), rank, buckets, int(min_shared),
        np.ascontiguousarray(count_ok, dtype=np.bool_), count_score, check, keep_pairs,
        leader_slots(buckets, max_leaders), component, _Fates.start(m),
    )  # fmt: skip
    weight = np.diff(buckets.offsets) + 1  # a document's work: its buckets, and itself
    parts = component_parts(component, weight, jobs)
    lock = threading.Lock()
    found = ordered_map(lambda part: removal.decide(part, _ExactScores(m, sets, lock)), parts, jobs)
    return _Found.result([f for _, f in found], removal.fates, sets, rank)
