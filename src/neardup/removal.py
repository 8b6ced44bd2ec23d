"""Verified pairs (a, b, score) + keep priority -> kept set, duplicate_of, score and star labels.

Keep-aware removal (the default): visit documents in keep priority; keep a document unless an
already kept document is paired with it; a removed document records the kept neighbour with the
highest score (ties: better priority). Relative to the given pairs this guarantees
(a) every removed document has a kept near-duplicate and (b) no two kept documents are paired.
Connected components (``components``) chain instead: A~B, B~C removes C although nothing kept
resembles it; it stays as an option for users who want families of documents.

Exact-duplicate groups (``groups``): groups[i] is the index of the first document (input order)
of i's group of identical texts. Pairs are expected between first members only; a pair that
names another member is mapped onto its group's first member (identical texts have identical
scores), and pairs inside one group are dropped. A group acts as one node whose priority is its
best member: if kept, its best member is kept and the others are removed as its duplicates
(score 1.0); if removed, every member is removed as a duplicate of the kept document found.

Big buckets (``resolve_big_buckets``): candidate generation chains buckets larger than
``max_bucket`` instead of emitting all their pairs, so two kept members of one bucket may never
have been compared. Each kept member is compared, in rounds, with the better-priority kept members
("leaders") of its bucket, best first (1, 2, 4... new leaders per round, at most ``max_checks``
comparisons per member and bucket in all);
pairs verified at or above the threshold join the verified pairs and the keep-aware rule is
recomputed over all of them. Recomputing, rather than patching the state, is what keeps the
guarantees: a document whose kept target is removed by a new pair is decided again (another kept
neighbour, or kept itself and then checked in the next round). Rounds stop when no check is left;
the work is at most ``max_checks`` times the bucket slots, never quadratic in a bucket's size.
The stats count the checks made and the kept members whose budget ran out before every better
kept leader was compared ("starved"): (b) is not promised for those unchecked pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._kernels import removal as _k
from ._types import FloatArray, IntArray
from .clusters import _as_index_array, cluster_labels
from .errors import InputError, ParamError
from .priority import check_n
from .priority import priority_ranks as priority_ranks  # re-exported: one of removal's public names

#: Default bound on the comparisons each big-bucket member makes with its bucket's leaders.
DEFAULT_MAX_CHECKS = 16

#: Default bound on big-bucket rounds (each re-runs the keep-aware pass over all pairs).
DEFAULT_MAX_ROUNDS = 32


@dataclass(frozen=True)
class Removal:
    """Which documents are kept and, for each removed one, the kept document it duplicates.

    kept: bool[n]. duplicate_of: int64[n], -1 for kept documents. score: float64[n], the score of
    the pair (doc, duplicate_of), NaN for kept documents (and under components when the removed
    document has no direct pair with the kept one). labels: int64[n], the smallest document index
    of the document's star (keep-aware) or connected component (components).
    """

    kept: npt.NDArray[np.bool_]
    duplicate_of: IntArray
    score: FloatArray
    labels: IntArray

    @property
    def removed(self) -> int:
        """Number of documents removed."""
        return int(self.kept.shape[0] - self.kept.sum())


# -- shared input handling ----------------------------------------------------------------------
@dataclass(frozen=True)
class Nodes:
    """The pair graph collapsed onto exact-duplicate groups (node = a group's first member)."""

    n: int
    groups: IntArray  # group (first member) of every document
    use_groups: bool  # False when every document is its own group
    best: IntArray  # best-priority member of every group, indexed by the group's first member
    rank: IntArray  # node rank: a group's best member's priority (< n); n + i for other members
    a: IntArray  # the pairs as given (validated); the kernels map them onto groups
    b: IntArray
    score: FloatArray
    doc_rank: IntArray  # strict priority of every document

    def pairs(self) -> tuple[IntArray, IntArray, FloatArray]:
        """The pairs between nodes (groups), self pairs dropped."""
        ga, gb = (self.groups[self.a], self.groups[self.b]) if self.use_groups else (self.a, self.b)
        keep = ga != gb
        return ga[keep], gb[keep], self.score[keep]


def _strict_ranks(priority: npt.ArrayLike, n: int) -> IntArray:
    """Priority values (any integers, smaller = preferred) -> a permutation, ties by index."""
    pr = np.asarray(priority)
    if pr.size == 0 and n == 0:
        return np.zeros(0, dtype=np.int64)
    if pr.shape != (n,) or not np.issubdtype(pr.dtype, np.integer):
        raise InputError(
            f"priority must be an integer array with one value per document ({n}), "
            f"got {pr.dtype} shape {pr.shape}; build it with priority_ranks"
        )
    order = np.lexsort((np.arange(n), pr))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return rank


def _check_groups(groups: npt.ArrayLike | None, n: int) -> IntArray:
    if groups is None:
        return np.arange(n, dtype=np.int64)
    g = np.asarray(groups)
    if g.size == 0 and n == 0:
        return np.zeros(0, dtype=np.int64)
    if g.shape != (n,) or not np.issubdtype(g.dtype, np.integer):
        raise InputError(
            f"groups must be an integer array with one group per document ({n}), "
            f"got {g.dtype} shape {g.shape}"
        )
    g = np.ascontiguousarray(g.astype(np.int64, copy=False))
    idx = np.arange(n, dtype=np.int64)
    bad = np.flatnonzero((g < 0) | (g > idx))
    if len(bad) == 0:
        bad = np.flatnonzero(g[g] != g)
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"groups[{i}] = {int(g[i])} is not the index of the first document of {i}'s group; "
            "give every document the smallest index of its exact-duplicate group"
        )
    return g


