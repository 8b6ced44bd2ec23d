"""Signed partitions on Dask workers -> exact groups, candidates, verified pairs, removal, on workers.

The engine's ``finish`` cut at its seams so each piece runs where its data lives; every piece
calls the engine's own functions (``exact``-group rule, ``candidates.column_buckets`` and
``shared_pairs``, the verifier's ``decide``, ``engine.remove`` with ``engine.bucket_verifier``).
Document identity is the global position (``start`` of the partition + offset). The stages, each
an exchange between partitions (``neardup.dask_shuffle``):

1. exact groups: (content hash, doc) records shuffled on the hash; the first doc of each hash is
   the group; (duplicate, first) records go back to the duplicates' partitions.
2. candidates: (column, key, doc) records of group representatives shuffled on (column, key);
   each key partition emits its buckets' pairs column by column (big buckets chained and
   listed, as one machine does); pair records shuffled on the first doc; pairs listed at least
   ``min_shared`` times are the candidates.
3. verification: each pair partition asks the owning partitions for the evidence rows of its
   documents (a request and an answer exchange) and decides its pairs; pairs the verifier
   re-checks from texts (hybrid's borderline ones) go to the client, few and small.
4. components: (exact groups, accepted pairs, big-bucket memberships) as edges; labels by
   large-star / small-star rounds.
5. removal: documents of each component (with their group, priority, big-bucket slots and,
   for bucket members, signature and evidence rows) and its pairs meet in one component
   partition, which runs ``engine.remove`` on them; per-document results go back to their
   partitions.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from . import removal as _removal
from ._kernels import candidates as _kc
from ._kernels.hashing import EMPTY
from .candidates import column_buckets, distinct_buckets, shared_pairs
from .dask_shuffle import (
    Edges,
    Exchanges,
    LargeStar,
    Split,
    nbytes_of,
    route,
    split_by,
    star_components,
)
from .engine import bucket_verifier, remove
from .methods import KeyedCandidates, Signatures, make_method
from .methods.base import column_keys
from .params import DedupParams
from .simhash import IdfTable
from .verify import Evidence, FetchTexts, Verdict, borderline, concat_evidence, make_verifier

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Big-bucket ids are graph nodes past every document: N + key partition * VID_STRIDE + bucket.
VID_STRIDE = 1 << 31


class SignedBlock(Protocol):
    """What a partition's block holds (``neardup.dask.Block``)."""

    canonical: npt.NDArray[np.uint64]
    lengths: IntArray
    signatures: Signatures
    evidence: Evidence


def _e() -> IntArray:
    return np.zeros(0, dtype=np.int64)


def _cat(parts: Sequence[np.ndarray], dtype: Any = np.int64) -> np.ndarray:
    return np.concatenate([np.zeros(0, dtype=dtype), *parts]).astype(dtype, copy=False)


def _owner(starts: IntArray, docs: IntArray) -> IntArray:
    """Partition holding each global position."""
    return np.searchsorted(starts, docs, side="right").astype(np.int64) - 1


# -- per-partition state ------------------------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """A partition's block, where it starts, its exact groups, and the slots of its documents in
    big buckets (filled stage by stage; stays on its worker)."""

    block: Any
    start: int
    priority: IntArray | None  # keep="field": global ranks of its documents
    groups: IntArray  # each document's exact-duplicate group (its first document's position)
    slot_vid: IntArray = field(default_factory=_e)
    slot_doc: IntArray = field(default_factory=_e)

    @property
    def n(self) -> int:
        return int(self.block.canonical.shape[0])

    @property
    def docs(self) -> IntArray:
        return np.arange(self.start, self.start + self.n, dtype=np.int64)


def make_part(block: Any, start: int, priority: IntArray | None) -> Part:
    n = int(block.canonical.shape[0])
    return Part(block, start, priority, np.arange(start, start + n, dtype=np.int64))


# -- 1. exact groups ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Groups:
    """Exact-duplicate records of one hash partition: each duplicate and its group's first doc."""

    first: IntArray
    dup: IntArray


