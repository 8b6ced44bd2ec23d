"""Compose the stages for a collection: texts -> which documents are kept, and why.

    texts -> exact-duplicate groups (content hash) -> method signatures -> candidate pairs
          -> verified pairs -> removal (keep-aware or components) -> kept, duplicate_of, stats

Exact duplicates (equal canonical token sequences) are grouped first and only one document per
group goes through the method, so boilerplate copies cost nothing. Documents without tokens are
reported in ``empty_`` and never paired. The method (``neardup.methods``) and the verification
(``neardup.verify``) are objects chosen from the parameters; nothing here asks which they are.
No I/O: callers feed batches of texts (``partial_fit``) and read the fitted arrays (names
ending in _).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, cast

import numpy as np
import numpy.typing as npt

from . import _heap
from . import removal as _removal
from ._kernels.hashing import EMPTY
from ._types import IntArray
from .allpairs import every_pair
from .candidates import CandidateResult, pairs_by_column
from .errors import NeardupError, ParamError
from .exact import SetStore
from .leaders import bucket_lists, remove_by_leaders
from .methods import KeyedCandidates, Method, Signatures, keyed_candidates, make_method
from .params import DedupParams, check_int
from .shingles import ShingleBatch
from .simhash import IdfTable
from .spill import Spill, release_pages
from .textbatch import TextBatch, check_texts
from .verify import (
    Evidence,
    FetchTexts,
    Verifier,
    concat_evidence,
    make_verifier,
)

#: Documents fed to the kernels per call when ``fit`` is given one big sequence.
DEFAULT_BATCH = 2000


_Item = TypeVar("_Item")


@dataclass(frozen=True)
class DedupStats:
    """What a fit found and cost; ``as_dict`` feeds summaries and JSON reports."""

    documents: int
    empty: int
    exact_duplicates: int
    accepted_pairs: int
    clusters: int
    removed: int
    seconds: float
    bytes_in: int
    bytes_per_doc_in_memory: float
    #: Pairs compared (under keep-aware removal: documents against their buckets' kept leaders).
    candidate_pairs: int = 0
    big_buckets: int = 0
    big_bucket_docs: int = 0
    rechecked_pairs: int = 0
    #: Big buckets under keep-aware removal: member-leader checks verified, the pairs they found,
    #: and kept members whose check budget ran out (their bucket pairs were not all compared).
    bucket_checks: int = 0
    bucket_pairs_found: int = 0
    bucket_unresolved: int = 0
    #: Bytes of per-document blocks written to disk because of the memory limit.
    spilled_bytes: int = 0
    #: Keep-aware removal against kept leaders: pairs compared, pairs decided by exact Jaccard,
    #: documents whose shingle sets were computed again, passes made, bucket memberships held.
    leader_checks: int = 0
    exact_checks: int = 0
    exact_sets: int = 0
    check_rounds: int = 0
    bucket_records: int = 0
    #: With every pair asked for: bucket pairs listed and checked, documents of big buckets
    #: joined exactly, and the pairs the join verified.
    listed_pairs: int = 0
    joined_docs: int = 0
    join_verified: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


def exact_groups(canonical: npt.NDArray[np.uint64]) -> IntArray:
    """Each document's exact-duplicate group: the index of the first document with its content
    hash (documents without tokens are each their own group)."""
    n = canonical.shape[0]
    if not n:
        return np.zeros(0, dtype=np.int64)
    # An unstable sort, then each run's smallest position: half the time of np.unique's stable
    # sort with its index and inverse (0.07 vs 0.14 s at 1M documents).
    order = np.argsort(canonical).astype(np.int64)
    ordered = canonical[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    first = np.minimum.reduceat(order, starts)
    rep = np.empty(n, dtype=np.int64)
    rep[order] = np.repeat(first, np.diff(np.r_[starts, n]))
    empty = canonical == EMPTY
    rep[empty] = np.flatnonzero(empty)
    return rep


def expand_pairs(
    groups: IntArray, a: IntArray, b: IntArray, score: npt.NDArray[np.float64]
) -> tuple[IntArray, IntArray, npt.NDArray[np.float64]]:
    """Every document pair implied by group-level pairs: all pairs inside each exact-duplicate
    group (score 1.0) and, for each pair of group representatives, every member of one with every
    member of the other. Sorted (a < b). The output can be quadratic in group sizes: that is the
    answer to "every pair at or above the threshold"."""
    n = groups.shape[0]
    order = np.argsort(groups, kind="stable").astype(np.int64)
    g_sorted = groups[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]]) if n else np.zeros(0, int)
    ends = np.r_[starts[1:], n].astype(np.int64)
    rep_of_run = g_sorted[starts] if n else np.zeros(0, np.int64)
    run_of_rep = np.full(n, -1, dtype=np.int64)
    run_of_rep[rep_of_run] = np.arange(len(starts))
    sizes = ends - starts
    out_a: list[IntArray] = []
    out_b: list[IntArray] = []
    out_s: list[npt.NDArray[np.float64]] = []
    for r in np.flatnonzero(sizes >= 2).tolist():  # inside groups: all pairs
        members = order[starts[r] : ends[r]]
        i, j = np.triu_indices(len(members), k=1)
        out_a.append(members[i])
        out_b.append(members[j])
        out_s.append(np.ones(len(i)))
    ra, rb = run_of_rep[a], run_of_rep[b]
    la, lb = sizes[ra], sizes[rb]
    counts = la * lb
    total = int(counts.sum())
    if total:
        pair = np.repeat(np.arange(len(a)), counts)
        within = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        ia, ib = within // lb[pair], within % lb[pair]
        out_a.append(order[starts[ra[pair]] + ia])
        out_b.append(order[starts[rb[pair]] + ib])
        out_s.append(score[pair])
    if not out_a:
        e = np.zeros(0, dtype=np.int64)
        return e, e.copy(), np.zeros(0)
    xa, xb, xs = np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_s)
    lo, hi = np.minimum(xa, xb), np.maximum(xa, xb)
    idx = np.lexsort((hi, lo))
    return lo[idx], hi[idx], xs[idx]


@dataclass(frozen=True)
class SignedBatch:
    """One batch's contribution: content hashes, lengths, method signatures, evidence."""

    canonical: npt.NDArray[np.uint64]
    lengths: IntArray
    signatures: Signatures
    evidence: Evidence


