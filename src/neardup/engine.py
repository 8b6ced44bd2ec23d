"""Compose the stages for a collection: texts -> which documents are kept, and why.

    texts -> exact-duplicate groups (content hash) -> method signatures -> candidate pairs
          -> verified pairs -> removal (keep-aware or components) -> kept, duplicate_of, stats

Exact duplicates (equal canonical token sequences) are grouped first and only one document per
group goes through the method, so boilerplate copies cost nothing. Documents without tokens are
reported in ``empty_`` and never paired. The method (``neardup.methods``) and the verification
(``neardup.verify``) are objects chosen from the parameters; nothing here asks which they are.
No I/O: callers feed batches of texts (``partial_fit``) and read the fitted arrays (names
ending in _). Each batch's blocks are kept in a block store (``neardup.blocks``: in memory, or
spilled past the memory limit, or one given to the constructor) and ``finish`` reads them only
through it, so nothing here asks where they live; ``finish``'s near-duplicate stage is
``neardup.near_pairs``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from . import _heap
from . import removal as _removal
from ._kernels.hashing import EMPTY
from ._prefetch import ordered_map
from ._types import IntArray
from .blocks import BlockStore, MemoryBlocks, SignedBatch, SpillBlocks
from .candidates import stable_order
from .errors import NeardupError, ParamError
from .methods import KeyedCandidates, Method, Signatures, make_method, needs_fit
from .near_pairs import Docs, Found, Search, bucket_verifier, find, remove
from .params import DEDUP_EXAMPLE, DedupParams, check_int, check_kind
from .signing import sign_texts
from .simhash import IdfTable, fit_idf_texts
from .textbatch import check_texts
from .verify import FetchTexts, Verifier, make_verifier

__all__ = [
    "DEFAULT_BATCH",
    "BlockStore",
    "DedupStats",
    "Deduplicator",
    "SignedBatch",
    "bucket_verifier",
    "exact_groups",
    "expand_pairs",
    "remove",
]

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
    # A radix sort (stable: each run starts at its smallest position), a third of the time of
    # NumPy's unstable argsort (0.07 s at 1M documents) and a sixth of np.unique's.
    order = stable_order(canonical)
    ordered = canonical[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    first = order[starts]
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


class Deduplicator:
    """Find near-duplicates in a collection: ``Deduplicator(p).fit(texts).kept_``.

    Feed all texts with ``fit`` (any iterable; consumed in batches), or batch by batch with
    ``partial_fit`` then ``finish()``. Results:
    ``kept_`` (bool[n]); ``duplicate_of_`` (int64[n]: the kept document a removed one duplicates,
    -1 for kept documents; under removal="components", the kept document of its component,
    which it may not resemble: A~B, B~C removes C as a duplicate of A); ``duplicate_score_``
    (float64[n]: that pair's score, NaN for kept ones, and under components for a removed one
    with no pair of its own with its ``duplicate_of_``); ``clusters_`` (int64[n]: the smallest document index of each document's cluster);
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
        jobs: int = 1,
        blocks: BlockStore | None = None,
    ) -> None:
        """memory_limit: bytes of per-document blocks (and exact sets) to keep in memory; past
        it they go to a temporary folder (in ``spill_dir``, else the system's), memory-mapped.
        pairs: which near pairs ``pairs_`` lists (see the class docstring): "all" costs the
        complete listing, which keep-aware removal alone never needs. jobs: threads ``finish``
        may use for its kernels (the result never depends on it). blocks: where the batches'
        blocks are kept (``neardup.blocks``; by default in memory, spilled past
        ``memory_limit``)."""
        if params is not None:
            check_kind(params, DedupParams, DEDUP_EXAMPLE)
        self.params = params or DedupParams()
        if pairs not in ("removal", "all"):
            raise ParamError(f"pairs must be 'removal' or 'all', got {pairs!r}")
        self.pairs = pairs
        if memory_limit is not None:
            check_int("memory_limit", memory_limit, 0, 2**62)
        self.memory_limit = memory_limit
        self.jobs = check_int("jobs", jobs, 1, 1024)
        self._spill_dir = spill_dir
        self._blocks = blocks
        self._spilled_sets = 0
        if idf is not None and not isinstance(idf, IdfTable):
            raise ParamError(
                f"idf must be an IdfTable or None, got {type(idf).__name__}; "
                "pass Deduplicator.fit_idf(params, texts) or leave it None"
            )
        self.idf = idf
        if method is not None and not isinstance(method, Method):
            raise ParamError(
                f"method must be a Method object or None, got {type(method).__name__}; "
                "choose the method in the parameters: DedupParams(method=MinhashParams())"
            )
        self._method = method
        self.verifier: Verifier = make_verifier(self.params)
        self._bytes = 0
        self._started = time.perf_counter()
        self._finished = False

    @property
    def method(self) -> Method:
        """The method object (built on first use, so ``fit`` can still fit an IDF table)."""
        if self._method is None:
            self._method = make_method(self.params, self.idf)
        return self._method

    @staticmethod
    def fit_idf(
        params: DedupParams, texts: Callable[[], Iterable[str]], batch_size: int = DEFAULT_BATCH
    ) -> IdfTable | None:
        """The IDF table the parameters' method learns from the corpus before signing it, from
        every text (``texts()``, read only then); None when the method learns nothing."""
        if not needs_fit(params):
            return None
        return fit_idf_texts(texts(), params.simhash_params(), batch_size)

    @property
    def blocks(self) -> BlockStore:
        """Where the batches' blocks are kept until ``finish`` (the default store is made with
        the first batch: in memory, or spilled past ``memory_limit``)."""
        if self._blocks is None:
            limit = self.memory_limit
            self._blocks = MemoryBlocks() if limit is None else SpillBlocks(limit, self._spill_dir)
        return self._blocks

    @property
    def n_docs(self) -> int:
        """Documents fed so far."""
        return len(self.blocks)

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
        return sign_texts(self.params, self.method, self.verifier, check_texts(texts))

    def _check_open(self) -> None:
        """Refuse more work once ``finish`` ran: it closed the block store the work needs."""
        if self._finished:
            raise NeardupError("this Deduplicator has finished; create a new one to fit again")

    def append(self, signed: SignedBatch, nbytes: int | None = None) -> Deduplicator:
        """Add a signed batch; its documents' indices continue from the previous batch."""
        self._check_open()
        sigs = signed.signatures
        if (
            isinstance(self.method, KeyedCandidates)
            and sigs.offsets is None
            and sigs.data.ndim == 2
        ):
            # Columns contiguous: ``finish`` reads the keys one column at a time.
            signed = replace(signed, signatures=Signatures(np.asfortranarray(sigs.data)))
        if nbytes is not None:
            nbytes = check_int("nbytes", nbytes, 0, 2**62, "the batch's input bytes, or None")
        self.blocks.append(signed)
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
        jobs = check_int("jobs", jobs, 1, 1024)
        self.method  # built once, before threads share it  # noqa: B018

        def fed() -> Iterator[_Item]:
            for item, signed in ordered_map(lambda it: self.sign(texts(it)), items, jobs):
                self.append(signed, nbytes(item))
                yield item

        return fed()

    def partial_fit(self, texts: Sequence[str], nbytes: int | None = None) -> Deduplicator:
        """Signatures and verification evidence of one batch (indices continue from the last)."""
        self._check_open()
        if nbytes is not None:
            check_int("nbytes", nbytes, 0, 2**62, "the batch's input bytes, or None")
        return self.append(self.sign(texts), nbytes)

    def fit(
        self,
        texts: Iterable[str],
        batch_size: int = DEFAULT_BATCH,
        progress: Callable[[int, int], None] | None = None,
        key: npt.ArrayLike | None = None,
        jobs: int | None = None,
    ) -> Deduplicator:
        """Feed every text in batches of ``batch_size``, then finish. Returns self.

        ``jobs`` threads sign batches at once (the kernels release the GIL; None: the
        constructor's ``jobs``); the result is the same for any number.

        The texts are kept in memory when a stage needs them again (IDF weighting reads them
        twice; hybrid verification re-checks borderline pairs on their texts).
        """
        batch_size = check_int("batch_size", batch_size, 1, 2**31)
        if progress is not None and not callable(progress):
            raise ParamError(
                f"progress must be None or a callable progress(docs, bytes), got {progress!r}"
            )
        texts = check_texts(texts)
        if self.idf is None:
            self.idf = self.fit_idf(self.params, lambda: texts, batch_size)
        kept_texts = texts

        def fetch(docs: IntArray) -> list[str]:
            return [kept_texts[i] for i in docs.tolist()]

        slices = (texts[i : i + batch_size] for i in range(0, len(texts), batch_size))
        if jobs is not None:
            self.jobs = check_int("jobs", jobs, 1, 1024)
        for _ in self.feed(slices, lambda batch: batch, lambda batch: None, self.jobs):
            if progress is not None:
                progress(self.n_docs, self._bytes)
        return self.finish(key, fetch)

    # -- pairs and removal -----------------------------------------------------------------
    def finish(
        self,
        key: npt.ArrayLike | None = None,
        fetch_texts: FetchTexts | None = None,
    ) -> Deduplicator:
        """Candidate pairs, verification and removal over everything fed: a function of the
        block store's contents (and the parameters), whatever the store.

        key: one value per document (numbers, strings or datetimes) when ``keep="field"``.
        fetch_texts: for ``verify="hybrid"``, returns the texts of the given sorted document
          indices, in that order (the CLI reads its input again; ``fit`` keeps the texts).
        """
        self._check_open()
        if fetch_texts is not None and not callable(fetch_texts):
            raise ParamError(
                f"fetch_texts must be None or a callable fetch_texts(docs), got {fetch_texts!r}"
            )
        blocks = self.blocks
        if not len(blocks):  # nothing fed: empty blocks of the right shapes
            self.append(self.sign([]))
        held = blocks.nbytes
        memory_per_doc = held / max(len(blocks), 1)
        canonical, lengths = blocks.hashes()
        _heap.trim(held)  # what the batches left free in malloc's heap, before the peak stages
        n = len(canonical)
        groups = exact_groups(canonical)
        empty = canonical == EMPTY
        reps = np.flatnonzero((groups == np.arange(n)) & ~empty)
        docs = Docs(n, reps, groups, self._priority(n, lengths, key), lengths)
        found = find(self._search(fetch_texts), docs)
        self._spilled_sets = found.spilled_sets
        self._keep(found, groups, empty, memory_per_doc)
        blocks.close()
        self._finished = True
        _heap.trim(held)
        return self

    def _search(self, fetch_texts: FetchTexts | None) -> Search:
        """What the near-pair stage reads (``neardup.near_pairs``)."""
        budget = None  # bytes of exact sets to hold in memory: what the limit leaves after blocks
        if self.memory_limit is not None:
            budget = max(self.memory_limit - self.blocks.held, 0)
        return Search(
            self.params,
            self.method,
            self.verifier,
            self.blocks,
            every_pair=self.pairs == "all",
            jobs=self.jobs,
            set_budget=budget,
            spill_dir=self._spill_dir,
            fetch_texts=fetch_texts,
        )

    def _keep(
        self,
        found: Found,
        groups: IntArray,
        empty: npt.NDArray[np.bool_],
        memory_per_doc: float,
    ) -> None:
        """The fitted arrays and statistics from what the near-pair stage found."""
        n = len(groups)
        dup = np.flatnonzero(groups != np.arange(n))
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
        return self.blocks.spilled + self._spilled_sets
