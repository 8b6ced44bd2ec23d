"""Whole jobs: inputs on disk -> outputs on disk. The CLI and the service call these, nothing else.

``dedup_source`` reads the inputs once (a reader thread parses ahead while the kernels run),
feeds the ``Deduplicator``, reads again only what a stage needs (the IDF fit, the borderline
texts of hybrid verification) and writes the kept records, clusters, pairs and summary.
Every output is checked before the first input byte is read (``plan_outputs``: never an input,
never twice, its folder writable), and all of them are renamed into place together at the end,
or none is: a failed job leaves no new output.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .errors import InputError, ParamError
from .io import (
    DocBatch,
    Source,
    atomic_write,
    key_ranks,
    open_source,
    plan_outputs,
    write_clusters,
    write_pairs,
)
from .io._convert import OutFmt, output_format
from .io._prefetch import ordered_map, prefetch
from .io._report import MAX_RECORD_SIZE
from .params import DecontaminateParams, DedupParams, check_int, params_json
from .progress import Progress

if TYPE_CHECKING:  # the engine (and Numba with it) loads once a job's inputs are open
    from .dask import JobOptions
    from .engine import Deduplicator
    from .index.jobs import add_source as index_add_source  # noqa: F401 - see __getattr__
    from .index.jobs import dedup_source as dedup_index_source  # noqa: F401
    from .index.jobs import query_source as index_query_source  # noqa: F401
    from .io._outputs import OutputPlan
    from .io._source import Inputs


#: Bytes of input per batch by default (--batch-size): a few MB, so a corpus of large
#: documents still gives every core batches, and one-line texts batches of ~50,000.
BATCH_BYTES = 4 << 20


@dataclass(frozen=True)
class ReadOptions:
    """How inputs are read: format, fields, what to do with bad records, batch size."""

    format: Literal["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"] | None = None
    text_field: str = "text"
    id_field: str = "id"
    on_error: Literal["stop", "skip"] = "stop"
    key_field: str | None = None
    #: Documents per batch; None (the default): batches of ``batch_bytes`` of input each.
    batch_size: int | None = None
    #: Bytes of input per batch when ``batch_size`` is None: a JSONL file's parser reads this
    #: much at a time and its block is the batch, so every core has work whatever the length
    #: of the documents, and memory holds ``jobs`` batches of texts.
    batch_bytes: int = BATCH_BYTES
    #: The largest record read, in bytes; a larger one is a bad record found before it is held.
    max_record_size: int = MAX_RECORD_SIZE

    def __post_init__(self) -> None:
        if self.batch_size is not None:
            check_int("batch_size (--batch-size)", self.batch_size, 1, 2**31)
        check_int("batch_bytes (--batch-size)", self.batch_bytes, 1 << 10, 1 << 40)
        check_int("max_record_size (--max-record-size)", self.max_record_size, 1, 1 << 62)

    def batches(self, source: Source) -> Iterator[DocBatch]:
        """The source's pass 1 in the batches these options ask for."""
        if self.batch_size is not None:
            return source.batches(self.batch_size)
        return source.batches(None, self.batch_bytes)

    def open(
        self, inputs: Inputs, id_field: str | None = None, key_field: str | None = None
    ) -> Source:
        """``open_source`` with these options (``id_field``, ``key_field``: other fields)."""
        return open_source(
            inputs,
            self.format,
            text_field=self.text_field,
            id_field=id_field or self.id_field,
            on_error=self.on_error,
            key_field=key_field,
            max_record_size=self.max_record_size,
        )

    def cluster_job(
        self,
        inputs: str | Path | Sequence[str | Path],
        work_dir: str | None,
        restart: bool,
        storage_options: dict[str, Any] | None,
    ) -> tuple[list[str], JobOptions]:
        """The input paths and job options of a cluster run (JSONL only)."""
        from .dask import JobOptions

        if self.format not in (None, "jsonl"):
            raise ParamError(f"a cluster run reads JSONL files, not {self.format}")
        paths = [str(inputs)] if isinstance(inputs, str | Path) else [str(p) for p in inputs]
        return paths, JobOptions(
            text_field=self.text_field,
            id_field=self.id_field,
            on_error=self.on_error,
            max_record_size=self.max_record_size,
            work_dir=work_dir,
            restart=restart,
            storage_options=storage_options or {},
        )

    @property
    def docs_hint(self) -> int:
        """Documents per chunk where a count is needed (texts read again, IDF fitting)."""
        return self.batch_size or 5000