@dataclass(frozen=True)
class Found:
    """A removal, the accepted near pairs between first copies (a < b; the verified ones, then
    those big buckets found), and what it cost."""

    removal: _removal.Removal
    a: IntArray
    b: IntArray
    score: npt.NDArray[np.float64]
    stats: dict[str, int]


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
    exact-duplicate groups and big buckets) is the result of the whole graph restricted to it,
    which is what lets the Dask backend call this once per partition of components.
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


class Deduplicator:
    """Find near-duplicates in a collection: ``Deduplicator(p).fit(texts).kept_``.

    Feed all texts with ``fit`` (any iterable; consumed in batches), or batch by batch with
    ``partial_fit`` then ``finish()``. Results:
    ``kept_`` (bool[n]); ``duplicate_of_`` (int64[n]: the kept document a removed one duplicates,
    -1 for kept documents); ``duplicate_score_`` (float64[n]: that pair's score, NaN for kept
    ones); ``clusters_`` (int64[n]: the smallest document index of each document's cluster);
    ``empty_`` (bool[n]); ``groups_`` (int64[n]: exact-duplicate group = its first document);
    ``pairs_`` ((a, b, score): exact duplicates as pairs with their first copy, score 1.0, and
    near pairs between first copies: with ``pairs="removal"`` (the default) the pairs that
    justify each removal (a removed document and each kept document it was found to resemble),
    with ``pairs="all"`` every pair at or above the threshold, which ``all_pairs()`` expands over
    exact-duplicate groups); ``stats_``. The same texts and parameters give identical results
    whatever the batching.
    """

    def __init__(
        self,
        params: DedupParams | None = None,
        idf: IdfTable | None = None,
        method: Method | None = None,
        memory_limit: int | None = None,
        spill_dir: str | None = None,
        pairs: Literal["removal", "all"] = "removal",
    ) -> None:
        """memory_limit: bytes of per-document blocks (and exact sets) to keep in memory; past
        it they go to a temporary folder (in ``spill_dir``, else the system's), memory-mapped.
        pairs: which near pairs ``pairs_`` lists (see the class docstring): "all" costs the
        complete listing, which keep-aware removal alone never needs."""
        self.params = params or DedupParams()
        if pairs not in ("removal", "all"):
            raise ParamError(f"pairs must be 'removal' or 'all', got {pairs!r}")
        self.pairs = pairs
        if memory_limit is not None:
            check_int("memory_limit", memory_limit, 0, 2**62)
        self.memory_limit = memory_limit
        #: Threads ``finish`` may use for its kernels (the result never depends on it).
        self.jobs = 1
        self._spill_dir = spill_dir
        self._spill: Spill | None = None
        #: Bytes of per-document blocks held in memory (not counting memory-mapped ones).
        self._held = 0
        self._spilled_sets = 0
        self.idf = idf
        self._method = method
        self.verifier: Verifier = make_verifier(self.params)
        self._canonical: list[npt.NDArray[np.uint64]] = []
        self._lengths: list[IntArray] = []
        self._signatures: list[Signatures] = []
        self._evidence: list[Evidence] = []
        self._n = 0
        self._bytes = 0
        self._started = time.perf_counter()
        self._finished = False

    @property
    def method(self) -> Method:
        """The method object (built on first use, so an IDF table can still be set)."""
        if self._method is None:
            self._method = make_method(self.params, self.idf)
        return self._method

    @property
    def n_docs(self) -> int:
        """Documents fed so far."""
        return self._n

    @property
    def n_bytes(self) -> int:
        """Input bytes fed so far (as reported by the caller, else characters)."""
        return self._bytes

    @property
    def hamming_plan_(self) -> str | None:
        """One line describing the search the method chose, when it chose one (SimHash)."""
        plan = getattr(self.method, "plan_", None)
        return None if plan is None else plan.describe().splitlines()[0]

    # -- pass over the texts ---------------------------------------------------------------
    def sign(self, texts: Sequence[str]) -> SignedBatch:
        """What one batch contributes (hashes, signatures, evidence), without changing state.

        Pure given the parameters, and the kernels release the GIL: batches can be signed in
        parallel threads and then appended in order with ``append``.
        """
        batch = TextBatch(texts, self.params.shingle)
        return SignedBatch(
            canonical=batch.canonical,
            lengths=batch.lengths,
            signatures=self.method.signatures(batch),
            evidence=self.verifier.evidence(batch),
        )

    def append(self, signed: SignedBatch, nbytes: int | None = None) -> Deduplicator:
        """Add a signed batch; its documents' indices continue from the previous batch."""
        if self._finished:
            raise NeardupError("this Deduplicator has finished; create a new one to fit again")
        self._append_block(signed.canonical, signed.lengths, signed.signatures, signed.evidence)
        self._n += len(signed.canonical)
        self._bytes += nbytes if nbytes is not None else int(signed.lengths.sum())
        return self

    def feed(
        self,
        items: Iterable[_Item],
        texts: Callable[[_Item], Sequence[str]],
        nbytes: Callable[[_Item], int | None],
        jobs: int = 1,
    ) -> Iterator[_Item]:
        """Fit a stream of batches in order, signing up to ``jobs`` at once in threads; yields
        each item once its batch is added (the result never depends on ``jobs``)."""
        from .io._prefetch import ordered_map

        self.method  # built once, before threads share it  # noqa: B018
        for item, signed in ordered_map(lambda it: self.sign(texts(it)), items, jobs):
            self.append(signed, nbytes(item))
            yield item

    def partial_fit(self, texts: Sequence[str], nbytes: int | None = None) -> Deduplicator:
        """Signatures and verification evidence of one batch (indices continue from the last)."""
        if self._finished:
            raise NeardupError("this Deduplicator has finished; create a new one to fit again")
        return self.append(self.sign(texts), nbytes)

    def fit(
        self,
        texts: Iterable[str],
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[int, int], None] | None = None,
        key: npt.ArrayLike | None = None,
        jobs: int = 1,
    ) -> Deduplicator:
        """Feed every text in batches of ``batch_size``, then finish. Returns self.

        ``jobs`` threads sign batches at once (the kernels release the GIL); the result is the
        same for any number.

        The texts are kept in memory when a stage needs them again (IDF weighting reads them
        twice; hybrid verification re-checks borderline pairs on their texts).
        """
        batch_size = check_int("batch_size", batch_size, 1, 2**31)
        texts = check_texts(texts)
        from .methods import needs_fit

        if needs_fit(self.params) and self.idf is None:
            from .simhash import fit_idf_texts

            self.idf = fit_idf_texts(texts, self.params.simhash_params(), batch_size)
        kept_texts = texts

        def fetch(docs: IntArray) -> list[str]:
            return [kept_texts[i] for i in docs.tolist()]

        slices = (texts[i : i + batch_size] for i in range(0, len(texts), batch_size))
        jobs = check_int("jobs", jobs, 1, 1024)
        self.jobs = jobs
        for _ in self.feed(slices, lambda batch: batch, lambda batch: None, jobs):
            if progress is not None:
                progress(self._n, self._bytes)
        return self.finish(key, fetch)

    def _append_block(
        self,
        canonical: npt.NDArray[np.uint64],
        lengths: IntArray,
        signatures: Signatures,
        evidence: Evidence,
    ) -> None:
        """Keep one batch's arrays until ``finish``; the Dask backend appends blocks whose
        signatures and evidence stay on the workers (fetched by ``take``). Past the memory
        limit the signatures and evidence go to disk, memory-mapped."""
        if _row_block(signatures) and isinstance(self.method, KeyedCandidates):
            # Columns contiguous: ``finish`` reads the keys one column at a time.
            signatures = Signatures(np.asfortranarray(signatures.data))
        held = signatures.nbytes + evidence.nbytes
        if self.memory_limit is not None and self._held + held > self.memory_limit:
            if self._spill is None:
                self._spill = Spill(self._spill_dir)
            signatures = self._spill.signatures(signatures)
            evidence = self._spill.evidence(evidence)
            held = 0
        self._held += held + canonical.nbytes + lengths.nbytes
        self._canonical.append(canonical)
        self._lengths.append(lengths)
        self._signatures.append(signatures)
        self._evidence.append(evidence)

    # -- pairs and removal -----------------------------------------------------------------
    def finish(
        self,
        key: npt.ArrayLike | None = None,
        fetch_texts: FetchTexts | None = None,
    ) -> Deduplicator:
        """Candidate pairs, verification and removal over everything fed.

        key: one value per document (numbers, strings or datetimes) when ``keep="field"``.
        fetch_texts: for ``verify="hybrid"``, returns the texts of the given sorted document
          indices, in that order (the CLI reads its input again; ``fit`` keeps the texts).
        """
        p = self.params
        n = self._n
        memory_per_doc = self._memory_per_doc()
        if not self._signatures:  # nothing fed: empty blocks of the right shapes
            nothing = TextBatch([], p.shingle)
            self._signatures.append(self.method.signatures(nothing))
            self._evidence.append(self.verifier.evidence(nothing))
        canonical = _cat(self._canonical, np.uint64)
        lengths = _cat(self._lengths, np.int64)
        self._canonical.clear()  # the pieces, now copied
        self._lengths.clear()
        _heap.trim()  # what the batches left free in malloc's heap, before the peak stages
        empty = canonical == EMPTY
        groups = exact_groups(canonical)
        is_first = groups == np.arange(n)
        dup = np.flatnonzero(~is_first)
        reps = np.flatnonzero(is_first & ~empty)
        priority = self._priority(n, lengths, key)

        columns = _key_columns(self.method, self._signatures, reps)
        if columns is not None and (p.removal == "keep-aware" or self.pairs == "all"):
            found = self._by_keys(n, reps, groups, priority, columns, fetch_texts)
        else:
            found = self._by_pairs(n, reps, groups, priority, columns, fetch_texts)
        result, a, b, score = found.removal, found.a, found.b, found.score

        all_a = np.concatenate([groups[dup], a])
        all_b = np.concatenate([dup, b])
        all_s = np.concatenate([np.ones(len(dup)), score])
        order = np.lexsort((all_b, all_a))
        self.pairs_ = (all_a[order], all_b[order], all_s[order])
        self.groups_ = groups
        self.empty_ = empty
        self.kept_ = result.kept
        self.duplicate_of_ = result.duplicate_of
        self.duplicate_score_ = result.score
        self.clusters_ = result.labels
        sizes = np.bincount(self.clusters_, minlength=n)
        self.stats_ = DedupStats(
            documents=n,
            empty=int(empty.sum()),
            exact_duplicates=len(dup),
            accepted_pairs=len(a),
            clusters=int((sizes >= 2).sum()),
            removed=int(n - self.kept_.sum()),
            seconds=time.perf_counter() - self._started,
            bytes_in=self._bytes,
            bytes_per_doc_in_memory=memory_per_doc,
            spilled_bytes=self.spilled_bytes,
            **found.stats,
        )
        if self._spill is not None:
            self._spill.close()
        self._finished = True
        _heap.trim()
        return self

    def _by_keys(
        self,
        n: int,
        reps: IntArray,
        groups: IntArray,
        priority: IntArray,
        columns: tuple[Callable[[int], npt.NDArray[np.uint64]], int],
        fetch_texts: FetchTexts | None,
    ) -> Found:
        """Removal from the candidate keys' buckets: keep-aware against each bucket's kept
        leaders (``neardup.leaders``: linear in the documents of near-copy clusters, every bucket
        whole, no pair list built); with ``pairs="all"`` also every pair at or above the
        threshold (``neardup.allpairs``), which components removal then uses."""
        method = cast(KeyedCandidates, self.method)
        column, k = columns
        buckets = bucket_lists(column, len(reps), k, self.jobs)
        listed = None
        if self.pairs == "all":  # joined big buckets are listed only for verifiers without sets
            limit = method.max_bucket if self.verifier.joins_exactly else max(len(reps), 2)
            listed = pairs_by_column(
                column, len(reps), k, method.min_shared, max_bucket=limit,
                list_big_buckets=True, jobs=self.jobs,
            )  # fmt: skip
        self._signatures.clear()
        active = reps[buckets.docs]
        ev = _take_evidence(self._evidence, active)
        self._evidence.clear()
        _heap.trim()
        check = self.verifier.pair_check(ev)
        count_score, count_ok = method.candidate_scores(np.arange(k + 1, dtype=np.int32))
        store = SetStore(
            len(active), self._fetch_sets(active, fetch_texts), self._set_budget(), self._spill_dir
        )
        stats: dict[str, int] = {"bucket_records": buckets.records}
        pairs = None
        if listed is not None:
            rows = _rows_of(listed, buckets.docs)
            every = every_pair(rows, len(active), count_ok, count_score, check, store)
            pairs = (active[every.a], active[every.b], every.score)
            stats.update(
                candidate_pairs=every.listed,
                listed_pairs=every.listed,
                rechecked_pairs=every.exact,
                joined_docs=every.joined,
                join_verified=every.join_verified,
            )
            del listed, rows
        if self.params.removal == "components":
            assert pairs is not None  # components from keys only when every pair is asked for
            removal = _removal.components(n, *pairs, priority, groups=groups)
            self._spilled_sets = store.spilled
            store.close()
            return Found(removal, *pairs, stats)
        nodes = _removal.group_nodes(n, priority, groups)
        res = remove_by_leaders(
            buckets, nodes.rank[active], method.min_shared, count_ok, count_score, check,
            store if check.wants_sets else None, max_leaders=method.max_bucket,
        )  # fmt: skip
        self._spilled_sets = store.spilled
        store.close()
        node_kept = np.ones(n, dtype=np.bool_)
        node_dup = np.full(n, -1, dtype=np.int64)
        node_score = np.full(n, np.nan, dtype=np.float64)
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
        return Found(removal, *pairs, stats)

    def _fetch_sets(
        self, docs: IntArray, fetch_texts: FetchTexts | None
    ) -> Callable[[IntArray], ShingleBatch]:
        """The exact shingle sets of rows of ``docs``, from their texts fetched again."""

        def fetch_sets(rows: IntArray) -> ShingleBatch:
            if fetch_texts is None:
                raise ParamError(
                    "verify='hybrid' needs the borderline documents' texts: give a way to "
                    "fetch them (fit() keeps them; the CLI reads its input again)"
                )
            texts = fetch_texts(docs[rows])
            if len(texts) != len(rows):
                raise NeardupError(
                    f"fetch_texts returned {len(texts)} texts for {len(rows)} documents"
                )
            return self.verifier.exact_sets(texts, self.jobs)

        return fetch_sets

    def _by_pairs(
        self,
        n: int,
        reps: IntArray,
        groups: IntArray,
        priority: IntArray,
        columns: tuple[Callable[[int], npt.NDArray[np.uint64]], int] | None,
        fetch_texts: FetchTexts | None,
    ) -> Found:
        """Every candidate pair listed, verified, then removal over the verified pairs (the
        method's own candidates; components; methods without candidate keys)."""
        p = self.params
        if columns is not None:  # one key column at a time, never the whole key matrix
            found = keyed_candidates(
                cast(KeyedCandidates, self.method), columns[0], len(reps), columns[1], self.jobs
            )
            in_buckets = reps[found.big_members]
            bucket_docs = np.unique(in_buckets)
            sigs = _take_signatures(self._signatures, bucket_docs)
        else:
            sigs = _take_signatures(self._signatures, reps)
            found = self.method.candidates(sigs, jobs=self.jobs)
            in_buckets = reps[found.big_members]
            bucket_docs = np.unique(in_buckets)
            sigs = sigs.take(np.searchsorted(reps, bucket_docs))
        self._signatures.clear()
        a, b = reps[found.a], reps[found.b]
        needed = np.unique(np.concatenate([a, b, in_buckets]))
        ev = _take_evidence(self._evidence, needed)
        self._evidence.clear()
        _heap.trim()  # the blocks' pages go back to the system, not to malloc's free lists
        la, lb = np.searchsorted(needed, a), np.searchsorted(needed, b)
        verdict = self.verifier.decide(ev, la, lb, found.score, found.accepted)
        verdict = self.verifier.recheck(a, b, verdict, fetch_texts, self.jobs)
        _heap.trim()
        ok = verdict.ok
        a, b, score = a[ok], b[ok], verdict.score[ok]

        # Big-bucket checks compare first members of groups in big buckets: their rows suffice.
        verify_pairs = bucket_verifier(self.method, self.verifier, sigs, bucket_docs, ev, needed)
        removed = remove(
            p, n, a, b, score, priority, groups, in_buckets, found.big_offsets, verify_pairs
        )
        stats = {
            "candidate_pairs": len(found),
            "rechecked_pairs": int(verdict.rechecked),
            "big_buckets": int(found.stats.get("big_buckets", 0)),
            "big_bucket_docs": int(found.stats.get("big_bucket_docs", 0)),
            **removed.stats,
        }
        return Found(removed.removal, removed.a, removed.b, removed.score, stats)

    def all_pairs(self) -> tuple[IntArray, IntArray, npt.NDArray[np.float64]]:
        """Every document pair at or above the threshold (a < b, sorted): the near pairs found
        with ``pairs="all"``, each exact-duplicate group expanded (all pairs inside a group, and
        every member of one group with every member of a near-duplicate group)."""
        if not self._finished:
            raise NeardupError("call fit() or finish() before all_pairs()")
        if self.pairs != "all":
            raise NeardupError(
                "all_pairs() needs every pair found: create the Deduplicator with pairs='all' "
                "(keep-aware removal alone compares documents with kept ones only)"
            )
        a, b, s = self.pairs_
        near = self.groups_[b] != a  # exact-duplicate star pairs are implied by the groups
        return expand_pairs(self.groups_, a[near], b[near], s[near])

    def _priority(self, n: int, lengths: IntArray, key: npt.ArrayLike | None) -> IntArray:
        p = self.params
        if p.keep == "field":
            if key is None or np.asarray(key).shape != (n,):
                raise ParamError(
                    f"keep='field' needs key=<one value per document> ({n}) given to finish/fit"
                )
            return _removal.priority_ranks(n, "field", key=key, prefer=p.keep_prefer)
        if p.keep == "longest":
            return _removal.priority_ranks(n, "longest", lengths=lengths)
        return _removal.priority_ranks(n, "first")

    @property
    def spilled_bytes(self) -> int:
        """Bytes of blocks (and exact sets) written to disk because of the memory limit."""
        return (0 if self._spill is None else self._spill.bytes) + self._spilled_sets

    def _set_budget(self) -> int | None:
        """Bytes of exact shingle sets to hold in memory: what the limit leaves after blocks."""
        if self.memory_limit is None:
            return None
        return max(self.memory_limit - self._held, 0)

    def _memory_per_doc(self) -> float:
        total = sum(x.nbytes for x in [*self._canonical, *self._lengths])
        total += sum(s.nbytes for s in self._signatures) + sum(e.nbytes for e in self._evidence)
        return total / max(self._n, 1)


