"""Signed partitions on Dask workers -> exact groups, candidates, verified pairs, removal, on workers.

The engine's ``finish`` cut at its seams so each piece runs where its data lives; every piece
calls the engine's own functions (``engine.exact_groups``, ``candidates.column_buckets`` and
``shared_pairs``, the verifier's ``decide``, ``engine.remove`` with ``engine.bucket_verifier``).
Document identity is the global position (``start`` of the partition + offset). The stages, each
an exchange between partitions (``neardup.dask_shuffle``):

1. exact groups: (content hash, doc) records shuffled on the hash; the first doc of each hash is
   the group; (duplicate, first) records go back to the duplicates' partitions.
2. candidates: (column, key, doc) records of group representatives shuffled on (column, key);
   each key partition emits its buckets' pairs column by column (big buckets chained and
   listed, as one machine does); pair records and big-bucket slots shuffled on a document;
   pairs listed at least ``min_shared`` times are the candidates.
3. verification: each pair partition asks the owning partitions for the evidence rows of its
   documents (and the signature rows of its big-bucket members), one request and one answer
   exchange, and decides its pairs; pairs the verifier re-checks from texts (hybrid's
   borderline ones) go to the client, few and small.
4. components: exact groups, accepted pairs and (keep-aware) big-bucket memberships as edges;
   labels by large-star / small-star rounds (``dask_shuffle.star_components``).
5. removal: the labels go to the documents' partitions, which send each document's record
   (group, length, priority) to its component's partition; the pair partitions send the pairs,
   bucket slots and members' rows there (they hold the labels of their documents: both are
   partitioned by ``route`` of a document). Each component partition runs ``engine.remove``
   on whole components; its per-document results go to the client's final merge.

With ``keep="field"`` the client sends each partition the priority ranks of its documents
(computed from the keys the caller gave ``finish``); "first" and "longest" need nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

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
    dask_sized,
    nbytes_of,
    route,
    split_by,
    star_components,
    unbundle,
)
from .engine import bucket_verifier, exact_groups, remove
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


@dask_sized
@dataclass(frozen=True)
class Hashes:
    """A partition's content hashes and token counts (16 B per document)."""

    canonical: npt.NDArray[np.uint64]
    lengths: IntArray


@dataclass(frozen=True)
class Stored:
    """Futures of one partition's arrays (``neardup.dask.map_block``), each stored on its own:
    a stage loads only what it reads (and Dask reloads only that when it has spilled them):
    ``Hashes`` for the exact groups and removal, ``Signatures`` for the candidate keys,
    ``Evidence`` (and big-bucket members' signatures) for verification."""

    hashes: Any
    signatures: Any
    evidence: Any


def _e() -> IntArray:
    return np.zeros(0, dtype=np.int64)


def _cat(parts: Sequence[np.ndarray], dtype: Any = np.int64) -> np.ndarray:
    return np.concatenate([np.zeros(0, dtype=dtype), *parts]).astype(dtype, copy=False)


def _owner(starts: IntArray, docs: IntArray) -> IntArray:
    """Partition holding each global position."""
    return np.searchsorted(starts, docs, side="right").astype(np.int64) - 1


# -- per-partition state ------------------------------------------------------------------------
@dask_sized
@dataclass(frozen=True)
class Part:
    """Where a partition starts, and its exact groups (stays on its worker). Its arrays are
    passed beside it, never inside: a spilled Part must not carry a second copy of them."""

    start: int
    n: int
    priority: IntArray | None  # keep="field": global ranks of its documents
    groups: IntArray  # each document's exact-duplicate group (its first document's position)

    @property
    def docs(self) -> IntArray:
        return np.arange(self.start, self.start + self.n, dtype=np.int64)


# -- 1. exact groups ------------------------------------------------------------------------------
@dask_sized
@dataclass(frozen=True)
class Groups:
    """Exact-duplicate records of one hash partition: each duplicate and its group's first doc."""

    first: IntArray
    dup: IntArray


def hashes_split(hashes: Hashes, start: int, parts: int) -> Split:
    ok = np.flatnonzero(hashes.canonical != EMPTY)
    return split_by(route(hashes.canonical[ok], parts), parts, hashes.canonical[ok], ok + start)