@dataclass(frozen=True)
class DedupOutputs:
    """Where results go; None skips one. ``all_pairs``: the pairs file lists every pair at or
    above the threshold (exact-duplicate groups expanded), not the pairs behind each removal."""

    kept: str | None = None
    clusters: str | None = None
    pairs: str | None = None
    summary_json: str | None = None
    all_pairs: bool = False


@dataclass
class DedupResult:
    """What a job did: the fitted deduplicator, the ids, and the summary (also as JSON)."""

    dedup: Deduplicator
    ids: Sequence[str]
    summary: dict[str, Any] = field(default_factory=dict)
    problems: str = ""


def default_jobs() -> int:
    """Threads for signing batches: every core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _check_jobs(jobs: int | None) -> int:
    return default_jobs() if jobs is None else check_int("jobs (--jobs)", jobs, 1, 1024)


#: Share of the available memory that per-document blocks may hold by default.
MEMORY_SHARE = 1 / 8


def available_memory() -> int:
    """Bytes of memory available to new work now (Linux ``MemAvailable``: free memory plus
    the page cache that can be dropped); the physical memory where that is not known."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 << 30


def default_memory_limit() -> int:
    """An eighth of the memory available when the job starts: what per-document blocks
    (signatures and evidence, ~780 B a document with the defaults) may hold in memory before
    the next ones go to disk, memory-mapped. The rest is left for what cannot spill (ids,
    hashes and lengths, ~50 B a document, and ``finish``'s working set, a few hundred bytes a
    document at its peak) and for the rest of the machine (benchmarks/README.md has a 10M
    documents run with the default)."""
    return int(available_memory() * MEMORY_SHARE)


def parse_size(text: str) -> int:
    """'800M', '4G', '1.5G' or a number of bytes -> bytes (ParamError when unreadable)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    value = text.strip().upper().removesuffix("B")
    unit = value[-1:] if value[-1:] in units else ""
    try:
        number = float(value[: len(value) - len(unit)] if unit else value)
    except ValueError:
        raise ParamError(f"a size must look like 800M, 4G or 1000000, got {text!r}") from None
    if not number >= 0:
        raise ParamError(f"a size must not be negative, got {text!r}")
    return int(number * units[unit])


def _peak_memory_mb() -> float:
    """Peak resident memory of this process in MB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive in the block are handled right after it, never inside.

    An interrupt raised while CPython runs code compiled from a string (dataclasses build their
    methods that way as a module is imported) marks the process to exit by SIGINT even after
    the command caught it, unwound and chose its status; deferred, it keeps 130 and its message.
    The handlers only note the signal meanwhile (a signal mask would not do: another thread,
    such as a BLAS worker, may receive the signal and the handler still runs here at once).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if handler is not None and handler != signal.SIG_IGN:  # None: not set from Python
            saved[signum] = handler
            signal.signal(signum, lambda number, frame: pending.append(number))
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
        if pending:  # the first one, as its own handler would have taken it
            first = saved[pending[0]]
            if callable(first):
                first(pending[0], None)
            else:  # the default action
                signal.raise_signal(pending[0])


def _build(make: Callable[[DedupParams], Deduplicator] | None, params: DedupParams) -> Deduplicator:
    """The job's deduplicator (``make``, default ``Deduplicator``), built once its inputs are
    open: bad arguments and unreadable inputs never load the engine and Numba. Loading and
    building it imports modules (the engine, the planner), so interrupts wait until it is done.
    """
    with _signals_deferred():
        if make is None:
            from .engine import Deduplicator

            make = Deduplicator
        return make(params)


def _fetch_texts(source: Source, docs: np.ndarray, batch_size: int, jobs: int) -> list[str]:
    """The texts of documents ``docs`` (sorted positions), read again from the source."""
    return source.texts_at(docs, batch_size, jobs)