def hashes_split(part: Part, parts: int) -> Split:
    ok = part.block.canonical != EMPTY
    h = part.block.canonical[ok]
    return split_by(route(h, parts), parts, h, part.docs[ok])


def exact_groups(*pieces: tuple[npt.NDArray[np.uint64], IntArray]) -> Groups:
    """The engine's rule: a group is the first document (smallest position) with its hash."""
    h = _cat([p[0] for p in pieces], np.uint64)
    d = _cat([p[1] for p in pieces])
    order = np.lexsort((d, h))
    h, d = h[order], d[order]
    if len(h) == 0:
        return Groups(_e(), _e())
    run = np.cumsum(np.r_[True, h[1:] != h[:-1]]) - 1
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    first = d[starts][run]
    dup = first != d
    return Groups(first[dup], d[dup])


def groups_split(g: Groups, parts: int, starts: IntArray) -> Split:
    return split_by(_owner(starts, g.dup), parts, g.dup, g.first)


def with_groups(part: Part, *pieces: tuple[IntArray, IntArray]) -> Part:
    groups = part.docs
    for dup, first in pieces:
        groups[dup - part.start] = first
    return replace(part, groups=groups)


def group_edges(g: Groups) -> Edges:
    return Edges(g.dup, g.first)


def group_pairs(g: Groups) -> tuple[IntArray, IntArray, FloatArray]:
    return g.first, g.dup, np.ones(len(g.dup))


# -- 2. candidates --------------------------------------------------------------------------------
def _reps(part: Part) -> BoolArray:
    return np.asarray((part.groups == part.docs) & (part.block.canonical != EMPTY))


def keys_split(part: Part, parts: int, params: DedupParams, idf: IdfTable | None) -> Split:
    """(column, key, doc) of every candidate key of the partition's group representatives, in
    12 bytes a key: a piece lists its keys column by column (counts per column), each with the
    document's offset in the partition (uint32) and the partition's start once."""
    method = make_method(params, idf)
    if not isinstance(method, KeyedCandidates):  # pragma: no cover - checked by the caller
        raise TypeError(f"{type(method).__name__} has no candidate keys")
    reps = np.flatnonzero(_reps(part))
    keys = np.asarray(method.candidate_keys(part.block.signatures.take(reps)), dtype=np.uint64)
    if keys.ndim == 1:
        keys = keys[:, None]
    width = keys.shape[1]
    row, col = np.nonzero(keys != EMPTY)
    key = keys[row, col]
    dest = route(column_keys(col.astype(np.int64), key), parts)
    order = np.lexsort((col, dest))
    cuts = np.searchsorted(dest[order], np.arange(parts + 1))
    key, col, offset = key[order], col[order], reps[row[order]].astype(np.uint32)
    start = np.array([part.start], dtype=np.int64)
    pieces = [
        (
            np.bincount(col[lo:hi], minlength=width).astype(np.int64),
            key[lo:hi],
            offset[lo:hi],
            start,
        )
        for lo, hi in itertools.pairwise(cuts.tolist())
    ]
    return Split(pieces, sum(nbytes_of(p) for p in pieces))


@dataclass(frozen=True)
class KeyPart:
    """One key partition's bucket pairs (a < b, one record per shared key) and big buckets."""

    a: IntArray
    b: IntArray
    big_members: IntArray
    big_vids: IntArray  # the bucket (graph node id) of each member slot
    big_buckets: int