def _nodes(
    n: int,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    score: npt.ArrayLike,
    priority: npt.ArrayLike,
    groups: npt.ArrayLike | None,
) -> Nodes:
    n = check_n(n)
    aa = _as_index_array("a", a, n)
    bb = _as_index_array("b", b, n)
    ss = np.asarray(score, dtype=np.float64).ravel()
    if not aa.shape == bb.shape == ss.shape:
        raise InputError(
            f"pair arrays differ in length: a has {aa.size}, b has {bb.size}, score has {ss.size}"
        )
    if np.isnan(ss).any():
        raise InputError("score contains NaN; drop unverified pairs before removal")
    doc_rank = _strict_ranks(priority, n)
    g = _check_groups(groups, n)
    if groups is None:
        return Nodes(n, g, False, g, doc_rank, aa, bb, ss, doc_rank)
    # Best member of each group: the first of its run when sorted by (group, rank).
    o = np.lexsort((doc_rank, g))
    first = np.r_[True, g[o][1:] != g[o][:-1]] if n else np.zeros(0, dtype=np.bool_)
    best = np.full(n, -1, dtype=np.int64)
    best[g[o[first]]] = o[first]
    node_rank = np.arange(n, n + n, dtype=np.int64)  # non-first members: no pairs, any rank
    heads = np.flatnonzero(g == np.arange(n))
    node_rank[heads] = doc_rank[best[heads]]
    return Nodes(n, g, True, best, node_rank, aa, bb, ss, doc_rank)


def group_nodes(n: int, priority: npt.ArrayLike, groups: npt.ArrayLike | None) -> Nodes:
    """The exact-duplicate groups as nodes with their keep priority (no pairs): what a removal
    that decides nodes itself (``neardup.leaders``) needs before ``expand``."""
    none = np.zeros(0, dtype=np.int64)
    return _nodes(n, none, none, np.zeros(0), priority, groups)


def _star_labels(kept: npt.NDArray[np.bool_], dup: IntArray) -> IntArray:
    """Smallest document index of each star (a kept document and its removed duplicates)."""
    n = kept.shape[0]
    idx = np.arange(n, dtype=np.int64)
    center = np.where(kept, idx, dup)
    low = np.full(n, n, dtype=np.int64)
    np.minimum.at(low, center, idx)
    return low[center]


def expand(
    nodes: Nodes, node_kept: npt.NDArray[np.bool_], node_dup: IntArray, node_score: FloatArray
) -> Removal:
    """Node decisions (indexed by a group's first member; ``node_dup`` names a node) ->
    per-document Removal (the best member of a kept group kept, the rest removed)."""
    n = nodes.n
    g = nodes.groups
    idx = np.arange(n, dtype=np.int64)
    group_kept = node_kept[g]
    kept = group_kept & (nodes.best[g] == idx)
    dup = np.where(group_kept, nodes.best[g], nodes.best[np.maximum(node_dup[g], 0)])
    score = np.where(group_kept, 1.0, node_score[g])
    dup[kept] = -1
    score[kept] = np.nan
    return Removal(kept, dup, score, _star_labels(kept, dup))


def _greedy_nodes(
    nodes: Nodes, a: IntArray, b: IntArray, s: FloatArray
) -> tuple[npt.NDArray[np.bool_], IntArray, FloatArray]:
    """The greedy keep rule on nodes; pairs may name any group member (mapped in the kernel)."""
    kept, dup, score = _k.greedy_keep(nodes.rank, a, b, s, nodes.groups, nodes.use_groups)
    return kept, dup, score


# -- the two policies -----------------------------------------------------------------------------
def keep_aware(
    n: int,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    score: npt.ArrayLike,
    priority: npt.ArrayLike,
    *,
    groups: npt.ArrayLike | None = None,
) -> Removal:
    """Keep-aware removal over verified pairs (see the module docstring for the rule).

    a, b, score: verified pairs, in any order and orientation, repeats allowed (a repeated pair
    counts with its highest score). priority: int64[n], smaller = kept first (``priority_ranks``);
    ties by document index. groups: optional exact-duplicate groups (first member's index).
    O(n + pairs) after sorting, in one Numba pass.
    """
    nodes = _nodes(n, a, b, score, priority, groups)
    return expand(nodes, *_greedy_nodes(nodes, nodes.a, nodes.b, nodes.score))


