"""Partitions of texts on a Dask cluster -> the same kept set, clusters and pairs as one machine.

The engine's ``Deduplicator`` with its per-batch blocks left on the workers. Nothing here is an
algorithm of its own: every partition runs the very method and verifier objects the engine
builds (``make_method``, ``make_verifier``), and ``finish`` runs the engine's own pieces where
the data lives (``neardup.dask_stages``: exact groups, ``candidates.column_buckets`` per key
partition, ``verifier.decide``, ``engine.remove`` per partition of whole components), joined by
shuffles between the workers (``neardup.dask_shuffle``). Document identity is the global
position: partitions in order, offsets within them, never arrival order, so the results are
byte-identical to ``Deduplicator(params).fit(texts)`` whatever the partitioning, the number of
workers or of shuffle partitions.

Where each stage runs and what moves (per document unless said; k keys, t sketch values; the
figures are the 1M-document benchmark's, t=0.8, k=38, ``verify=sketch``):

=============================  ==================  =============================  ==============
stage                          runs on             moves between workers          to the client
=============================  ==================  =============================  ==============
read, shingle, sketch,         workers, per        nothing: blocks stay            sizes only
signatures, evidence           partition           (spillable)
exact groups (content hash)    workers, by hash    hash + position: 16 B           nothing
candidate keys -> buckets      workers, by key     (column, key, offset): 12 B     nothing
                                                   per key (~400 B)
pairs sharing >= r keys        workers, by doc     16 B per pair record            nothing
verification                   workers, by doc     evidence rows of pair docs:    nothing
                                                   2t B each (request + answer)
hybrid re-check                client              texts of borderline docs       the borderline
                                                   read again from partitions     pairs (few)
connected components           workers, by node    16 B per edge per round        1 bool per
(large-star / small-star)                                                         partition/round
removal (keep-aware, big       workers, by         records of docs in components  nothing
buckets, components)           component           (32 B) and their pairs
final merge                    client              -                              results of docs
                                                                                  in components
                                                                                  (33 B each),
                                                                                  pairs (24 B)
=============================  ==================  =============================  ==============

The client holds O(partitions) sizes and futures, the borderline pairs, and at the end the
fitted arrays (``kept_`` ... one value per document, as ``Deduplicator`` has them; documents
outside components are filled in there, not fetched). Methods without candidate keys
(``methods.KeyedCandidates``: SimHash, sampled containment) run the engine's own ``finish`` in
the client instead, fetching content hashes (16 B), the signatures of group representatives
and the evidence of documents in pairs.

``DaskDeduplicator`` is a drop-in for ``Deduplicator`` (``run.dedup_source`` feeds it batches
read on the client; the CLI's ``--dask``). ``dedup`` runs over a ``dask.bag`` or
``dask.dataframe`` whose partitions are read on the workers, and writes the kept records per
partition with a manifest.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from ._kernels.hashing import EMPTY
from .dask_shuffle import dask_sized, nbytes_of
from .dask_stages import Hashes, Stored, finish_on_workers, keyed
from .engine import Deduplicator, DedupStats
from .errors import InputError, NeardupError, ParamError
from .io import atomic_dir, atomic_write, key_ranks
from .methods import Signatures, make_method, needs_fit
from .params import DedupParams
from .simhash import IdfTable
from .textbatch import TextBatch, check_texts
from .verify import Evidence, FetchTexts, make_verifier

_Item = TypeVar("_Item")

IntArray = npt.NDArray[np.int64]

#: Seconds to wait for a scheduler named by address before giving up.
CONNECT_TIMEOUT = 10.0

#: Documents per shuffle partition when the workers have no memory limit (their keys: ~400 B
#: each at t=0.8) ...
DOCS_PER_SHUFFLE_PARTITION = 150_000
#: ... else a key partition's records take at most this share of the smallest worker limit
#: (~60 MB under 600 MB: the keys of ~130,000 documents at t=0.8).
SHUFFLE_SHARE = 1 / 10
#: Bytes of a key record (key u64, document u32) per byte of signature (u64 values).
KEY_BYTES_PER_SIGNATURE_BYTE = 12 / 8

#: Name of the manifest written last into a per-partition output folder.
MANIFEST = "manifest.json"


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ParamError(
            "the Dask backend needs dask.distributed: pip install 'neardup[dask]'"
        ) from exc
    return distributed


# -- work done on the workers ---------------------------------------------------------------------
@dask_sized
@dataclass(frozen=True)
class Block:
    """One partition's arrays, computed and kept on a worker."""

    canonical: npt.NDArray[np.uint64]
    lengths: IntArray
    signatures: Signatures
    evidence: Evidence
    ids: list[str] | None = None
    keys: list[object] | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays, and Dask's estimate of its ids and keys."""
        from dask.sizeof import sizeof

        arrays = (self.canonical, self.lengths, self.signatures, self.evidence)
        return nbytes_of(arrays) + sum(int(sizeof(x)) for x in (self.ids, self.keys) if x)