def key_buckets(
    params: DedupParams, idf: IdfTable | None, index: int, n: int, *pieces: tuple[Any, ...]
) -> KeyPart:
    """Each column's buckets, as ``candidate_pairs`` forms them (``column_buckets``)."""
    method = make_method(params, idf)
    max_bucket = int(getattr(method, "max_bucket", 2**62))
    col = _cat([np.repeat(np.arange(len(p[0]), dtype=np.int32), p[0]) for p in pieces], np.int32)
    key = _cat([p[1] for p in pieces], np.uint64)
    doc = _cat([p[3][0] + p[2].astype(np.int64) for p in pieces])
    order = np.lexsort((doc, col))
    col, key, doc = col[order], key[order], doc[order]
    stats = np.zeros(_kc.N_STATS, dtype=np.int64)
    out_a, out_b, members, sizes = [], [], [], []
    bounds = np.flatnonzero(np.r_[True, col[1:] != col[:-1], True]) if len(col) else _e()
    for lo, hi in itertools.pairwise(bounds.tolist()):
        docs = doc[lo:hi]
        in_big = np.zeros(hi - lo, dtype=np.bool_)
        pa, pb, bm, bs = column_buckets(key[lo:hi], max_bucket, None, in_big, stats, True)
        out_a.append(docs[pa])
        out_b.append(docs[pb])
        members.append(docs[bm])
        sizes.append(bs)
    size = _cat(sizes)
    vids = n + index * VID_STRIDE + np.arange(len(size), dtype=np.int64)
    return KeyPart(
        _cat(out_a),
        _cat(out_b),
        _cat(members),
        np.repeat(vids, size),
        int(stats[_kc.BIG_BUCKETS]),
    )


def raw_pairs_split(kp: KeyPart, parts: int) -> Split:
    return split_by(route(kp.a, parts), parts, kp.a, kp.b)


def slots_split(kp: KeyPart, parts: int, starts: IntArray) -> Split:
    return split_by(_owner(starts, kp.big_members), parts, kp.big_vids, kp.big_members)


def bucket_edges(kp: KeyPart) -> Edges:
    return Edges(kp.big_members, kp.big_vids)


def with_slots(part: Part, *pieces: tuple[IntArray, IntArray]) -> Part:
    vid = _cat([p[0] for p in pieces])
    doc = _cat([p[1] for p in pieces])
    return replace(part, slot_vid=vid, slot_doc=doc)


@dataclass(frozen=True)
class PairPart:
    """Candidate pairs of one pair partition (a < b, sorted), with the keys each shares."""

    a: IntArray
    b: IntArray
    count: npt.NDArray[np.int32]
    needed: IntArray  # every document of its pairs, sorted


def candidate_pairs(min_shared: int, n: int, *pieces: tuple[IntArray, IntArray]) -> PairPart:
    a, b, count = shared_pairs(
        _cat([p[0] for p in pieces]), _cat([p[1] for p in pieces]), n, min_shared
    )
    return PairPart(a, b, count, np.unique(np.concatenate([a, b])))


# -- 3. verification --------------------------------------------------------------------------------
def requests_split(pp: PairPart, parts: int, starts: IntArray) -> Split:
    return split_by(_owner(starts, pp.needed), parts, pp.needed)


def answer(part: Part, *requests: tuple[IntArray]) -> Split:
    """Evidence rows of the documents each pair partition asked for (one piece per asker)."""
    pieces = [part.block.evidence.take(r[0] - part.start) for r in requests]
    return Split(pieces, sum(int(p.nbytes) for p in pieces))


@dataclass(frozen=True)
class Verified:
    """A pair partition's decided pairs, and those left for the texts (borderline)."""

    a: IntArray
    b: IntArray
    score: FloatArray
    candidates: int
    near_a: IntArray
    near_b: IntArray
    near_score: FloatArray
    near_ok: BoolArray
    near_method_ok: BoolArray


