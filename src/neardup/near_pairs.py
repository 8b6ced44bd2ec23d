"""The near-duplicate stage of ``finish``: stored blocks -> candidates -> verified pairs -> removal.

Two ways, chosen by ``find`` from what the method and parameters allow, with the same answer
where both apply:

- by candidate keys (``by_keys``): a keyed method's buckets, read one key column at a time from
  the block store; keep-aware removal against each bucket's kept leaders (``leaders.py``),
  no pair list built; with every pair asked for, also every pair at or above the threshold
  (``allpairs.py``), which components removal then uses;
- by listed pairs (``by_pairs``): every candidate pair listed, verified, then removal over the
  verified pairs (the method's own candidates; components; methods without candidate keys).

Each reads only the rows it needs from the store, and the store drops each kind of block once
read, so the peak holds what the stage needs, not the corpus.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
import numpy.typing as npt

from . import _heap
from . import removal as _removal
from ._types import IntArray
from .allpairs import every_pair
from .blocks import BlockStore, KeyColumns
from .candidates import CandidateResult, pairs_by_column
from .errors import ParamError
from .exact import FetchSets, SetStore
from .leaders import Buckets, bucket_lists, remove_by_leaders
from .methods import Candidates, KeyedCandidates, Method, Signatures, keyed_candidates
from .params import DedupParams
from .shingles import ShingleBatch
from .verify import Evidence, FetchTexts, PairCheck, Verifier, fetched_texts

#: (a, b, score) of document pairs.
Pairs = tuple[IntArray, IntArray, npt.NDArray[np.float64]]


@dataclass(frozen=True)
class Found:
    """A removal, the accepted near pairs between first copies (a < b; the verified ones, then
    those big buckets found), what it cost, and the bytes of exact sets written to disk."""

    removal: _removal.Removal
    a: IntArray
    b: IntArray
    score: npt.NDArray[np.float64]
    stats: dict[str, int]
    spilled_sets: int = 0


@dataclass(frozen=True)
class Search:
    """What the stage reads: the parameters, method and verifier, the stored blocks, which pairs
    to list (``every_pair``: all at or above the threshold), threads, the bytes of exact sets
    to hold in memory (None: all) and where the rest go, and how to fetch texts again."""

    params: DedupParams
    method: Method
    verifier: Verifier
    blocks: BlockStore
    every_pair: bool = False
    jobs: int = 1
    set_budget: int | None = None
    spill_dir: str | None = None
    fetch_texts: FetchTexts | None = None


@dataclass(frozen=True)
class Docs:
    """The documents to search: their count, the exact-duplicate groups' first copies with
    tokens (``reps``, sorted), each one's group and keep priority, and each one's text length
    in bytes (what an exact re-check fetches, so its chunks hold bytes, not a count)."""

    n: int
    reps: IntArray
    groups: IntArray
    priority: IntArray = field(repr=False)
    lengths: IntArray | None = field(default=None, repr=False)


def find(s: Search, docs: Docs) -> Found:
    """The removal and pairs of ``docs``, by candidate keys where the method has them and
    the removal or the pairs asked for allow it, else by listed pairs."""
    columns = None
    if isinstance(s.method, KeyedCandidates):  # one key column at a time, never the matrix
        columns = s.blocks.key_columns(s.method, docs.reps)
    if columns is not None and (s.params.removal == "keep-aware" or s.every_pair):
        return by_keys(s, docs, columns)
    return by_pairs(s, docs, columns)


def remove(
    p: DedupParams,
    n: int,
    a: IntArray,
    b: IntArray,
    score: npt.NDArray[np.float64],
    priority: IntArray,
    groups: IntArray,
    big_members: IntArray,
    big_offsets: IntArray,
    verify: _removal.Verify,
) -> Found:
    """Verified pairs -> the removal the parameters ask for: components, keep-aware, or
    keep-aware with big buckets checked against their kept leaders (``verify`` scores them).

    Components are independent: the result on a sub-graph holding whole components (with their
    exact-duplicate groups and big buckets) is the result of the whole graph restricted to it.
    """
    bucket_stats: dict[str, int] = {}
    if p.removal == "components":
        result = _removal.components(n, a, b, score, priority, groups=groups)
    elif len(big_offsets) > 1:  # big buckets: check members against kept leaders
        resolved = _removal.resolve_big_buckets(
            n,
            a,
            b,
            score,
            priority,
            big_members,
            big_offsets,
            verify,
            p.resolved_threshold,
            groups=groups,
        )
        result = resolved.removal
        a = np.concatenate([a, resolved.a])
        b = np.concatenate([b, resolved.b])
        score = np.concatenate([score, resolved.score])
        bs = resolved.stats
        bucket_stats = {
            "bucket_checks": bs.checks,
            "bucket_pairs_found": bs.found,
            "bucket_unresolved": bs.starved + bs.pending,
        }
    else:
        result = _removal.keep_aware(n, a, b, score, priority, groups=groups)
    return Found(result, a, b, score, bucket_stats)


def bucket_verifier(
    method: Method,
    verifier: Verifier,
    sigs: Signatures,
    sig_docs: IntArray,
    ev: Evidence,
    ev_docs: IntArray,
) -> _removal.Verify:
    """Scores of big-bucket checks (first members), decided like candidates; under hybrid by the
    sketch alone, so the rounds never re-read the input. ``sigs`` and ``ev`` are the rows of the
    sorted documents ``sig_docs`` and ``ev_docs``."""

    def verify_pairs(x: IntArray, y: IntArray) -> npt.NDArray[np.float64]:
        rx, ry = np.searchsorted(sig_docs, x), np.searchsorted(sig_docs, y)
        own = method.score(sigs.take(rx), sigs.take(ry))
        ex, ey = np.searchsorted(ev_docs, x), np.searchsorted(ev_docs, y)
        v = verifier.decide(ev, ex, ey, own, method.accept(own))
        return np.where(v.method_ok, v.score, -1.0)

    return verify_pairs


# -- by candidate keys ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _KeyedCheck:
    """How pairs of a bucket's documents (rows of ``active``) are decided: the method's score
    and acceptance by number of keys shared, the verifier's check, and their exact sets."""

    active: IntArray
    count_ok: npt.NDArray[np.bool_]
    count_score: npt.NDArray[np.float64]
    check: PairCheck
    sets: SetStore