@dataclass(frozen=True)
class BlockMeta:
    """What the client learns of a block: its sizes (and ids or keys when asked for)."""

    n: int
    chars: int
    empty: IntArray  # offsets of documents without tokens
    sig_template: np.ndarray
    sig_nbytes: int
    ev_nbytes: int
    ids: list[str] | None
    keys: list[object] | None


def _materialize(part: Any) -> Any:
    """A partition as a DataFrame or a list (bag partitions may arrive as one-shot iterators)."""
    return part if hasattr(part, "columns") or isinstance(part, list) else list(part)


def _texts_of(part: Any, text_field: str) -> list[str]:
    """The texts of one partition: a list of strings or of records, or a pandas DataFrame."""
    if hasattr(part, "columns"):  # pandas DataFrame
        if text_field not in part.columns:
            raise InputError(
                f"the partition has no column {text_field!r}; name the text column with text_field="
            )
        values = part[text_field].tolist()
    else:
        values = list(part)
        if values and isinstance(values[0], dict):
            try:
                values = [v[text_field] for v in values]
            except (KeyError, TypeError) as exc:
                raise InputError(
                    f"a record has no field {text_field!r}; name the text field with text_field="
                ) from exc
    return list(check_texts(values, "partition texts"))


def _field_of(part: Any, name: str) -> list[object] | None:
    """One field of every record of a partition, None when the partition has no such field."""
    if hasattr(part, "columns"):
        if name not in part.columns:
            return None
        return [None if _is_missing(v) else v for v in part[name].tolist()]
    values = list(part)
    if not values or not isinstance(values[0], dict):
        return None
    return [v.get(name) for v in values]


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def map_block(
    part: Any,
    params: DedupParams,
    idf: IdfTable | None = None,
    text_field: str = "text",
    id_field: str | None = None,
    key_field: str | None = None,
) -> Block:
    """Partition -> its Block: the engine's batch arrays from the engine's own method and
    verifier objects (the only per-document work, and the bulk of the time)."""
    part = _materialize(part)
    texts = _texts_of(part, text_field)
    batch = TextBatch(texts, params.shingle)
    ids = None
    if id_field is not None:
        raw = _field_of(part, id_field)
        ids = None if raw is None else [str(v) for v in raw]
    keys = _field_of(part, key_field) if key_field is not None else None
    return Block(
        batch.canonical,
        batch.lengths,
        make_method(params, idf).signatures(batch),
        make_verifier(params).evidence(batch),
        ids,
        keys,
    )


def _meta(block: Block) -> BlockMeta:
    return BlockMeta(
        int(block.canonical.shape[0]),
        int(block.lengths.sum()),
        np.flatnonzero(block.canonical == EMPTY).astype(np.int64),
        block.signatures.data[:0],
        block.signatures.nbytes,
        block.evidence.nbytes,
        block.ids,
        block.keys,
    )


def _hashes(block: Block) -> Hashes:
    return Hashes(block.canonical, block.lengths)


def _signatures(block: Block) -> Signatures:
    return block.signatures


def _evidence(block: Block) -> Evidence:
    return block.evidence


def _take_signatures(signatures: Signatures, rows: IntArray) -> Signatures:
    return signatures.take(rows)


def _take_evidence(evidence: Evidence, rows: IntArray) -> Evidence:
    return evidence.take(rows)


def _take_texts(part: Any, rows: IntArray, text_field: str) -> list[str]:
    part = _materialize(part)
    texts = _texts_of(part, text_field)
    return [texts[i] for i in rows.tolist()]