def verify(params: DedupParams, idf: IdfTable | None, pp: PairPart, *answers: Evidence) -> Verified:
    """The verifier decides the candidates from the evidence joined back to them."""
    method = make_method(params, idf)
    verifier = make_verifier(params)
    ev = concat_evidence(list(answers))
    la, lb = np.searchsorted(pp.needed, pp.a), np.searchsorted(pp.needed, pp.b)
    score, accepted = method.candidate_scores(pp.count)  # type: ignore[attr-defined]
    v = verifier.decide(ev, la, lb, score, accepted)
    near = borderline(verifier, v)
    ok = v.ok & ~near
    return Verified(
        pp.a[ok],
        pp.b[ok],
        v.score[ok],
        len(pp.a),
        pp.a[near],
        pp.b[near],
        v.score[near],
        v.ok[near],
        v.method_ok[near],
    )


def borderline_of(v: Verified) -> Verified:
    """Only the borderline pairs (what the client re-checks)."""
    return replace(v, a=_e(), b=_e(), score=np.zeros(0))


@dataclass(frozen=True)
class Accepted:
    """A pair partition's accepted pairs (a < b) with their scores."""

    a: IntArray
    b: IntArray
    score: FloatArray


def accepted(v: Verified, a: IntArray, b: IntArray, score: FloatArray) -> Accepted:
    """Decided pairs plus the re-checked ones (given by the client) that passed."""
    return Accepted(np.r_[v.a, a], np.r_[v.b, b], np.r_[v.score, score])


def accepted_edges(acc: Accepted) -> Edges:
    return Edges(acc.a, acc.b)


def accepted_pairs(acc: Accepted) -> tuple[IntArray, IntArray, FloatArray]:
    return acc.a, acc.b, acc.score


# -- 5. removal per component ------------------------------------------------------------------------
def labels_split(ls: LargeStar, parts: int, starts: IntArray, n: int) -> Split:
    docs = ls.nodes < n
    return split_by(_owner(starts, ls.nodes[docs]), parts, ls.nodes[docs], ls.mins[docs])


def pairs_to_components(acc: Accepted, ls: LargeStar, parts: int) -> Split:
    """Accepted pairs to their component's partition (``ls`` holds the labels of their a)."""
    label = ls.mins[np.searchsorted(ls.nodes, acc.a)]
    return split_by(route(label, parts), parts, acc.a, acc.b, acc.score)


@dataclass(frozen=True)
class DocRecords:
    """Documents of components bound for one component partition (positions ascending)."""

    doc: IntArray
    group: IntArray
    length: IntArray
    priority: IntArray
    slot_vid: IntArray
    slot_doc: IntArray
    sig_docs: IntArray  # documents in big buckets, with their signature and evidence rows
    sigs: Signatures
    ev: Evidence

    @property
    def nbytes(self) -> int:
        arrays = (self.doc, self.group, self.length, self.priority, self.slot_vid, self.slot_doc)
        return sum(int(x.nbytes) for x in arrays) + self.sigs.nbytes + self.ev.nbytes


def docs_to_components(
    part: Part, parts: int, with_buckets: bool, *labels: tuple[IntArray, IntArray]
) -> Split:
    """Each document in a component, with what its component's removal needs of it (big-bucket
    slots and their members' rows when keep-aware removal checks big buckets)."""
    if not with_buckets:
        part = replace(part, slot_vid=_e(), slot_doc=_e())
    doc = _cat([p[0] for p in labels])
    label = _cat([p[1] for p in labels])
    order = np.argsort(doc)
    doc, label = doc[order], label[order]
    rows = doc - part.start
    dest = route(label, parts)
    slot_rows = part.slot_doc - part.start
    slot_dest = route(label[np.searchsorted(doc, part.slot_doc)], parts)
    in_bucket = np.unique(slot_rows)
    bucket_dest = route(label[np.searchsorted(doc, in_bucket + part.start)], parts)
    prio = part.priority[rows] if part.priority is not None else doc
    pieces = []
    for d in range(parts):
        mine = dest == d
        slots = slot_dest == d
        brows = in_bucket[bucket_dest == d]
        pieces.append(
            DocRecords(
                doc[mine],
                part.groups[rows[mine]],
                part.block.lengths[rows[mine]],
                prio[mine],
                part.slot_vid[slots],
                part.slot_doc[slots],
                brows + part.start,
                part.block.signatures.take(brows),
                part.block.evidence.take(brows),
            )
        )
    return Split(pieces, sum(p.nbytes for p in pieces))