def by_keys(s: Search, docs: Docs, columns: KeyColumns) -> Found:
    """Removal from the candidate keys' buckets: keep-aware against each bucket's kept leaders
    (linear in the documents of near-copy clusters, every bucket whole, no pair list built);
    when every pair is asked for, also every pair at or above the threshold, which components
    removal then uses."""
    method = cast(KeyedCandidates, s.method)
    column, k = columns
    buckets = bucket_lists(column, len(docs.reps), k, s.jobs)
    listed = _listed_pairs(s, method, columns, len(docs.reps)) if s.every_pair else None
    held = s.blocks.nbytes
    s.blocks.drop_signatures()
    _heap.trim(held)  # the signatures and the bucket lists' temporaries, before evidence is copied
    active = docs.reps[buckets.docs]
    ev = s.blocks.take_evidence(active)
    _heap.trim(held)
    count_score, count_ok = method.candidate_scores(np.arange(k + 1, dtype=np.int32))
    sizes = None if docs.lengths is None else docs.lengths[active]
    sets = SetStore(len(active), _fetch_sets(s, active), s.set_budget, s.spill_dir, sizes)
    keyed = _KeyedCheck(active, count_ok, count_score, s.verifier.pair_check(ev), sets)
    stats: dict[str, int] = {"bucket_records": buckets.records}
    pairs = None
    if listed is not None:
        pairs = _every_pair(keyed, _rows_of(listed, buckets.docs), stats)
        del listed
    if s.params.removal == "components":
        assert pairs is not None  # components from keys only when every pair is asked for
        removal = _removal.components(docs.n, *pairs, docs.priority, groups=docs.groups)
        sets.close()
        return Found(removal, *pairs, stats, sets.spilled)
    return _by_leaders(method, docs, buckets, keyed, stats, pairs, s.jobs)


def _listed_pairs(
    s: Search, method: KeyedCandidates, columns: KeyColumns, n_reps: int
) -> CandidateResult:
    """Every candidate pair of the keys' buckets; a big bucket's pairs are listed only for
    verifiers without exact sets (those join big buckets exactly instead)."""
    limit = method.max_bucket if s.verifier.joins_exactly else max(n_reps, 2)
    return pairs_by_column(
        columns[0], n_reps, columns[1], method.min_shared, max_bucket=limit,
        list_big_buckets=True, jobs=s.jobs,
    )  # fmt: skip


def _every_pair(keyed: _KeyedCheck, rows: CandidateResult, stats: dict[str, int]) -> Pairs:
    """Every listed pair at or above the threshold (documents of ``keyed.active``), with what
    listing and checking them cost added to ``stats``."""
    every = every_pair(
        rows, len(keyed.active), keyed.count_ok, keyed.count_score, keyed.check, keyed.sets
    )
    stats.update(
        candidate_pairs=every.listed,
        listed_pairs=every.listed,
        rechecked_pairs=every.exact,
        joined_docs=every.joined,
        join_verified=every.join_verified,
    )
    active = keyed.active
    return active[every.a], active[every.b], every.score