# -- blocks seen from the client ------------------------------------------------------------------
@dataclass(frozen=True)
class RemoteSignatures(Signatures):
    """A block's signatures left on a worker; ``take`` fetches the rows asked for."""

    ref: Any = None
    rows: int = 0
    size: int = 0
    moved: dict[str, int] | None = None

    def __len__(self) -> int:
        return self.rows

    @property
    def nbytes(self) -> int:
        return self.size

    def take(self, rows: npt.ArrayLike) -> Signatures:
        idx = np.asarray(rows, dtype=np.int64)
        if len(idx) == 0:
            return Signatures(self.data[:0])
        got: Signatures = _call(self.ref, _take_signatures, idx)
        _tally(self.moved, "signatures", got.nbytes)
        return got


@dataclass(frozen=True)
class RemoteEvidence:
    """A block's verification evidence left on a worker; ``take`` fetches the rows asked for."""

    ref: Any
    rows: int
    size: int
    moved: dict[str, int] | None = None

    def __len__(self) -> int:
        return self.rows

    @property
    def nbytes(self) -> int:
        return self.size

    def take(self, rows: IntArray) -> Evidence:
        got: Evidence = _call(self.ref, _take_evidence, np.asarray(rows, dtype=np.int64))
        _tally(self.moved, "evidence", got.nbytes)
        return got


def _tally(moved: dict[str, int] | None, what: str, nbytes: int) -> None:
    if moved is not None:
        moved[what] = moved.get(what, 0) + int(nbytes)