@dataclass(frozen=True)
class ComponentResult:
    """Removal of one component partition: per document, and the pairs big buckets found."""

    doc: IntArray
    kept: BoolArray
    duplicate_of: IntArray
    score: FloatArray
    label: IntArray
    found_a: IntArray
    found_b: IntArray
    found_score: FloatArray
    clusters: int
    bucket_stats: dict[str, int]


def remove_components(
    params: DedupParams, idf: IdfTable | None, n_docs_pieces: int, *pieces: Any
) -> ComponentResult:
    """``engine.remove`` over whole components, in local numbering (positions ascending)."""
    recs: list[DocRecords] = list(pieces[:n_docs_pieces])
    pairs = pieces[n_docs_pieces:]
    docs = _cat([r.doc for r in recs])
    order = np.argsort(docs)
    docs = docs[order]
    m = len(docs)
    groups = np.searchsorted(docs, _cat([r.group for r in recs])[order])
    if params.keep == "longest":
        priority = _removal.priority_ranks(
            m, "longest", lengths=_cat([r.length for r in recs])[order]
        )
    else:  # "first": positions; "field": the global ranks
        priority = _cat([r.priority for r in recs])[order]
    a = np.searchsorted(docs, _cat([p[0] for p in pairs]))
    b = np.searchsorted(docs, _cat([p[1] for p in pairs]))
    score = _cat([p[2] for p in pairs], np.float64)
    # Big buckets: slots grouped by bucket, members ascending; identical memberships once.
    vid = _cat([r.slot_vid for r in recs])
    mem = np.searchsorted(docs, _cat([r.slot_doc for r in recs]))
    o = np.lexsort((mem, vid))
    vid, mem = vid[o], mem[o]
    sizes = np.diff(np.flatnonzero(np.r_[True, vid[1:] != vid[:-1], True])) if len(vid) else _e()
    members, offsets = distinct_buckets([mem], [sizes.astype(np.int64)])
    sig_docs = np.searchsorted(docs, _cat([r.sig_docs for r in recs]))
    so = np.argsort(sig_docs)
    sig_docs = sig_docs[so]
    like = recs[0].sigs if recs else Signatures(np.zeros((0, 0), np.uint64))
    sigs = Signatures.concat([r.sigs for r in recs], like).take(so)
    ev = concat_evidence([r.ev for r in recs]).take(so)
    method = make_method(params, idf)
    verify_pairs = bucket_verifier(method, make_verifier(params), sigs, sig_docs, ev, sig_docs)
    removed = remove(params, m, a, b, score, priority, groups, members, offsets, verify_pairs)
    r = removed.removal
    given = len(a)
    sizes_of = np.bincount(r.labels, minlength=m)
    dup = np.where(r.duplicate_of >= 0, docs[np.maximum(r.duplicate_of, 0)], -1)
    return ComponentResult(
        docs,
        r.kept,
        dup,
        r.score,
        docs[r.labels],
        docs[removed.a[given:]],
        docs[removed.b[given:]],
        removed.score[given:],
        int((sizes_of >= 2).sum()),
        removed.bucket_stats,
    )


def results_split(cr: ComponentResult, parts: int, starts: IntArray) -> Split:
    return split_by(
        _owner(starts, cr.doc), parts, cr.doc, cr.kept, cr.duplicate_of, cr.score, cr.label
    )


def found_pairs(cr: ComponentResult) -> tuple[IntArray, IntArray, FloatArray]:
    return cr.found_a, cr.found_b, cr.found_score