def hash_groups(*pieces: tuple[npt.NDArray[np.uint64], IntArray]) -> Groups:
    """``engine.exact_groups`` over one hash partition (every copy of a hash is in it)."""
    pieces = tuple(unbundle(pieces))
    h = _cat([p[0] for p in pieces], np.uint64)
    d = _cat([p[1] for p in pieces])
    order = np.argsort(d)
    h, d = h[order], d[order]
    first = d[exact_groups(h)]
    dup = first != d
    return Groups(first[dup], d[dup])


def groups_split(g: Groups, parts: int, starts: IntArray) -> Split:
    return split_by(_owner(starts, g.dup), parts, g.dup, g.first)


def make_part(
    start: int, n: int, priority: IntArray | None, *pieces: tuple[IntArray, IntArray]
) -> Part:
    """A partition's state, with the exact groups of its documents (the duplicates' pieces)."""
    groups = np.arange(start, start + n, dtype=np.int64)
    for dup, first in unbundle(pieces):
        groups[dup - start] = first
    return Part(start, n, priority, groups)


def group_edges(g: Groups) -> Edges:
    return Edges(g.dup, g.first)


def group_pairs(g: Groups) -> tuple[IntArray, IntArray, FloatArray]:
    return g.first, g.dup, np.ones(len(g.dup))


# -- 2. candidates --------------------------------------------------------------------------------
def _reps(hashes: Hashes, part: Part) -> BoolArray:
    return np.asarray((part.groups == part.docs) & (hashes.canonical != EMPTY))


def keys_split(
    hashes: Hashes,
    signatures: Signatures,
    part: Part,
    parts: int,
    params: DedupParams,
    idf: IdfTable | None,
) -> Split:
    """(column, key, doc) of every candidate key of the partition's group representatives, in
    12 bytes a key: a piece lists its keys column by column (a count per column), documents
    ascending within a column, each as its offset in the partition (uint32), with the
    partition's start once. A key's destination is its (column, key) hash."""
    method = make_method(params, idf)
    if not isinstance(method, KeyedCandidates):  # pragma: no cover - checked by the caller
        raise TypeError(f"{type(method).__name__} has no candidate keys")
    reps = np.flatnonzero(_reps(hashes, part))
    keys = np.asarray(method.candidate_keys(signatures.take(reps)), dtype=np.uint64)
    if keys.ndim == 1:
        keys = keys[:, None]
    keys = np.ascontiguousarray(keys.T)  # column-major: (k, reps)
    width, n = keys.shape
    cols = np.arange(width, dtype=np.int64)[:, None]
    small = np.int16 if parts < 2**15 - 1 else np.int64  # a radix sort for small destinations
    dest = np.asarray(column_keys(cols, keys) % np.uint64(parts)).astype(small)
    dest[keys == EMPTY] = parts  # no key: dropped
    flat = np.argsort(dest.ravel(), kind="stable")  # by destination, then column, then row
    column = np.repeat(np.arange(width, dtype=np.int64), n)
    per = np.bincount(dest.ravel().astype(np.int64) * width + column, minlength=(parts + 1) * width)
    per = per.reshape(parts + 1, width)
    cuts = np.r_[0, np.cumsum(per.sum(axis=1))]
    key = keys.ravel()[flat]
    offset = reps.astype(np.uint32)[flat % max(n, 1)]
    start = np.array([part.start], dtype=np.int64)
    pieces = [
        (per[d].astype(np.int64), key[cuts[d] : cuts[d + 1]], offset[cuts[d] : cuts[d + 1]], start)
        for d in range(parts)
    ]
    return Split(pieces, sum(nbytes_of(p) for p in pieces))