def _by_leaders(
    method: KeyedCandidates,
    docs: Docs,
    buckets: Buckets,
    keyed: _KeyedCheck,
    stats: dict[str, int],
    pairs: Pairs | None,
    jobs: int,
) -> Found:
    """Keep-aware removal against each bucket's kept leaders (in ``jobs`` threads); the pairs
    are ``pairs`` when given (every pair), else those that justify each removal."""
    nodes = _removal.group_nodes(docs.n, docs.priority, docs.groups)
    active, sets = keyed.active, keyed.sets
    res = remove_by_leaders(
        buckets, nodes.rank[active], method.min_shared, keyed.count_ok, keyed.count_score,
        keyed.check, sets if keyed.check.wants_sets else None, max_leaders=method.max_bucket,
        jobs=jobs,
    )  # fmt: skip
    sets.close()
    node_kept = np.ones(docs.n, dtype=np.bool_)
    node_dup = np.full(docs.n, -1, dtype=np.int64)
    node_score = np.full(docs.n, np.nan, dtype=np.float64)
    node_kept[active] = res.kept
    removed = res.duplicate_of >= 0
    node_dup[active[removed]] = active[res.duplicate_of[removed]]
    node_score[active] = res.score
    removal = _removal.expand(nodes, node_kept, node_dup, node_score)
    stats.update(
        leader_checks=res.checks,
        exact_checks=res.exact,
        exact_sets=res.sets,
        check_rounds=res.rounds,
    )
    stats.setdefault("candidate_pairs", res.checks)
    stats.setdefault("rechecked_pairs", res.exact)
    if pairs is None:  # the pairs that justify each removal
        x, y = active[res.a], active[res.b]
        pairs = (np.minimum(x, y), np.maximum(x, y), res.pair_score)
    return Found(removal, *pairs, stats, sets.spilled)


def _fetch_sets(s: Search, docs: IntArray) -> FetchSets:
    """The exact shingle sets of rows of ``docs``, from their texts fetched again."""

    def fetch_sets(rows: IntArray) -> ShingleBatch:
        if s.fetch_texts is None:
            raise ParamError(
                "verify='hybrid' needs the borderline documents' texts: give a way to "
                "fetch them (fit() keeps them; the CLI reads its input again)"
            )
        texts = fetched_texts(s.fetch_texts, docs[rows])
        return s.verifier.exact_sets(texts, s.jobs)

    return fetch_sets


def _rows_of(found: CandidateResult, docs: IntArray) -> CandidateResult:
    """``found`` with its document indices mapped to rows of ``docs`` (every one is there)."""
    return CandidateResult(
        np.searchsorted(docs, found.a),
        np.searchsorted(docs, found.b),
        found.count,
        found.stats,
        np.searchsorted(docs, found.big_members),
        found.big_offsets,
    )


# -- by listed pairs -----------------------------------------------------------------------------


def by_pairs(s: Search, docs: Docs, columns: KeyColumns | None) -> Found:
    """Every candidate pair listed, verified, then removal over the verified pairs (the
    method's own candidates; components; methods without candidate keys)."""
    found, sigs, in_buckets, bucket_docs = _candidates(s, docs.reps, columns)
    a, b = docs.reps[found.a], docs.reps[found.b]
    needed = np.unique(np.concatenate([a, b, in_buckets]))
    held = s.blocks.nbytes
    ev = s.blocks.take_evidence(needed)
    _heap.trim(held)  # the blocks' pages go back to the system, not to malloc's free lists
    la, lb = np.searchsorted(needed, a), np.searchsorted(needed, b)
    verdict = s.verifier.decide(ev, la, lb, found.score, found.accepted)
    verdict = s.verifier.recheck(a, b, verdict, s.fetch_texts, s.jobs)
    _heap.trim(held)
    ok = verdict.ok
    a, b, score = a[ok], b[ok], verdict.score[ok]

    # Big-bucket checks compare first members of groups in big buckets: their rows suffice.
    verify_pairs = bucket_verifier(s.method, s.verifier, sigs, bucket_docs, ev, needed)
    removed = remove(
        s.params, docs.n, a, b, score, docs.priority, docs.groups, in_buckets,
        found.big_offsets, verify_pairs,
    )  # fmt: skip
    stats = {
        "candidate_pairs": len(found),
        "rechecked_pairs": int(verdict.rechecked),
        "big_buckets": int(found.stats.get("big_buckets", 0)),
        "big_bucket_docs": int(found.stats.get("big_bucket_docs", 0)),
        **removed.stats,
    }
    return Found(removed.removal, removed.a, removed.b, removed.score, stats)


def _candidates(
    s: Search, reps: IntArray, columns: KeyColumns | None
) -> tuple[Candidates, Signatures, IntArray, IntArray]:
    """The candidate pairs among ``reps`` (rows of ``reps``), the signatures of the documents
    in big buckets, those documents' indices (as listed, and sorted unique). The store keeps
    no signatures after."""
    if columns is not None:  # one key column at a time, never the whole key matrix
        method = cast(KeyedCandidates, s.method)
        found = keyed_candidates(method, columns[0], len(reps), columns[1], s.jobs)
        in_buckets = reps[found.big_members]
        bucket_docs = np.unique(in_buckets)
        return found, s.blocks.take_signatures(bucket_docs), in_buckets, bucket_docs
    sigs = s.blocks.take_signatures(reps)
    found = s.method.candidates(sigs, jobs=s.jobs)
    in_buckets = reps[found.big_members]
    bucket_docs = np.unique(in_buckets)
    return found, sigs.take(np.searchsorted(reps, bucket_docs)), in_buckets, bucket_docs