@dataclass(frozen=True)
class BlockResult:
    """The engine's fitted arrays for one partition's documents."""

    kept: BoolArray
    duplicate_of: IntArray
    score: FloatArray
    clusters: IntArray
    groups: IntArray
    empty: BoolArray
    in_big: int


def block_result(part: Part, *pieces: tuple[np.ndarray, ...]) -> BlockResult:
    n = part.n
    kept = np.ones(n, dtype=np.bool_)
    dup = np.full(n, -1, dtype=np.int64)
    score = np.full(n, np.nan)
    clusters = part.docs
    for doc, k, d, s, lab in pieces:
        rows = doc - part.start
        kept[rows], dup[rows], score[rows], clusters[rows] = k, d, s, lab
    return BlockResult(
        kept,
        dup,
        score,
        clusters,
        part.groups,
        part.block.canonical == EMPTY,
        len(np.unique(part.slot_doc)),
    )


# -- the whole finish -------------------------------------------------------------------------------
@dataclass
class Finished:
    """Futures of every partition's results, the pairs, and the counts for the stats."""

    results: list[Any]
    pairs: tuple[IntArray, IntArray, FloatArray]
    counts: dict[str, int]
    moved: dict[str, int]


def _sum(values: Sequence[int]) -> int:
    return int(sum(values))


def _get(obj: Any, name: str) -> Any:
    return getattr(obj, name)


def finish_on_workers(
    client: Any,
    blocks: Sequence[Any],
    lengths: Sequence[int],
    params: DedupParams,
    idf: IdfTable | None,
    priority: IntArray | None,
    fetch_texts: FetchTexts | None,
    parts: int,
) -> Finished:
    """The engine's ``finish`` over blocks left on the workers (see the module docstring)."""
    ex = Exchanges(client)
    sub = ex.submit
    starts = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    n = int(starts[-1])
    n_blocks = len(blocks)
    state = [
        sub(
            make_part,
            blk,
            int(starts[p]),
            None if priority is None else priority[starts[p] : starts[p + 1]],
        )
        for p, blk in enumerate(blocks)
    ]
    # 1. exact groups
    pieces = ex.exchange("exact groups", state, hashes_split, parts)
    groups = [sub(exact_groups, *pieces[d]) for d in range(parts)]
    back = ex.exchange("exact groups", groups, groups_split, n_blocks, starts)
    state = [sub(with_groups, state[p], *back[p]) for p in range(n_blocks)]
    # 2. candidates
    pieces = ex.exchange("candidate keys", state, keys_split, parts, params, idf)
    keyparts = [sub(key_buckets, params, idf, d, n, *pieces[d]) for d in range(parts)]
    raw = ex.exchange("candidate pairs", keyparts, raw_pairs_split, parts)
    method = make_method(params, idf)
    pairparts = [sub(candidate_pairs, method.min_shared, n, *raw[d]) for d in range(parts)]
    keep_aware = params.removal != "components"
    slots = ex.exchange("big buckets", keyparts, slots_split, n_blocks, starts)
    state = [sub(with_slots, state[p], *slots[p]) for p in range(n_blocks)]
    # 3. verification: requests to the owners, evidence rows back
    asks = ex.exchange("evidence", pairparts, requests_split, n_blocks, starts)
    answers_split = [sub(answer, state[p], *asks[p]) for p in range(n_blocks)]
    answers = ex.pieces("evidence", answers_split, parts)
    verified = [sub(verify, params, idf, pairparts[d], *answers[d]) for d in range(parts)]
    near = client.gather([sub(borderline_of, v) for v in verified])
    rechecked = _recheck(params, near, fetch_texts)
    acc = []
    for d in range(parts):
        a, b, s = rechecked[d]
        acc.append(sub(accepted, verified[d], a, b, s))
    # 4. components
    edges = [sub(group_edges, g) for g in groups] + [sub(accepted_edges, x) for x in acc]
    if keep_aware:
        edges += [sub(bucket_edges, k) for k in keyparts]
    stars, rounds = star_components(ex, edges, parts)
    # 5. removal per component partition
    labels = ex.exchange("removal", stars, labels_split, n_blocks, starts, n)
    doc_split = [
        sub(docs_to_components, state[p], parts, keep_aware, *labels[p]) for p in range(n_blocks)
    ]
    docs_in = ex.pieces("removal", doc_split, parts)
    pair_split = [sub(pairs_to_components, acc[d], stars[d], parts) for d in range(parts)]
    pairs_in = ex.pieces("removal", pair_split, parts)
    comps = [
        sub(remove_components, params, idf, n_blocks, *docs_in[d], *pairs_in[d])
        for d in range(parts)
    ]
    back = ex.exchange("results", comps, results_split, n_blocks, starts)
    results = [sub(block_result, state[p], *back[p]) for p in range(n_blocks)]
    # small results: the pairs and the counts
    pair_parts = client.gather(
        [sub(group_pairs, g) for g in groups]
        + [sub(accepted_pairs, x) for x in acc]
        + [sub(found_pairs, c) for c in comps]
    )
    pa = _cat([p[0] for p in pair_parts])
    pb = _cat([p[1] for p in pair_parts])
    ps = _cat([p[2] for p in pair_parts], np.float64)
    order = np.lexsort((pb, pa))
    comp_meta = client.gather([sub(_comp_counts, c) for c in comps])
    counts = {
        "exact_duplicates": _sum(client.gather([sub(_len_dup, g) for g in groups])),
        "candidate_pairs": _sum(client.gather([sub(_get, v, "candidates") for v in verified])),
        "big_buckets": _sum(client.gather([sub(_get, k, "big_buckets") for k in keyparts])),
        "clusters": _sum([c[0] for c in comp_meta]),
        "rechecked_pairs": sum(len(v.near_a) for v in near),
        "rounds": rounds,
    }
    bucket: dict[str, int] = {}
    for _, stats in comp_meta:
        for k, v in stats.items():
            bucket[k] = bucket.get(k, 0) + v
    counts.update(bucket)
    counts["accepted_pairs"] = len(pa) - counts["exact_duplicates"]
    return Finished(results, (pa[order], pb[order], ps[order]), counts, ex.moved())