@dask_sized
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
    pieces = tuple(unbundle(pieces))
    method = make_method(params, idf)
    max_bucket = int(getattr(method, "max_bucket", 2**62))
    stats = np.zeros(_kc.N_STATS, dtype=np.int64)
    out_a, out_b, members, sizes = [], [], [], []
    # Pieces come in partition order, each column's documents ascending: concatenating a
    # column's slices of every piece lists its documents ascending, as one machine sees them.
    bounds = [np.r_[0, np.cumsum(p[0])] for p in pieces]
    width = max((len(p[0]) for p in pieces), default=0)
    for j in range(width):
        key = _cat([p[1][b[j] : b[j + 1]] for p, b in zip(pieces, bounds, strict=True)], np.uint64)
        if len(key) < 2:
            continue
        docs = _cat(
            [
                p[3][0] + p[2][b[j] : b[j + 1]].astype(np.int64)
                for p, b in zip(pieces, bounds, strict=True)
            ]
        )
        in_big = np.zeros(len(key), dtype=np.bool_)
        pa, pb, bm, bs = column_buckets(key, max_bucket, None, in_big, stats, True)
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


def pair_records_split(kp: KeyPart, parts: int) -> Split:
    """Pair records to the partition of their first document; big-bucket slots to the
    partition of their member (both keyed by ``route`` of a document, like the components)."""
    dest = np.concatenate([route(kp.a, parts), route(kp.big_members, parts)])
    kind = np.r_[np.zeros(len(kp.a), np.int8), np.ones(len(kp.big_members), np.int8)]
    x = np.concatenate([kp.a, kp.big_vids])
    y = np.concatenate([kp.b, kp.big_members])
    return split_by(dest, parts, kind, x, y)


@dask_sized
@dataclass(frozen=True)
class PairPart:
    """Candidate pairs of one pair partition (a < b, sorted) with the keys each shares, and the
    big-bucket slots (bucket node, member) of its members."""

    a: IntArray
    b: IntArray
    count: npt.NDArray[np.int32]
    needed: IntArray  # every document of its pairs and buckets, sorted (evidence rows)
    slot_vid: IntArray
    slot_doc: IntArray
    bucket_docs: IntArray  # its documents in big buckets, sorted (signature rows too)


def candidate_pairs(min_shared: int, n: int, *pieces: tuple[Any, ...]) -> PairPart:
    """Pairs listed at least ``min_shared`` times (``candidates.shared_pairs``)."""
    pieces = tuple(unbundle(pieces))
    kind = _cat([p[0] for p in pieces], np.int8)
    x = _cat([p[1] for p in pieces])
    y = _cat([p[2] for p in pieces])
    pair = kind == 0
    a, b, count = shared_pairs(x[pair], y[pair], n, min_shared)
    slot_vid, slot_doc = x[~pair], y[~pair]
    bucket_docs = np.unique(slot_doc)
    needed = np.unique(np.concatenate([a, b, bucket_docs]))
    return PairPart(a, b, count, needed, slot_vid, slot_doc, bucket_docs)


# -- 3. verification --------------------------------------------------------------------------------
def requests_split(pp: PairPart, parts: int, starts: IntArray) -> Split:
    """Documents whose evidence (and, in big buckets, signature) rows the partition needs."""
    owner = _owner(starts, pp.needed)
    sig_owner = _owner(starts, pp.bucket_docs)
    pieces = []
    for p in range(parts):
        pieces.append((pp.needed[owner == p], pp.bucket_docs[sig_owner == p]))
    return Split(pieces, sum(nbytes_of(x) for x in pieces))


def answer(
    evidence: Evidence, signatures: Signatures, start: int, *requests: tuple[IntArray, IntArray]
) -> Split:
    """Rows asked for by each pair partition (one piece per asker): evidence, and signatures
    of big-bucket members."""
    pieces = []
    for ev_docs, sig_docs in unbundle(requests):
        pieces.append((evidence.take(ev_docs - start), signatures.take(sig_docs - start)))
    return Split(pieces, sum(nbytes_of(p) for p in pieces))


@dask_sized
@dataclass(frozen=True)
class DocRecords:
    """What removal needs of documents: position, exact group, length, priority."""

    doc: IntArray
    group: IntArray
    length: IntArray
    priority: IntArray

    @property
    def nbytes(self) -> int:
        return sum(int(x.nbytes) for x in (self.doc, self.group, self.length, self.priority))

    def take(self, rows: IntArray) -> DocRecords:
        return DocRecords(self.doc[rows], self.group[rows], self.length[rows], self.priority[rows])


