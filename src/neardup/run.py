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
import re
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._kernels import _jit
from ._prefetch import prefetch
from ._types import IntArray
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
from .io._open import check_inputs
from .io._report import MAX_RECORD_SIZE, ErrorReport
from .params import DEDUP_EXAMPLE, DedupParams, check_int, check_kind, params_json
from .progress import Progress

if TYPE_CHECKING:  # the engine (and Numba with it) loads once a job's inputs are open
    from .engine import Deduplicator
    from .io._outputs import OutputPlan
    from .io._source import Inputs


#: Bytes of input per batch by default (--batch-size): a few MB, so a corpus of large
#: documents still gives every core batches, and one-line texts batches of ~50,000.
BATCH_BYTES = 4 << 20
#: The largest number of documents a batch may be asked to hold (--batch-size 5000).
BATCH_DOCS_MAX = 2**31
#: The smallest and largest batch in bytes (--batch-size 1K to 1T).
BATCH_BYTES_RANGE = (1 << 10, 1 << 40)


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
            check_int("batch_size (--batch-size)", self.batch_size, 1, BATCH_DOCS_MAX)
        check_int("batch_bytes (--batch-size)", self.batch_bytes, *BATCH_BYTES_RANGE)
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


def _check_read(read: ReadOptions | None, name: str = "read") -> ReadOptions:
    """The read options, the defaults for None; ParamError naming the argument for another kind."""
    if read is None:
        return ReadOptions()
    check_kind(read, ReadOptions, "ReadOptions(...) or None", name)
    return read


def _check_dedup_job(
    inputs: str | Sequence[str],
    params: DedupParams,
    outputs: DedupOutputs,
    read: ReadOptions | None,
) -> ReadOptions:
    """A deduplication job's arguments checked before any input is read (None or a dict where
    an object belongs failed deep inside); the read options, the defaults for None."""
    check_inputs(inputs)
    check_kind(params, DedupParams, DEDUP_EXAMPLE)
    check_kind(outputs, DedupOutputs, "DedupOutputs(kept=PATH, ...)", "outputs")
    options = _check_read(read)
    if params.keep == "field" and not options.key_field:
        raise ParamError("keep='field' needs the field to read: ReadOptions(key_field=NAME)")
    return options


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


def _load_engine(prepare: Callable[[], object] | None = None) -> type[Deduplicator]:
    """The engine's ``Deduplicator``, loaded once a job's inputs are open and its outputs
    checked: bad arguments and unreadable inputs never load the engine and Numba. ``prepare``
    runs just before (the CLI chooses the kernels' mode there). Loading imports modules (the
    engine, the planner), so interrupts wait until it is done."""
    with _signals_deferred():
        if prepare is not None:
            prepare()
        from .engine import Deduplicator

        return Deduplicator


def dedup_source(
    inputs: str | Sequence[str],
    params: DedupParams,
    outputs: DedupOutputs,
    read: ReadOptions | None = None,
    progress: bool = False,
    warn: Callable[[str], None] | None = None,
    jobs: int | None = None,
    memory_limit: int | None = None,
    prepare: Callable[[], object] | None = None,
) -> DedupResult:
    """Deduplicate the documents of ``inputs`` (paths, folders or "-") into ``outputs``.

    The kept records are written in the input's own format with every field preserved; the
    clusters file lists every document of a cluster of two or more with the kept document it
    duplicates and the score; the pairs file lists accepted pairs. Returns the summary.
    ``prepare`` runs once the outputs are checked, before the engine loads (the command line
    chooses the kernels' mode there).
    """
    read = _check_dedup_job(inputs, params, outputs, read)
    jobs = _check_jobs(jobs)
    started = time.perf_counter()
    with read.open(inputs, key_field=read.key_field) as source:
        # Every output is checked against the inputs and each other before anything is read.
        plan, kept_fmt = plan_dedup_outputs(inputs, outputs, source.fmt)
        dedup = _deduplicator(params, source, read, jobs, memory_limit, outputs.all_pairs, prepare)
        # Percentages only where input size and bytes read are the same measure (not gzip).
        gzipped = any(str(x).endswith(".gz") for x in _paths(inputs))
        bar = Progress(progress, None if gzipped else source.input_bytes, desc=_READING)
        # Hybrid verification reads borderline texts again: inputs that cannot be read again
        # by position keep their texts as pass 1 reads them (not in a pass 1 more).
        source.keep_texts = dedup.verifier.needs_texts
        try:
            ranks = _sign_all(dedup, source, read, bar)
            ids: Sequence[str] = source.ids if source.ids is not None else []
            bar.stage(_PAIRS)
            dedup.finish(ranks, _texts_again(source, read, dedup.jobs, bar))
            bar.stage("writing")
            _jit.settle()  # an interpreted run that was too slow restarts before writing
            # Said after settle(): a restart would otherwise say it twice.
            _warn_missing_keys(source, read, warn)
            summary = _write_outputs(dedup, source, ids, plan, kept_fmt, outputs, started)
        finally:
            bar.close()
        errors = source.errors
    return DedupResult(dedup, ids, summary, errors.summary() if errors.total else "")