def _call(ref: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(block, *args)`` where the block lives and return the (small) answer."""
    with cluster_errors():
        return ref.client.submit(fn, ref, *args, pure=False).result()


@contextlib.contextmanager
def cluster_errors() -> Iterator[None]:
    """Turn a lost worker, scheduler or connection into a NeardupError saying what to do."""
    distributed = _import_distributed()
    from distributed.comm.core import CommClosedError

    try:
        yield
    except distributed.KilledWorker as exc:
        raise NeardupError(
            f"a Dask worker died while running {exc.task!r} (and again on each retry); "
            "nothing was written. Check the workers' logs (out of memory? raise "
            "--memory-limit or use more partitions) and run again"
        ) from exc
    except (CommClosedError, distributed.client.FutureCancelledError) as exc:
        raise NeardupError(
            f"the connection to the Dask cluster was lost ({exc}); nothing was written. "
            "Check that the scheduler is still running and run again"
        ) from exc


# -- the deduplicator -----------------------------------------------------------------------------
class DaskDeduplicator(Deduplicator):
    """``Deduplicator`` whose per-batch work runs on a Dask cluster; identical results.

    ``partial_fit(texts)`` ships a batch to a worker (one partition per call) and returns at
    once; ``feed_partitions`` adds partitions that already live on the cluster (delayed
    objects of a bag or a dataframe). ``finish`` waits for every block and runs the engine's
    own ``finish`` over them (see the module docstring for what it fetches).
    """

    def __init__(
        self,
        params: DedupParams | None = None,
        client: Any = None,
        idf: IdfTable | None = None,
        max_pending: int | None = None,
        shuffle_partitions: int | None = None,
        bundle_bytes: int | None = None,
    ) -> None:
        super().__init__(params, idf)
        if client is None:
            raise ParamError("DaskDeduplicator needs client=<a dask.distributed Client>")
        self.client = client
        workers = len(client.scheduler_info().get("workers", {})) or 1
        self.max_pending = max_pending or 2 * workers + 2
        # Each partition's arrays, stored apart (``dask_stages.Stored``), and its BlockMeta.
        self._blocks: list[Stored] = []
        self._metas: list[Any] = []
        self._parts: list[Any] = []  # the partitions (delayed) when fed by feed_partitions
        self._text_field = "text"
        self.meta_: list[BlockMeta] = []
        #: Bytes fetched from the workers into this process, by kind (see the module docstring).
        self.moved_: dict[str, int] = {}
        #: Bytes of the pieces exchanged between workers, by stage (``dask_shuffle.Exchanges``).
        self.shuffled_: dict[str, int] = {}
        #: Large-star / small-star rounds the connected components took.
        self.rounds_ = 0
        #: Partitions of each shuffle (keys, pairs, components); default ``shuffle_partitions``.
        self.shuffle_partitions = shuffle_partitions
        #: Bytes of splits one bundle task takes at most (a bigger split alone); default
        #: ``dask_shuffle.bundle_budget``: 1/16 of the smallest worker memory limit, <= 64 MB.
        self.bundle_bytes = bundle_bytes

    @property
    def partition_lengths(self) -> list[int]:
        """Documents in each partition (known after ``finish``)."""
        return [m.n for m in self.meta_]

    def partial_fit(self, texts: Sequence[str], nbytes: int | None = None) -> DaskDeduplicator:
        """Send one batch to the cluster as a partition (indices continue from the last)."""
        if self._finished:
            raise NeardupError("this Deduplicator has finished; create a new one to fit again")
        if self._parts:
            raise NeardupError("feed either batches (partial_fit) or partitions, not both")
        texts = list(check_texts(texts))
        import dask

        with cluster_errors():
            [data] = self.client.scatter([texts], hash=False)
            self._store([dask.delayed(map_block, pure=False)(data, self.params, self.idf)])
        self._n += len(texts)
        self._bytes += nbytes if nbytes is not None else sum(map(len, texts))
        self._throttle()
        return self

    def feed(
        self,
        items: Iterable[_Item],
        texts: Callable[[_Item], Sequence[str]],
        nbytes: Callable[[_Item], int | None],
        jobs: int = 1,
    ) -> Iterator[_Item]:
        """Each batch goes to the cluster as it comes (the workers sign batches in parallel)."""
        for item in items:
            self.partial_fit(texts(item), nbytes(item))
            yield item

    def feed_partitions(
        self,
        parts: Sequence[Any],
        text_field: str = "text",
        id_field: str | None = None,
        key_field: str | None = None,
    ) -> DaskDeduplicator:
        """Add partitions that live on the cluster (``collection.to_delayed()``), in order."""
        if self._blocks and not self._parts:
            raise NeardupError("feed either batches (partial_fit) or partitions, not both")
        import dask

        self._text_field = text_field
        tasks = [
            dask.delayed(map_block, pure=True)(
                p, self.params, self.idf, text_field, id_field, key_field
            )
            for p in parts
        ]
        with cluster_errors():
            self._store(tasks)
        self._parts.extend(parts)
        return self

    def _store(self, blocks: Sequence[Any]) -> None:
        """Compute blocks (delayed ``map_block`` calls) on the cluster, keeping their meta,
        hashes, signatures and evidence as separate results and not the block itself: a stage
        then loads only what it reads, and Dask spills and reloads only that (a block is
        776 B per document at t=0.8; the exact groups and removal read 16 of them)."""
        import dask

        parts = (_meta, _hashes, _signatures, _evidence)
        tasks = [dask.delayed(fn, pure=True)(b) for b in blocks for fn in parts]
        futures = self.client.compute(tasks)  # one graph: each block's parts right after it
        for i in range(0, len(futures), len(parts)):
            meta, hashes, signatures, evidence = futures[i : i + len(parts)]
            self._metas.append(meta)
            self._blocks.append(Stored(hashes, signatures, evidence))

    def _throttle(self) -> None:
        """Wait while too many blocks are queued (bounds the texts in flight on the cluster)."""
        distributed = _import_distributed()
        while True:
            waiting = [m for m in self._metas if not m.done()]
            if len(waiting) <= self.max_pending:
                break
            with cluster_errors():
                distributed.wait(waiting, return_when="FIRST_COMPLETED")
        for m in self._metas:
            if m.status == "error":
                with cluster_errors():
                    m.result()  # raises the worker's exception

    def collect(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Wait for every block; learn its sizes (the arrays stay on the worker)."""
        distributed = _import_distributed()
        if self.meta_ or not self._metas:
            return
        with cluster_errors():
            for done, fut in enumerate(distributed.as_completed(self._metas), 1):
                fut.result()
                if progress is not None:
                    progress(done, len(self._metas))
            self.meta_ = self.client.gather(self._metas)
        self._metas.clear()
        if self._parts:
            self._n = sum(m.n for m in self.meta_)
            self._bytes = sum(m.chars for m in self.meta_)

    def _fetch_blocks(self, gather_signatures: bool = False) -> None:
        """The engine's own ``finish`` path: content hashes and lengths (16 B per document) to
        the client, signatures (unless ``gather_signatures``) and evidence left on the workers
        behind ``take``."""
        with cluster_errors():
            hashes = self.client.gather([b.hashes for b in self._blocks])
        for block, m, h in zip(self._blocks, self.meta_, hashes, strict=True):
            _tally(self.moved_, "hashes_lengths", h.canonical.nbytes + h.lengths.nbytes)
            sigs: Signatures = RemoteSignatures(
                m.sig_template, ref=block.signatures, rows=m.n, size=m.sig_nbytes, moved=self.moved_
            )
            if gather_signatures:
                sigs = sigs.take(np.arange(m.n, dtype=np.int64))
            self._append_block(
                h.canonical,
                h.lengths,
                sigs,
                RemoteEvidence(block.evidence, m.n, m.ev_nbytes, self.moved_),
            )

    def fetch_texts(self, docs: IntArray) -> list[str]:
        """Texts of documents ``docs`` (sorted positions), read again from their partitions."""
        if not self._parts:
            raise NeardupError("fetch_texts needs partitions; batches fed by partial_fit are gone")
        import dask

        lengths = self.partition_lengths
        starts = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        tasks = []
        for p, (lo, hi) in enumerate(itertools.pairwise(starts.tolist())):
            i, j = np.searchsorted(docs, [lo, hi])
            if j > i:
                rows = docs[i:j] - lo
                tasks.append(dask.delayed(_take_texts)(self._parts[p], rows, self._text_field))
        with cluster_errors():
            parts = self.client.gather(self.client.compute(tasks))
        texts = [t for part in parts for t in part]
        _tally(self.moved_, "texts", sum(len(t.encode("utf-8")) for t in texts))
        return texts

    def finish(
        self, key: npt.ArrayLike | None = None, fetch_texts: FetchTexts | None = None
    ) -> DaskDeduplicator:
        """Wait for the blocks, then candidates, verification and removal on the workers (the
        engine's own ``finish`` in the client for methods without candidate keys)."""
        self.collect()
        if fetch_texts is None and self._parts:
            fetch_texts = self.fetch_texts
        on_workers = self.params.removal == "components" and self.pairs == "removal"
        if self._n and keyed(self.params, self.idf) and on_workers:
            with cluster_errors():
                self._finish_on_workers(key, fetch_texts)
        else:
            # Keep-aware removal against kept leaders runs in the client for now, on the
            # signatures gathered from the workers: the same answer as the local engine.
            self._fetch_blocks(gather_signatures=self.params.removal == "keep-aware")
            super().finish(key, fetch_texts)
        self._blocks.clear()
        return self

    def _shuffle_partitions(self, workers: Sequence[str]) -> int:
        """``shuffle_partitions`` for these blocks and the workers' memory limit."""
        from .dask_shuffle import memory_limit

        sig = sum(m.sig_nbytes for m in self.meta_)
        key_bytes = int(sig * KEY_BYTES_PER_SIGNATURE_BYTE)
        limit = memory_limit(self.client, workers)
        return shuffle_partitions(self._n, len(workers), key_bytes, limit)

    def _finish_on_workers(self, key: npt.ArrayLike | None, fetch_texts: FetchTexts | None) -> None:
        p = self.params
        n = self._n
        priority = None
        if p.keep == "field":
            priority = self._priority(n, np.zeros(0, dtype=np.int64), key)
        workers = sorted(self.client.scheduler_info().get("workers", {}))
        done = finish_on_workers(
            self.client,
            self._blocks,
            self.partition_lengths,
            p,
            self.idf,
            priority,
            fetch_texts,
            self.shuffle_partitions or self._shuffle_partitions(workers),
            workers,
            self.bundle_bytes,
        )
        comps = done.components
        _tally(self.moved_, "component results", sum(nbytes_of(c) for c in comps))
        _tally(self.moved_, "pairs", nbytes_of(done.pairs))
        self.shuffled_ = done.moved
        self.rounds_ = done.counts["rounds"]
        # The final merge: documents outside components are kept, alone, their own group.
        idx = np.arange(n, dtype=np.int64)
        self.kept_ = np.ones(n, dtype=np.bool_)
        self.duplicate_of_ = np.full(n, -1, dtype=np.int64)
        self.duplicate_score_ = np.full(n, np.nan)
        self.clusters_ = idx.copy()
        for comp in comps:
            self.kept_[comp.doc] = comp.kept
            self.duplicate_of_[comp.doc] = comp.duplicate_of
            self.duplicate_score_[comp.doc] = comp.score
            self.clusters_[comp.doc] = comp.label
        self.groups_ = idx
        self.groups_[done.dup] = done.first
        self.empty_ = np.zeros(n, dtype=np.bool_)
        start = 0
        for m in self.meta_:
            self.empty_[start + m.empty] = True
            start += m.n
        self.pairs_ = done.pairs
        c = done.counts
        held = sum(m.sig_nbytes + m.ev_nbytes + 16 * m.n for m in self.meta_)
        self.stats_ = DedupStats(
            documents=n,
            empty=int(self.empty_.sum()),
            exact_duplicates=c["exact_duplicates"],
            candidate_pairs=c["candidate_pairs"],
            accepted_pairs=c["accepted_pairs"],
            clusters=c["clusters"],
            removed=int(n - self.kept_.sum()),
            seconds=time.perf_counter() - self._started,
            bytes_in=self._bytes,
            bytes_per_doc_in_memory=held / max(n, 1),
            big_buckets=c["big_buckets"],
            big_bucket_docs=c["big_bucket_docs"],
            rechecked_pairs=c["rechecked_pairs"],
            bucket_checks=c.get("bucket_checks", 0),
            bucket_pairs_found=c.get("bucket_pairs_found", 0),
            bucket_unresolved=c.get("bucket_unresolved", 0),
        )
        self._finished = True


def shuffle_partitions(n: int, workers: int, key_bytes: int = 0, limit: int = 0) -> int:
    """Partitions of each shuffle: as few as fit, since every partition of every exchange is
    tasks the scheduler runs (one per worker took 0.8 s less than 8 at 1M on two workers).
    A key partition's records (``key_bytes`` in all) take at most ``SHUFFLE_SHARE`` of the
    workers' memory ``limit``, or without one a partition holds the keys of
    ``DOCS_PER_SHUFFLE_PARTITION`` documents; rounded up to a multiple of the workers, so
    each takes as many (7 on 2 workers left one idle for 1/7 of every stage)."""
    w = max(workers, 1)
    if limit > 0:
        need = -(-max(key_bytes, 1) // max(int(limit * SHUFFLE_SHARE), 1))
    else:
        need = -(-max(n, 1) // DOCS_PER_SHUFFLE_PARTITION)
    return w * -(-need // w)


# -- clusters -------------------------------------------------------------------------------------
@contextlib.contextmanager
def connect(
    spec: str | Any,
    info: Callable[[str], None] | None = None,
    memory_limit: str | None = None,
) -> Iterator[Any]:
    """A Client for ``spec``: ``"local:N"`` (a LocalCluster of N one-thread worker processes,
    closed afterwards), a scheduler address (``"tcp://host:8786"``), or a Client as it is.

    ``info`` receives one line with the dashboard link. Unreachable schedulers raise
    NeardupError within ``CONNECT_TIMEOUT`` seconds.
    """
    distributed = _import_distributed()
    if not isinstance(spec, str):
        yield spec
        return
    if spec.startswith("local"):
        _, _, count = spec.partition(":")
        try:
            n = int(count) if count else os.cpu_count() or 1
        except ValueError:
            n = 0
        if n < 1:
            raise ParamError(f"--dask {spec!r}: write local:N with N >= 1 worker processes")
        with (
            distributed.LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                memory_limit=memory_limit or "auto",
                dashboard_address=":0",
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            if info is not None:
                info(f"Dask: local cluster of {n} workers, dashboard {client.dashboard_link}")
            yield client
        return
    if "://" not in spec:
        raise ParamError(
            f"--dask {spec!r}: give local:N or a scheduler address such as tcp://host:8786"
        )
    try:
        client = distributed.Client(spec, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise NeardupError(
            f"cannot reach the Dask scheduler at {spec} ({type(exc).__name__}: {exc}); check "
            "the address and that `dask scheduler` is running there"
        ) from exc
    with client:
        if info is not None:
            workers = len(client.scheduler_info().get("workers", {}))
            info(f"Dask: {spec}, {workers} workers, dashboard {client.dashboard_link}")
        yield client


# -- whole jobs over dask collections -------------------------------------------------------------
@dataclass
class DaskDedupResult:
    """The fitted deduplicator, the ids (in partition order) and, if written, the manifest."""

    dedup: DaskDeduplicator
    ids: list[str]
    manifest: dict[str, Any] = field(default_factory=dict)


def dedup(
    collection: Any,
    params: DedupParams | None = None,
    *,
    client: Any = None,
    text_field: str = "text",
    id_field: str | None = "id",
    key_field: str | None = None,
    output_dir: str | Path | None = None,
    clusters: str | None = None,
    pairs: str | None = None,
    all_pairs: bool = False,
) -> DaskDedupResult:
    """Deduplicate a ``dask.bag`` (of strings or records) or ``dask.dataframe`` on a cluster.

    Texts come from ``text_field`` (records, columns) or are the bag's items; ids from
    ``id_field`` when every partition has it, else the global position. ``key_field`` with
    ``params.keep == "field"`` chooses the survivor. Results equal
    ``Deduplicator(params).fit(texts)`` byte for byte. ``output_dir``: the kept records of
    each partition (``part-NNNNN.parquet`` for a dataframe, ``part-NNNNN.jsonl`` for a bag),
    then ``manifest.json``, all appearing at once; ``clusters``, ``pairs``: the files the CLI
    writes.
    """
    params = params or DedupParams()
    if needs_fit(params):
        raise ParamError(
            "SimHash IDF weighting learns from the whole corpus first; on Dask use "
            "weighting='binary', or fit the IDF table and give it to DaskDeduplicator(idf=...)"
        )
    if params.keep == "field" and not key_field:
        raise ParamError("keep='field' needs the field to read: key_field=NAME")
    if client is None:
        distributed = _import_distributed()
        client = distributed.get_client()
    parts = list(collection.to_delayed())
    dd = DaskDeduplicator(params, client)
    dd.pairs = "all" if all_pairs else "removal"
    dd.feed_partitions(parts, text_field, id_field, key_field)
    dd.collect()
    ids: list[str] = []
    have_ids = all(m.ids is not None for m in dd.meta_)
    for m in dd.meta_:
        start = len(ids)
        ids.extend(m.ids if have_ids and m.ids is not None else map(str, range(start, start + m.n)))
    if len(set(ids)) != len(ids):
        raise InputError(
            f"the ids in {id_field!r} are not unique; make them unique or id_field=None"
        )
    ranks = None
    if key_field:
        keys = [k for m in dd.meta_ for k in (m.keys or [None] * m.n)]
        ranks = key_ranks(keys, params.keep_prefer)
    dd.finish(ranks)
    result = DaskDedupResult(dd, ids)
    from .run import write_results

    write_results(dd, ids, clusters or None, pairs or None, all_pairs)
    if output_dir is not None:
        frame = hasattr(collection, "columns")
        result.manifest = write_partitions(dd, parts, output_dir, frame)
    return result


def _write_part(part: Any, kept: npt.NDArray[np.bool_], path: str) -> int:
    """The kept records of one partition, in its own shape (Parquet or JSON lines)."""
    part = _materialize(part)
    if hasattr(part, "columns"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(part[kept], preserve_index=False)
        pq.write_table(table, path)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            for item, keep in zip(list(part), kept.tolist(), strict=True):
                if keep:
                    record = item if isinstance(item, dict) else {"text": item}
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return int(kept.sum())


def write_partitions(
    dd: DaskDeduplicator, parts: Sequence[Any], out: str | Path, frame: bool = False
) -> dict[str, Any]:
    """Each partition's kept records to ``out/part-NNNNN.*`` (written by the workers, which
    read their partition again), then ``manifest.json``; the folder appears only when all are
    written. Returns the manifest. ``out`` must be on storage the workers share."""
    import dask

    lengths = dd.partition_lengths
    starts = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    with atomic_dir(out) as tmp:
        names, tasks = [], []
        for p, part in enumerate(parts):
            name = f"part-{p:05d}.{'parquet' if frame else 'jsonl'}"
            names.append(name)
            kept = dd.kept_[starts[p] : starts[p + 1]]
            tasks.append(dask.delayed(_write_part)(part, kept, str(tmp / name)))
        with cluster_errors():
            written = dd.client.gather(dd.client.compute(tasks))
        manifest = {
            "complete": True,
            "documents": int(starts[-1]),
            "kept": int(dd.kept_.sum()),
            "params": dd.params.fingerprint(),
            "partitions": [
                {"file": n, "documents": int(length), "kept": int(k)}
                for n, length, k in zip(names, lengths, written, strict=True)
            ],
        }
        with atomic_write(tmp / MANIFEST, "w") as fh:
            json.dump(manifest, fh, indent=1)
            fh.write("\n")
    return manifest