def dedup_source(
    inputs: str | Sequence[str],
    params: DedupParams,
    outputs: DedupOutputs,
    read: ReadOptions | None = None,
    progress: bool = False,
    warn: Callable[[str], None] | None = None,
    jobs: int | None = None,
    make: Callable[[DedupParams], Deduplicator] | None = None,
    memory_limit: int | None = None,
) -> DedupResult:
    """Deduplicate the documents of ``inputs`` (paths, folders or "-") into ``outputs``.

    The kept records are written in the input's own format with every field preserved; the
    clusters file lists every document of a cluster of two or more with the kept document it
    duplicates and the score; the pairs file lists accepted pairs. Returns the summary.
    ``make`` builds the deduplicator (None: ``Deduplicator``; ``dedup_source_dask`` gives one
    that runs on Dask).
    """
    read = read or ReadOptions()
    jobs = _check_jobs(jobs)
    if params.keep == "field" and not read.key_field:
        raise ParamError("keep='field' needs the field to read: ReadOptions(key_field=NAME)")
    started = time.perf_counter()
    with read.open(inputs, key_field=read.key_field) as source:
        # Every output is checked against the inputs and each other before anything is read.
        plan, kept_fmt = plan_dedup_outputs(inputs, outputs, source.fmt)
        dedup = _build(make, params)
        from ._kernels import _jit

        if _jit.mode() == "python":
            jobs = 1  # interpreted kernels hold the GIL: threads would only take turns
        dedup.memory_limit = default_memory_limit() if memory_limit is None else memory_limit
        dedup.jobs = jobs
        dedup.pairs = "all" if outputs.all_pairs else "removal"
        from .methods import needs_fit

        if needs_fit(params):
            from .simhash import fit_idf_texts

            texts = (t for batch in read.batches(source) for t in batch.texts)
            dedup.idf = fit_idf_texts(texts, params.simhash_params(), read.docs_hint)
        # Percentages only where input size and bytes read are the same measure (not gzip).
        paths = [inputs] if isinstance(inputs, str) else list(inputs)
        gzipped = any(str(x).endswith(".gz") for x in paths)
        bar = Progress(progress, None if gzipped else source.input_bytes, desc=_READING)
        keys: list[object] = []
        try:
            # --jobs 1 computes on one core: no read-ahead thread beside the signing.
            batches: Iterator[DocBatch] = read.batches(source)
            if jobs > 1:
                batches = prefetch(batches)
            for batch in dedup.feed(batches, lambda b: b.texts, lambda b: b.nbytes, jobs):
                if batch.keys is not None:
                    keys.extend(batch.keys)
                bar.update(dedup.n_docs, dedup.n_bytes)
            _refuse_all_skipped(source)
            ids: Sequence[str] = source.ids if source.ids is not None else []
            ranks = key_ranks(keys, params.keep_prefer) if read.key_field else None
            bar.stage(_PAIRS)

            def fetch(docs: np.ndarray) -> list[str]:
                bar.stage(f"verifying: reading {len(docs):,} texts again")
                texts = _fetch_texts(source, docs, read.docs_hint, jobs)
                bar.stage(_PAIRS)
                return texts

            dedup.finish(ranks, fetch)
            bar.stage("writing")
            _jit.settle()  # an interpreted run that was too slow restarts before writing
            # Said after settle(): a restart would otherwise say it twice.
            if read.key_field and source.n_docs and source.missing_keys == source.n_docs and warn:
                warn(
                    f"no document has the field {read.key_field!r}; clusters keep their first "
                    "member"
                )
            with plan.commit():  # every output appears at the end, together, or none does
                written = None
                if outputs.kept:
                    written = source.write_kept(dedup.kept_, plan["-o"], kept_fmt)
                write_results(
                    dedup,
                    ids,
                    plan["--clusters"] if outputs.clusters else None,
                    plan["--pairs"] if outputs.pairs else None,
                    outputs.all_pairs,
                )
                summary = _summary(dedup, source, written, started, params)
                if outputs.summary_json:
                    with atomic_write(plan["--summary-json"], "w") as fh:
                        json.dump(summary, fh, indent=1)
                        fh.write("\n")
        finally:
            bar.close()
        errors = source.errors
    return DedupResult(dedup, ids, summary, errors.summary() if errors.total else "")


#: The stage names a dedup run's progress line shows.
_READING = "reading and signing"
_PAIRS = "candidates and verification"