def _records(hashes: Hashes, part: Part, rows: IntArray) -> DocRecords:
    doc = rows + part.start
    prio = part.priority[rows] if part.priority is not None else doc
    return DocRecords(doc, part.groups[rows], hashes.lengths[rows], prio)


def _cat_records(parts: Sequence[DocRecords]) -> DocRecords:
    return DocRecords(
        _cat([r.doc for r in parts]),
        _cat([r.group for r in parts]),
        _cat([r.length for r in parts]),
        _cat([r.priority for r in parts]),
    )


@dask_sized
@dataclass(frozen=True)
class Verified:
    """A pair partition's decided pairs, those left for the texts (borderline), and its big
    buckets' slots with the members' signature and evidence rows and records."""

    a: IntArray
    b: IntArray
    score: FloatArray
    candidates: int
    near_a: IntArray
    near_b: IntArray
    near_score: FloatArray
    near_ok: BoolArray
    near_method_ok: BoolArray
    slot_vid: IntArray
    slot_doc: IntArray
    bucket_docs: IntArray
    bucket_sigs: Signatures
    bucket_ev: Evidence


def verify(
    params: DedupParams, idf: IdfTable | None, pp: PairPart, *answers: tuple[Any, ...]
) -> Verified:
    """The verifier decides the candidates from the evidence joined back to them."""
    answers = tuple(unbundle(answers))
    method = make_method(params, idf)
    verifier = make_verifier(params)
    ev = concat_evidence([x[0] for x in answers])
    sigs = Signatures.concat([x[1] for x in answers], answers[0][1] if answers else None)
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
        pp.slot_vid,
        pp.slot_doc,
        pp.bucket_docs,
        sigs,
        ev.take(np.searchsorted(pp.needed, pp.bucket_docs)),
    )


@dask_sized
@dataclass(frozen=True)
class Borderline:
    """A pair partition's borderline pairs (what the client re-checks from the texts)."""

    a: IntArray
    b: IntArray
    score: FloatArray
    ok: BoolArray
    method_ok: BoolArray


def borderline_of(v: Verified) -> Borderline:
    return Borderline(v.near_a, v.near_b, v.near_score, v.near_ok, v.near_method_ok)


def accepted(v: Verified, a: IntArray, b: IntArray, score: FloatArray) -> Verified:
    """Decided pairs plus the re-checked ones (given by the client) that passed."""
    return replace(v, a=np.r_[v.a, a], b=np.r_[v.b, b], score=np.r_[v.score, score])


def pair_edges(v: Verified, with_buckets: bool) -> Edges:
    """Accepted pairs and (keep-aware removal) big-bucket memberships as graph edges."""
    if not with_buckets:
        return Edges(v.a, v.b)
    return Edges(np.r_[v.a, v.slot_doc], np.r_[v.b, v.slot_vid])


# -- 5. removal per component ------------------------------------------------------------------------
def labels_split(ls: LargeStar, parts: int, starts: IntArray, n: int) -> Split:
    """Component labels of documents, to the partitions holding them."""
    docs = ls.nodes < n
    return split_by(_owner(starts, ls.nodes[docs]), parts, ls.nodes[docs], ls.mins[docs])


def _label(ls: LargeStar, docs: IntArray) -> IntArray:
    return ls.mins[np.searchsorted(ls.nodes, docs)]


@dask_sized
@dataclass(frozen=True)
class ToComponent:
    """What one component partition receives from one pair partition."""

    a: IntArray
    b: IntArray
    score: FloatArray
    slot_vid: IntArray
    slot_doc: IntArray
    bucket_docs: IntArray
    bucket_sigs: Signatures
    bucket_ev: Evidence

    @property
    def nbytes(self) -> int:
        arrays = (self.a, self.b, self.score, self.slot_vid, self.slot_doc, self.bucket_docs)
        extra = self.bucket_sigs.nbytes + self.bucket_ev.nbytes
        return sum(int(x.nbytes) for x in arrays) + extra