def _split(lengths: list[int], rows: IntArray) -> list[tuple[int, IntArray]]:
    """(part, local rows) for sorted global ``rows`` over consecutive parts of these lengths."""
    out: list[tuple[int, IntArray]] = []
    start = 0
    for i, length in enumerate(lengths):
        lo, hi = np.searchsorted(rows, [start, start + length])
        if hi > lo:
            out.append((i, rows[lo:hi] - start))
        start += length
    return out


def _take_signatures(parts: list[Signatures], rows: IntArray) -> Signatures:
    """Rows ``rows`` (sorted global indices) of the concatenated signatures, without it.

    Consumes ``parts``: each block is dropped once its rows are copied out (memory-mapped ones
    are unmapped), so the peak holds the blocks or their rows, not both and a concatenation.
    """
    split = _split([len(p) for p in parts], rows)
    like = parts[0] if parts else None
    local_rows = all(type(p) is Signatures and p.offsets is None for p in parts)
    if like is None or not local_rows or not split:
        picked = [parts[i].take(local) for i, local in split]
        if not picked and like is not None:
            return like.take(rows[:0])
        return Signatures.concat(picked)
    first = parts[split[0][0]].take(split[0][1][:0]).data
    out = np.empty((len(rows), *first.shape[1:]), dtype=first.dtype)
    at = 0
    for i, local in split:
        block = parts[i].data
        out[at : at + len(local)] = block[local]
        at += len(local)
        # Released now, not at the end (an empty array, not a view that would keep a
        # memory-mapped block mapped).
        parts[i] = Signatures(np.zeros((0, *block.shape[1:]), dtype=block.dtype))
    return Signatures(out)