def _refuse_all_skipped(source: Source) -> None:
    """An input of which every record was skipped as bad (``--on-error skip``) is an error,
    not an empty result: most often the options do not fit the input (a wrong --text-field)."""
    errors = source.errors
    if source.n_docs or not errors.total:
        return
    kinds = ", ".join(f"{k} {n:,}" for k, n in sorted(errors.counts.items()))
    raise InputError(
        f"every record of the input was skipped as bad ({kinds}), so nothing was written; "
        f"first: {errors.examples[0]}"
    )


def plan_dedup_outputs(
    inputs: Inputs, outputs: DedupOutputs, input_fmt: str
) -> tuple[OutputPlan, OutFmt | None]:
    """A dedup run's outputs checked against the inputs and each other before anything is
    read, and the kept file's format (from its name)."""
    plan = plan_outputs(
        [inputs] if isinstance(inputs, str) else inputs,  # type: ignore[arg-type]
        {
            "-o": outputs.kept,
            "--clusters": outputs.clusters,
            "--pairs": outputs.pairs,
            "--summary-json": outputs.summary_json,
        },
        folders={"-o"} if _kept_format(outputs.kept, input_fmt) == "folder" else (),
    )
    return plan, _kept_format(outputs.kept, input_fmt, strict=True)


def _kept_format(out: str | None, input_fmt: str, strict: bool = False) -> OutFmt | None:
    """The kept file's format from its name (None without one). Not ``strict``: None for a
    name that says nothing too, so the output checks that protect the inputs speak first."""
    if not out:
        return None
    try:
        return output_format(out, input_fmt)
    except ParamError:
        if strict:
            raise
        return None


def write_results(
    dedup: Deduplicator,
    ids: Sequence[str],
    clusters: str | Path | None,
    pairs: str | Path | None,
    all_pairs: bool = False,
) -> None:
    """The clusters file (every document of a cluster of two or more, with the kept document it
    duplicates and the score) and the pairs file (``all_pairs``: exact groups expanded)."""
    if clusters is not None:
        sizes = np.bincount(dedup.clusters_, minlength=len(ids))
        rows = np.flatnonzero(sizes[dedup.clusters_] >= 2)
        write_clusters(
            clusters,
            ids,
            dedup.clusters_,
            dedup.kept_,
            rows,
            duplicate_of=dedup.duplicate_of_,
            score=dedup.duplicate_score_,
        )
    if pairs is not None:
        a, b, score = dedup.all_pairs() if all_pairs else dedup.pairs_
        write_pairs(pairs, ids, a, b, score)


def _summary(
    dedup: Deduplicator, source: Source, written: int | None, started: float, params: DedupParams
) -> dict[str, Any]:
    """The job's figures, for the printed summary and the summary JSON."""
    seconds = time.perf_counter() - started
    stats = dedup.stats_
    return {
        **stats.as_dict(),
        "skipped_records": source.errors.total,
        "kept": int(dedup.kept_.sum()),
        "written": written,
        "seconds": round(seconds, 3),
        "mb_per_s": round(stats.bytes_in / 1e6 / max(seconds, 1e-9), 2),
        "peak_memory_mb": round(_peak_memory_mb(), 1),
        "method": dedup.method.describe(),
        "params": params_json(params),
        "params_fingerprint": params.fingerprint(),
        "tokens": params.shingle.tokens,
        "hamming_plan": dedup.hamming_plan_,
    }