def _deduplicator(
    params: DedupParams,
    source: Source,
    read: ReadOptions,
    jobs: int,
    memory_limit: int | None,
    all_pairs: bool,
    prepare: Callable[[], object] | None,
) -> Deduplicator:
    """The job's deduplicator with its options: ``jobs`` threads (one when the kernels run
    interpreted: threads would only take turns), the memory limit (by default a share of what
    is available now), which pairs to list, and the IDF table when the method learns one (a
    first pass over the texts)."""
    engine = _load_engine(prepare)
    if _jit.mode() == "python":
        jobs = 1
    limit = default_memory_limit() if memory_limit is None else memory_limit

    def texts() -> Iterator[str]:
        return (t for batch in read.batches(source) for t in batch.texts)

    return engine(
        params,
        idf=engine.fit_idf(params, texts, read.docs_hint),
        memory_limit=limit,
        jobs=jobs,
        pairs="all" if all_pairs else "removal",
    )


def _sign_all(
    dedup: Deduplicator, source: Source, read: ReadOptions, bar: Progress
) -> IntArray | None:
    """Pass 1: every batch signed and added (with more than one job a reader thread parses
    ahead); the documents' key ranks when the kept one is chosen by a field, else None."""
    keys: list[object] = []
    batches: Iterator[DocBatch] = read.batches(source)
    if dedup.jobs > 1:
        batches = prefetch(batches)
    for batch in dedup.feed(batches, lambda b: b.texts, lambda b: b.nbytes, dedup.jobs):
        if batch.keys is not None:
            keys.extend(batch.keys)
        bar.update(dedup.n_docs, dedup.n_bytes)
    _refuse_all_skipped(source)
    return key_ranks(keys, dedup.params.keep_prefer) if read.key_field else None


def _texts_again(
    source: Source, read: ReadOptions, jobs: int, bar: Progress
) -> Callable[[np.ndarray], list[str]]:
    """How ``finish`` gets the texts of documents (sorted positions): read again from the
    source, the progress line saying so meanwhile."""

    def fetch(docs: np.ndarray) -> list[str]:
        bar.stage(f"verifying: reading {len(docs):,} text{'' if len(docs) == 1 else 's'} again")
        texts = source.texts_at(docs, read.docs_hint, jobs)
        bar.stage(_PAIRS)
        return texts

    return fetch


def _warn_missing_keys(
    source: Source, read: ReadOptions, warn: Callable[[str], None] | None
) -> None:
    """Warn when no document has the field that chooses the kept one."""
    if read.key_field and source.n_docs and source.missing_keys == source.n_docs and warn:
        warn(f"no document has the field {read.key_field!r}; clusters keep their first member")


def _write_outputs(
    dedup: Deduplicator,
    source: Source,
    ids: Sequence[str],
    plan: OutputPlan,
    kept_fmt: OutFmt | None,
    outputs: DedupOutputs,
    started: float,
) -> dict[str, Any]:
    """Every output of a dedup run, renamed into place together at the end, or none; returns
    the summary."""
    with plan.commit():
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
        summary = _summary(dedup, source, written, started, dedup.params)
        if outputs.summary_json:
            with atomic_write(plan["--summary-json"], "w") as fh:
                json.dump(summary, fh, indent=1)
                fh.write("\n")
    return summary


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


# -- benchmark decontamination -----------------------------------------------------------------


def _read_benchmark(
    inputs: str | Sequence[str], read: ReadOptions
) -> tuple[list[str], list[str], ErrorReport]:
    """The benchmark's ids and texts, whole (a benchmark is small), and its skipped records;
    a bad benchmark record's message names the benchmark's own options (--against-text-field),
    not the training data's the reader would name."""
    try:
        with read.open(inputs) as bench:
            texts: list[str] = []
            for batch in read.batches(bench):
                texts.extend(batch.texts)
            ids = list(bench.ids) if bench.ids is not None else []
            skipped = bench.errors
    except InputError as exc:
        raise InputError(_against_options(str(exc))) from None
    except ParamError as exc:  # a field the benchmark's format cannot honour, maybe inherited
        message = _against_options(str(exc))
        if "-field" in message:
            message += " (unless given, the benchmark's fields are --text-field's and --id-field's)"
        raise ParamError(message) from None
    skipped.examples = [_against_options(example) for example in skipped.examples]
    if not texts:
        raise ParamError(
            f"no benchmark items in {', '.join(_paths(inputs))}; check --against and "
            f"--against-text-field (reading the field {read.text_field!r})"
        )
    return ids, texts, skipped


def _against_options(message: str) -> str:
    """A benchmark record's message naming the benchmark's options (--against-text-field,
    --against-format), not the training data's the reader names."""
    return re.sub(r"--(text-field|id-field|format)\b", r"--against-\1", message)


# -- the standing index -------------------------------------------------------------------------


def _paths(inputs: str | os.PathLike[str] | Sequence[str]) -> list[str]:
    """The inputs as a list of names ("-" included), for the output checks (a ``Path`` is one
    input, as the readers take it: iterating it raised TypeError)."""
    if isinstance(inputs, str | os.PathLike):
        return [os.fspath(inputs)]
    return [os.fspath(x) if isinstance(x, os.PathLike) else x for x in inputs]