def _take_evidence(parts: list[Evidence], rows: IntArray) -> Evidence:
    """Rows ``rows`` (sorted global indices) of the concatenated evidence, without it.

    Consumes ``parts`` as ``_take_signatures`` does: each block is dropped (unmapped) once its
    rows are copied, so the pages read from mapped blocks never pile up.
    """
    if not parts:
        return concat_evidence([])
    like = parts[0].take(rows[:0])
    picked = []
    for i, local in _split([len(p) for p in parts], rows):
        picked.append(parts[i].take(local))
        parts[i] = like
    return concat_evidence(picked) if picked else like


def _row_block(sigs: Signatures) -> bool:
    """A block of one row of fixed width per document, held here (not on a Dask worker)."""
    return type(sigs) is Signatures and sigs.offsets is None and sigs.data.ndim == 2


def _key_columns(
    method: Method, parts: list[Signatures], rows: IntArray
) -> tuple[Callable[[int], npt.NDArray[np.uint64]], int] | None:
    """(column(j): candidate key j of documents ``rows`` (sorted global indices), number of key
    columns), gathered from the blocks one column at a time; None when the method has no
    candidate keys or a block is not rows held here. Pages of memory-mapped blocks are
    released as they are read, so only the column being built stays resident."""
    if not isinstance(method, KeyedCandidates) or not all(_row_block(p) for p in parts):
        return None
    split = _split([len(p) for p in parts], rows)
    k = int(method.candidate_keys(parts[0].take(rows[:0])).shape[1])

    def column(j: int) -> npt.NDArray[np.uint64]:
        out = np.empty(len(rows), dtype=np.uint64)
        at = 0
        for i, local in split:
            keys = method.candidate_keys(parts[i])
            out[at : at + len(local)] = keys[local, j]
            release_pages(keys)
            at += len(local)
        return out

    return column, k


def _cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)


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