def components(
    n: int,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    score: npt.ArrayLike,
    priority: npt.ArrayLike,
    *,
    groups: npt.ArrayLike | None = None,
) -> Removal:
    """Connected components: each keeps its best-priority member and removes all the others.

    Chaining (A~B, B~C) removes documents that resemble nothing kept; ``score`` is the direct
    pair's score with the kept document (1.0 within an exact-duplicate group), NaN if none.
    """
    nodes = _nodes(n, a, b, score, priority, groups)
    g = nodes.groups
    idx = np.arange(nodes.n, dtype=np.int64)
    na, nb, ns = nodes.pairs()
    others = np.flatnonzero(g != idx)
    labels = cluster_labels(nodes.n, np.concatenate([na, others]), np.concatenate([nb, g[others]]))
    keeper = np.full(nodes.n, -1, dtype=np.int64)
    o = np.lexsort((nodes.doc_rank, labels))
    if nodes.n:
        first = np.r_[True, labels[o][1:] != labels[o][:-1]]
        keeper[labels[o[first]]] = o[first]
    target = keeper[labels]
    kept = target == idx
    # Direct pair scores: pairs touching the kept document's group, best score per other group.
    kg = g[target]
    direct = np.full(nodes.n, np.nan, dtype=np.float64)
    hit_a = na == kg[na]
    hit_b = nb == kg[nb]
    np.fmax.at(direct, nb[hit_a], ns[hit_a])
    np.fmax.at(direct, na[hit_b], ns[hit_b])
    score_out = np.where(g == kg, 1.0, direct[g])
    dup = np.where(kept, -1, target)
    score_out[kept] = np.nan
    return Removal(kept, dup, score_out, labels)


# -- big buckets ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class BigBucketStats:
    """What resolving big buckets did.

    buckets, slots: big buckets and their total size. rounds: keep-aware passes re-run.
    checks: pairs verified; found: those at or above the threshold (added to the pairs).
    starved: kept members whose max_checks budget ran out before every better kept leader of
    their bucket was compared with them (0 means every big bucket is fully resolved).
    pending: checks still due when max_rounds stopped the rounds (0 when they converged).
    """

    buckets: int
    slots: int
    rounds: int
    checks: int
    found: int
    starved: int
    pending: int


@dataclass(frozen=True)
class BucketResolution:
    """The removal after big buckets; the pairs the checks found (a < b, score >= threshold)."""

    removal: Removal
    a: IntArray
    b: IntArray
    score: FloatArray
    stats: BigBucketStats


Verify = Callable[[IntArray, IntArray], npt.ArrayLike]


def _check_budget(max_checks: int, max_rounds: int, threshold: float) -> None:
    """ParamError unless both bounds are integers >= 1 and the threshold is in [0, 1]."""
    for name, value in (("max_checks", max_checks), ("max_rounds", max_rounds)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool):
            raise ParamError(f"{name} must be an integer >= 1, got {value!r}")
        if value < 1:
            raise ParamError(f"{name} must be an integer >= 1, got {value!r}")
    if not 0.0 <= float(threshold) <= 1.0:
        raise ParamError(f"threshold must be in [0, 1], got {threshold!r}")


def _bucket_offsets(offsets: npt.ArrayLike, n_members: int) -> IntArray:
    """The big buckets' CSR offsets as int64, or InputError unless they run from 0 to
    ``n_members`` without decreasing."""
    off = np.asarray(offsets)
    if (
        off.ndim != 1
        or off.size < 1
        or not np.issubdtype(off.dtype, np.integer)
        or off[0] != 0
        or off[-1] != n_members
        or (np.diff(off) < 0).any()
    ):
        raise InputError(
            f"offsets must be a non-decreasing integer array from 0 to len(members) "
            f"({n_members}), one more entry than there are buckets"
        )
    return off.astype(np.int64)


def _bucket_nodes(nodes: Nodes, mem: IntArray, off: IntArray) -> IntArray:
    """Each bucket's members as nodes, in node priority order (bucket by bucket)."""
    node_mem = nodes.groups[mem]
    bucket_of = np.repeat(np.arange(off.size - 1, dtype=np.int64), np.diff(off))
    return np.ascontiguousarray(node_mem[np.lexsort((nodes.rank[node_mem], bucket_of))])