def dedup_cluster(
    inputs: str | Sequence[str],
    params: DedupParams,
    outputs: DedupOutputs,
    read: ReadOptions | None = None,
    cluster: str | Any = "local",
    work_dir: str | None = None,
    restart: bool = False,
    storage_options: dict[str, Any] | None = None,
    info: Callable[[str], None] | None = None,
    worker_memory: int | None = None,
) -> DedupResult:
    """``dedup_source`` on a Dask cluster: the workers read the inputs (paths, folders, globs or
    fsspec URLs) and write part files into the output folders, with a manifest each; the same
    records, clusters and pairs as one machine once the parts are concatenated. ``cluster``:
    ``"local:N"``, a scheduler address, or a Client; ``work_dir`` keeps finished stages so the
    same command resumes (see ``neardup.dask``); ``worker_memory``: each ``local:N`` worker's
    memory limit in bytes (Dask's default otherwise)."""
    from .dask import ClusterOutputs, cluster_errors, connect
    from .dask.job import run_job

    read = read or ReadOptions()
    if read.key_field:
        raise ParamError(
            "--keep-field is not available on a cluster yet; use --keep first or longest, or "
            "run without --dask"
        )
    paths, options = read.cluster_job(inputs, work_dir, restart, storage_options)
    folders = ClusterOutputs(
        outputs.kept, outputs.clusters, outputs.pairs, outputs.summary_json, outputs.all_pairs
    )
    with connect(cluster, info, worker_memory) as client, cluster_errors():
        summary = run_job(paths, params, folders, options, client, info)
    summary["peak_memory_mb"] = round(_peak_memory_mb(), 1)
    problems = summary["problems"]
    report = ""
    if problems["total"]:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(problems["counts"].items()))
        report = f"skipped {problems['total']} problems ({kinds}); first: {problems['examples'][0]}"
    return DedupResult(None, [], summary, report)  # type: ignore[arg-type]


# -- benchmark decontamination -----------------------------------------------------------------


@dataclass(frozen=True)
class DecontaminateOutputs:
    """Where a decontamination's results go; None skips one. ``clean``: the training records
    that contain no benchmark item (input format, every field, input order); ``matches``: one
    JSON line per (training document, benchmark item) pair at or above the containment."""

    clean: str | None = None
    matches: str | None = None
    summary_json: str | None = None


def _read_benchmark(
    inputs: str | Sequence[str], read: ReadOptions
) -> tuple[list[str], list[str], int]:
    """The benchmark's ids and texts, whole (a benchmark is small), and its skipped records."""
    with read.open(inputs) as bench:
        texts: list[str] = []
        for batch in read.batches(bench):
            texts.extend(batch.texts)
        ids = list(bench.ids) if bench.ids is not None else []
        skipped = bench.errors.total
    if not texts:
        raise ParamError(
            f"no benchmark items in {', '.join(_paths(inputs))}; check --against and "
            f"--against-text-field (reading the field {read.text_field!r})"
        )
    return ids, texts, skipped