def pairs_to_components(v: Verified, ls: LargeStar, parts: int, with_buckets: bool) -> Split:
    """Accepted pairs, big-bucket slots and members' rows to their components (the pair
    partition holds the documents with ``route(doc) == d``: ``ls`` has their labels)."""
    pair_dest = route(_label(ls, v.a), parts)
    slot_dest = route(_label(ls, v.slot_doc), parts) if with_buckets else np.zeros(0, np.int64)
    bucket_dest = route(_label(ls, v.bucket_docs), parts) if with_buckets else slot_dest
    pieces = []
    for d in range(parts):
        pm, sm, bm = pair_dest == d, slot_dest == d, np.flatnonzero(bucket_dest == d)
        pieces.append(
            ToComponent(
                v.a[pm],
                v.b[pm],
                v.score[pm],
                v.slot_vid[sm],
                v.slot_doc[sm],
                v.bucket_docs[bm],
                v.bucket_sigs.take(bm),
                v.bucket_ev.take(bm),
            )
        )
    return Split(pieces, sum(p.nbytes for p in pieces))


def docs_to_components(
    hashes: Hashes, part: Part, parts: int, *labels: tuple[IntArray, IntArray]
) -> Split:
    """Records of the partition's documents in components, to their component partitions."""
    labels = tuple(unbundle(labels))
    doc = _cat([p[0] for p in labels])
    label = _cat([p[1] for p in labels])
    order = np.argsort(doc)
    doc, label = doc[order], label[order]
    dest = route(label, parts)
    recs = _records(hashes, part, doc - part.start)
    pieces = [recs.take(np.flatnonzero(dest == d)) for d in range(parts)]
    return Split(pieces, sum(p.nbytes for p in pieces))


@dask_sized
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
    from_pairs: list[ToComponent] = unbundle(pieces[n_docs_pieces:])
    recs = _cat_records(unbundle(pieces[:n_docs_pieces]))  # partition order: ascending
    docs = recs.doc
    m = len(docs)
    groups = np.searchsorted(docs, recs.group)
    if params.keep == "longest":
        priority = _removal.priority_ranks(m, "longest", lengths=recs.length)
    else:  # "first": positions; "field": the global ranks
        priority = recs.priority
    a = np.searchsorted(docs, _cat([p.a for p in from_pairs]))
    b = np.searchsorted(docs, _cat([p.b for p in from_pairs]))
    score = _cat([p.score for p in from_pairs], np.float64)
    # Big buckets: slots grouped by bucket, members ascending; identical memberships once.
    vid = _cat([p.slot_vid for p in from_pairs])
    mem = np.searchsorted(docs, _cat([p.slot_doc for p in from_pairs]))
    o = np.lexsort((mem, vid))
    vid, mem = vid[o], mem[o]
    sizes = np.diff(np.flatnonzero(np.r_[True, vid[1:] != vid[:-1], True])) if len(vid) else _e()
    members, offsets = distinct_buckets([mem], [sizes.astype(np.int64)])
    sig_docs = np.searchsorted(docs, _cat([p.bucket_docs for p in from_pairs]))
    so = np.argsort(sig_docs)
    sig_docs = sig_docs[so]
    like = from_pairs[0].bucket_sigs if from_pairs else None
    sigs = Signatures.concat([p.bucket_sigs for p in from_pairs], like).take(so)
    ev = concat_evidence([p.bucket_ev for p in from_pairs]).take(so)
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
        removed.stats,
    )


# -- the whole finish -------------------------------------------------------------------------------
@dataclass
class Finished:
    """Per-document results of the documents in components (the others are kept, alone), the
    exact groups, the pairs, the counts for the stats, and the bytes each exchange moved."""

    components: list[ComponentResult]
    first: IntArray
    dup: IntArray
    pairs: tuple[IntArray, IntArray, FloatArray]
    counts: dict[str, int]
    moved: dict[str, int]