def _len_dup(g: Groups) -> int:
    return len(g.dup)


def _comp_counts(c: ComponentResult) -> tuple[int, dict[str, int]]:
    return c.clusters, c.bucket_stats


def _recheck(
    params: DedupParams, near: Sequence[Verified], fetch: FetchTexts | None
) -> list[tuple[IntArray, IntArray, FloatArray]]:
    """The verifier's ``recheck`` of every partition's borderline pairs at once (in the
    client: they are few, and the texts come from wherever ``fetch`` reads them)."""
    verifier = make_verifier(params)
    a = _cat([v.near_a for v in near])
    b = _cat([v.near_b for v in near])
    out = [(_e(), _e(), np.zeros(0)) for _ in near]
    if len(a) == 0:
        return out
    verdict = Verdict(
        _cat([v.near_score for v in near], np.float64),
        _cat([v.near_ok for v in near], np.bool_),
        _cat([v.near_method_ok for v in near], np.bool_),
    )
    done = verifier.recheck(a, b, verdict, fetch)
    cuts = np.cumsum([0, *(len(v.near_a) for v in near)])
    for d in range(len(near)):
        lo, hi = cuts[d], cuts[d + 1]
        ok = done.ok[lo:hi]
        out[d] = (a[lo:hi][ok], b[lo:hi][ok], done.score[lo:hi][ok])
    return out


def keyed(params: DedupParams, idf: IdfTable | None) -> bool:
    """Whether the method's candidates can be generated key partition by key partition."""
    return isinstance(make_method(params, idf), KeyedCandidates)