def decontaminate_source(
    inputs: str | Sequence[str],
    against: str | Sequence[str],
    params: DecontaminateParams,
    outputs: DecontaminateOutputs,
    read: ReadOptions | None = None,
    against_read: ReadOptions | None = None,
    progress: bool = False,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Drop every training document of ``inputs`` that contains some benchmark item of
    ``against`` at ``params.containment`` or more; write the rest and the matches.

    The benchmark is read whole; the training documents stream in batches, ``jobs`` batches
    shingled and looked up at once in threads (the outputs are the same for any number and any
    batch size). Every output is checked against every input before anything is read, and all
    appear together at the end, or none does. Returns the summary.
    """
    from .decontaminate import Decontaminator, match_lines
    from .io._atomic import open_output

    read = read or ReadOptions()
    against_read = against_read or read
    jobs = _check_jobs(jobs)
    if "-" in _paths(inputs) and "-" in _paths(against):
        raise ParamError("standard input (-) can hold the training data or the benchmark, not both")
    started = time.perf_counter()
    with read.open(inputs) as source:
        clean_fmt = _kept_format(outputs.clean, source.fmt)
        plan = plan_outputs(
            [*_paths(inputs), *_paths(against)],
            {
                "-o": outputs.clean,
                "--matches": outputs.matches,
                "--summary-json": outputs.summary_json,
            },
            folders={"-o"} if clean_fmt == "folder" else (),
        )
        clean_fmt = _kept_format(outputs.clean, source.fmt, strict=True)
        bench_ids, bench_texts, bench_skipped = _read_benchmark(against, against_read)
        with _signals_deferred():  # the kernels' modules load whole before an interrupt lands
            finder = Decontaminator(bench_texts, params)
        paths = _paths(inputs)
        gzipped = any(str(x).endswith(".gz") for x in paths)
        bar = Progress(progress, None if gzipped else source.input_bytes)
        flags: list[np.ndarray] = []
        pairs = docs = nbytes = 0
        matched_items = np.zeros(len(finder), dtype=bool)
        with plan.commit():  # every output appears at the end, together, or none does
            with contextlib.ExitStack() as stack:
                sink = (
                    stack.enter_context(open_output(plan["--matches"])) if outputs.matches else None
                )
                batches: Iterator[DocBatch] = read.batches(source)
                if jobs > 1:
                    batches = prefetch(batches)
                try:
                    for batch, found in ordered_map(lambda b: finder.scan(b.texts), batches, jobs):
                        flags.append(found.contaminated(len(batch)))
                        matched_items[found.item] = True
                        pairs += len(found)
                        docs += len(batch)
                        nbytes += batch.nbytes
                        if sink is not None and len(found):
                            sink.write(match_lines(found, batch.ids, bench_ids))
                        bar.update(docs, nbytes)
                finally:
                    bar.close()
            contaminated = np.concatenate(flags) if flags else np.zeros(0, dtype=bool)
            written = (
                source.write_kept(~contaminated, plan["-o"], clean_fmt) if outputs.clean else None
            )
            seconds = time.perf_counter() - started
            summary = {
                "documents": docs,
                "contaminated": int(contaminated.sum()),
                "kept": int(docs - contaminated.sum()),
                "written": written,
                "matches": pairs,
                "benchmark_items": len(finder),
                "benchmark_items_matched": int(matched_items.sum()),
                "benchmark_items_without_shingles": int((finder.sizes_ == 0).sum()),
                "skipped_records": source.errors.total,
                "skipped_benchmark_records": bench_skipped,
                "seconds": round(seconds, 3),
                "mb_per_s": round(nbytes / 1e6 / max(seconds, 1e-9), 2),
                "peak_memory_mb": round(_peak_memory_mb(), 1),
                "params": params.fingerprint(),
            }
            if outputs.summary_json:
                with atomic_write(plan["--summary-json"], "w") as fh:
                    json.dump(summary, fh, indent=1)
                    fh.write("\n")
    return summary


def decontaminate_cluster(
    inputs: str | Sequence[str],
    against: str | Sequence[str],
    params: DecontaminateParams,
    outputs: DecontaminateOutputs,
    read: ReadOptions | None = None,
    against_read: ReadOptions | None = None,
    cluster: str | Any = "local",
    work_dir: str | None = None,
    restart: bool = False,
    storage_options: dict[str, Any] | None = None,
    info: Callable[[str], None] | None = None,
    worker_memory: int | None = None,
) -> dict[str, Any]:
    """``decontaminate_source`` on a Dask cluster: the workers read the training data (JSONL
    paths, folders, globs or fsspec URLs) block by block and write clean and matches part files
    into the output folders, with a manifest each; the benchmark is read here. The same records
    and lines as one machine once the parts are concatenated. ``cluster``, ``work_dir``,
    ``restart``, ``worker_memory``: as for ``dedup_cluster``."""
    from .dask import DecontaminateFolders
    from .dask import decontaminate as run_cluster

    read = read or ReadOptions()
    paths, options = read.cluster_job(inputs, work_dir, restart, storage_options)
    folders = DecontaminateFolders(outputs.clean, outputs.matches, outputs.summary_json)
    summary = run_cluster(
        paths, against, params, folders, options, cluster, info, against_read, worker_memory
    )
    summary["peak_memory_mb"] = round(_peak_memory_mb(), 1)
    return summary


# -- the standing index -------------------------------------------------------------------------


def _paths(inputs: str | Sequence[str]) -> list[str]:
    """The inputs as a list of names ("-" included), for the output checks."""
    return [inputs] if isinstance(inputs, str) else list(inputs)


#: The index jobs, by their names here; they live in ``neardup.index.jobs`` and load with the
#: index (and Numba), so only when one is asked for.
_INDEX_JOBS = {
    "index_add_source": "add_source",
    "index_query_source": "query_source",
    "dedup_index_source": "dedup_source",
}


def __getattr__(name: str) -> Any:
    """``index_add_source``, ``index_query_source``, ``dedup_index_source``: loaded on first use."""
    if name not in _INDEX_JOBS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _signals_deferred():  # the index and the engine load whole before an interrupt lands
        from .index import jobs
    return getattr(jobs, _INDEX_JOBS[name])