def _verify_round(
    ca: IntArray, cb: IntArray, n: int, verify: Verify
) -> tuple[IntArray, IntArray, IntArray, FloatArray]:
    """One round's checks, each unordered pair once: (codes lo*n+hi, lo, hi, scores)."""
    lo, hi = np.minimum(ca, cb), np.maximum(ca, cb)
    codes = np.unique(lo * np.int64(n) + hi)
    lo, hi = codes // n, codes % n
    s = np.asarray(verify(lo, hi), dtype=np.float64).ravel()
    if s.shape != lo.shape:
        raise InputError(f"verify returned {s.size} scores for {lo.size} pairs")
    return codes, lo, hi, s


@dataclass
class _Greedy:
    """The pairs so far (those given, then those found in rounds) and the keep-aware rule's
    outcome over them, on nodes."""

    nodes: Nodes
    a: IntArray
    b: IntArray
    score: FloatArray
    kept: npt.NDArray[np.bool_]
    dup: IntArray
    dup_score: FloatArray

    @classmethod
    def over(cls, nodes: Nodes) -> _Greedy:
        """The rule over the given pairs."""
        return cls(
            nodes,
            nodes.a,
            nodes.b,
            nodes.score,
            *_greedy_nodes(nodes, nodes.a, nodes.b, nodes.score),
        )

    def add(self, a: IntArray, b: IntArray, score: FloatArray) -> None:
        """Add verified pairs and recompute the rule over all of them."""
        self.a = np.concatenate([self.a, a])
        self.b = np.concatenate([self.b, b])
        self.score = np.concatenate([self.score, score])
        self.kept, self.dup, self.dup_score = _greedy_nodes(self.nodes, self.a, self.b, self.score)


def _rounds(
    nodes: Nodes,
    node_mem: IntArray,
    off: IntArray,
    verify: Verify,
    threshold: float,
    max_checks: int,
    max_rounds: int,
) -> tuple[_Greedy, BigBucketStats]:
    """Compare big-bucket members with their kept leaders in rounds until no check is left
    (or ``max_rounds``); the rule over every pair found, and what the rounds did."""
    n = nodes.n
    used = np.zeros(node_mem.size, dtype=np.int64)
    checked = np.zeros(0, dtype=np.int64)
    state = _Greedy.over(nodes)
    rounds = checks = found = 0
    starved = pending = 0
    while True:
        # Round r lets each member make 2**r new comparisons: a bucket of copies is settled by
        # one comparison per member, a bucket of distinct texts in about log2(max_checks) rounds.
        ca, cb, starved_now = _k.bucket_checks(
            node_mem, off, state.kept, used, checked, n, max_checks, 1 << min(rounds, 40)
        )
        starved = int(starved_now)
        if len(ca) == 0:
            break
        if rounds == max_rounds:
            pending = len(ca)
            break
        codes, lo, hi, s = _verify_round(ca, cb, n, verify)
        checked = np.union1d(checked, codes)
        ok = s >= threshold
        checks += len(codes)
        found += int(ok.sum())
        state.add(lo[ok], hi[ok], s[ok])
        rounds += 1
    stats = BigBucketStats(
        buckets=int(off.size - 1),
        slots=int(node_mem.size),
        rounds=rounds,
        checks=checks,
        found=found,
        starved=starved,
        pending=pending,
    )
    return state, stats


def resolve_big_buckets(
    n: int,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    score: npt.ArrayLike,
    priority: npt.ArrayLike,
    members: npt.ArrayLike,
    offsets: npt.ArrayLike,
    verify: Verify,
    threshold: float,
    *,
    groups: npt.ArrayLike | None = None,
    max_checks: int = DEFAULT_MAX_CHECKS,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> BucketResolution:
    """Keep-aware removal that also compares big-bucket members with their bucket's leaders.

    a, b, score, priority, groups: as for ``keep_aware``. members, offsets: the big buckets as
    CSR (bucket c is ``members[offsets[c]:offsets[c+1]]``, document indices, e.g. from
    ``candidate_pairs(..., list_big_buckets=True)`` mapped to global indices). verify(x, y):
    scores of the pairs (x[i], y[i]) (both first members of their groups), float64[len(x)],
    called once per round with every check of that round; pairs scoring >= threshold are added.
    See the module docstring for the rounds and what the stats mean.
    """
    _check_budget(max_checks, max_rounds, threshold)
    nodes = _nodes(n, a, b, score, priority, groups)
    n = nodes.n
    mem = _as_index_array("members", members, n)
    off = _bucket_offsets(offsets, mem.size)
    node_mem = _bucket_nodes(nodes, mem, off)
    state, stats = _rounds(nodes, node_mem, off, verify, threshold, int(max_checks), max_rounds)
    removal = expand(nodes, state.kept, state.dup, state.dup_score)
    given = len(nodes.a)
    return BucketResolution(removal, state.a[given:], state.b[given:], state.score[given:], stats)