def finish_on_workers(
    client: Any,
    blocks: Sequence[Stored],
    lengths: Sequence[int],
    params: DedupParams,
    idf: IdfTable | None,
    priority: IntArray | None,
    fetch_texts: FetchTexts | None,
    parts: int,
    workers: Sequence[str] = (),
    bundle_bytes: int | None = None,
) -> Finished:
    """The engine's ``finish`` over partitions' arrays left on the workers (see the module
    docstring).

    ``parts``: partitions of every shuffle; ``workers``: addresses their tasks are spread over
    (round robin, as a preference), so every worker takes a share; ``bundle_bytes``: pieces
    per bundle task (``dask_shuffle.Exchanges``). A future the client holds keeps its data on
    a worker (in memory or spilled): each stage is a function, so its intermediate records
    (the candidate keys: ~400 B per document, twice) are freed when it returns."""
    ex = Exchanges(client, workers, bundle_bytes)
    sub, at = ex.submit, ex.at
    starts = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    n = int(starts[-1])
    n_blocks = len(blocks)
    # Each block's steps run on its holder, up to an even share; exchanges to blocks go there.
    ex.place_blocks([b.hashes for b in blocks])
    groups, state = _exact_groups(ex, blocks, starts, priority, parts)
    pairparts, big_buckets = _candidates(ex, blocks, state, params, idf, n, parts)
    verified = _verification(ex, blocks, starts, pairparts, params, idf, parts)
    del pairparts  # the verification tasks hold them while they need them
    near = client.gather([sub(borderline_of, v) for v in verified])
    rechecked = _recheck(params, near, fetch_texts)
    acc = [sub(accepted, verified[d], *rechecked[d]) for d in range(parts)]
    del verified
    # 4. components
    with_buckets = params.removal != "components"
    edges = [sub(group_edges, g) for g in groups] + [sub(pair_edges, v, with_buckets) for v in acc]
    stars, rounds = star_components(ex, edges, parts)
    # 5. removal per component partition
    labels = ex.exchange("removal", stars, labels_split, n_blocks, starts, n, where=ex.blocks)
    docs_in = ex.pieces(
        "removal",
        [
            ex.at_block(p, docs_to_components, blocks[p].hashes, state[p], parts, *labels[p])
            for p in range(n_blocks)
        ],
        parts,
    )
    pairs_in = ex.pieces(
        "removal",
        [sub(pairs_to_components, acc[d], stars[d], parts, with_buckets) for d in range(parts)],
        parts,
    )
    comps = [
        at(d, remove_components, params, idf, len(docs_in[d]), *docs_in[d], *pairs_in[d])
        for d in range(parts)
    ]
    # the final merge in the client: results of documents in components, groups, pairs, counts
    results = client.gather(comps)
    group_parts = client.gather(groups)
    pair_parts = client.gather([sub(_accepted_pairs, v) for v in acc])
    first = _cat([g.first for g in group_parts])
    dup = _cat([g.dup for g in group_parts])
    pa = _cat([first, *(p[0] for p in pair_parts), *(c.found_a for c in results)])
    pb = _cat([dup, *(p[1] for p in pair_parts), *(c.found_b for c in results)])
    ps = _cat(
        [np.ones(len(dup)), *(p[2] for p in pair_parts), *(c.found_score for c in results)],
        np.float64,
    )
    order = np.lexsort((pb, pa))
    counts = {
        "exact_duplicates": len(dup),
        "candidate_pairs": sum(p[3] for p in pair_parts),
        "big_buckets": _sum(client.gather(big_buckets)),
        "big_bucket_docs": sum(p[4] for p in pair_parts),
        "clusters": sum(c.clusters for c in results),
        "rechecked_pairs": sum(len(v.a) for v in near),
        "rounds": rounds,
        "accepted_pairs": len(pa) - len(dup),
    }
    for c in results:
        for k, v in c.bucket_stats.items():
            counts[k] = counts.get(k, 0) + v
    return Finished(results, first, dup, (pa[order], pb[order], ps[order]), counts, ex.moved())


def _exact_groups(
    ex: Exchanges,
    blocks: Sequence[Stored],
    starts: IntArray,
    priority: IntArray | None,
    parts: int,
) -> tuple[list[Any], list[Any]]:
    """1. Hash partitions' groups, and each partition's state (``Part``) with its groups."""
    n_blocks = len(blocks)
    hashes = [
        ex.at_block(p, hashes_split, b.hashes, int(starts[p]), parts) for p, b in enumerate(blocks)
    ]
    pieces = ex.pieces("exact groups", hashes, parts)
    groups = [ex.at(d, hash_groups, *pieces[d]) for d in range(parts)]
    back = ex.exchange("exact groups", groups, groups_split, n_blocks, starts, where=ex.blocks)
    state = []
    for p in range(n_blocks):
        lo, hi = int(starts[p]), int(starts[p + 1])
        prio = None if priority is None else priority[lo:hi]
        state.append(ex.at_block(p, make_part, lo, hi - lo, prio, *back[p]))
    return groups, state


def _candidates(
    ex: Exchanges,
    blocks: Sequence[Stored],
    state: Sequence[Any],
    params: DedupParams,
    idf: IdfTable | None,
    n: int,
    parts: int,
) -> tuple[list[Any], list[Any]]:
    """2. Pair partitions (``PairPart``), and each key partition's count of big buckets."""
    keys = [
        ex.at_block(p, keys_split, b.hashes, b.signatures, s, parts, params, idf)
        for p, (b, s) in enumerate(zip(blocks, state, strict=True))
    ]
    pieces = ex.pieces("candidate keys", keys, parts)
    keyparts = [ex.at(d, key_buckets, params, idf, d, n, *pieces[d]) for d in range(parts)]
    raw = ex.exchange("candidate pairs", keyparts, pair_records_split, parts)
    min_shared = make_method(params, idf).min_shared
    pairparts = [ex.at(d, candidate_pairs, min_shared, n, *raw[d]) for d in range(parts)]
    return pairparts, [ex.submit(_big_buckets, k) for k in keyparts]


def _verification(
    ex: Exchanges,
    blocks: Sequence[Stored],
    starts: IntArray,
    pairparts: Sequence[Any],
    params: DedupParams,
    idf: IdfTable | None,
    parts: int,
) -> list[Any]:
    """3. Requests for evidence rows to their owners, the rows back; each pair partition's
    ``Verified``."""
    asks = ex.exchange("evidence", pairparts, requests_split, len(blocks), starts, where=ex.blocks)
    answers = [
        ex.at_block(p, answer, b.evidence, b.signatures, int(starts[p]), *asks[p])
        for p, b in enumerate(blocks)
    ]
    rows = ex.pieces("evidence", answers, parts)
    return [ex.at(d, verify, params, idf, pairparts[d], *rows[d]) for d in range(parts)]


def _sum(values: Sequence[int]) -> int:
    return int(sum(values))


def _big_buckets(k: KeyPart) -> int:
    return k.big_buckets


def _accepted_pairs(v: Verified) -> tuple[IntArray, IntArray, FloatArray, int, int]:
    return v.a, v.b, v.score, v.candidates, len(v.bucket_docs)


def _recheck(
    params: DedupParams, near: Sequence[Borderline], fetch: FetchTexts | None
) -> list[tuple[IntArray, IntArray, FloatArray]]:
    """The verifier's ``recheck`` of every partition's borderline pairs at once (in the
    client: they are few, and the texts come from wherever ``fetch`` reads them)."""
    verifier = make_verifier(params)
    a = _cat([v.a for v in near])
    b = _cat([v.b for v in near])
    out = [(_e(), _e(), np.zeros(0)) for _ in near]
    if len(a) == 0:
        return out
    verdict = Verdict(
        _cat([v.score for v in near], np.float64),
        _cat([v.ok for v in near], np.bool_),
        _cat([v.method_ok for v in near], np.bool_),
    )
    done = verifier.recheck(a, b, verdict, fetch)
    cuts = np.cumsum([0, *(len(v.a) for v in near)])
    for d in range(len(near)):
        lo, hi = cuts[d], cuts[d + 1]
        ok = done.ok[lo:hi]
        out[d] = (a[lo:hi][ok], b[lo:hi][ok], done.score[lo:hi][ok])
    return out


def keyed(params: DedupParams, idf: IdfTable | None) -> bool:
    """Whether the method's candidates can be generated key partition by key partition."""
    return isinstance(make_method(params, idf), KeyedCandidates)
