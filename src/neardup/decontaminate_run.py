"""A decontamination job on one machine: training files and a benchmark -> clean records, matches.

The benchmark is read whole; the training documents stream in batches, ``jobs`` batches
shingled and looked up at once in threads (``decontaminate.Decontaminator``), so the outputs
are the same for any number and any batch size. Every output is checked against every input
before anything is read, and all appear together at the end, or none does.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._prefetch import ordered_map, prefetch
from ._types import BoolArray
from .errors import ParamError
from .io import DocBatch, Source, atomic_write, plan_outputs
from .io._atomic import open_output
from .io._open import check_inputs
from .io._report import ErrorReport
from .params import DECONTAMINATE_EXAMPLE, DecontaminateParams, check_kind
from .progress import Progress
from .run import (
    ReadOptions,
    _check_jobs,
    _check_read,
    _kept_format,
    _paths,
    _peak_memory_mb,
    _read_benchmark,
    _signals_deferred,
)

if TYPE_CHECKING:
    from .decontaminate import Decontaminator, Matches
    from .io._convert import OutFmt
    from .io._outputs import OutputPlan


@dataclass(frozen=True)
class DecontaminateOutputs:
    """Where a decontamination's results go; None skips one. ``clean``: the training records
    that contain no benchmark item (input format, every field, input order); ``matches``: one
    JSON line per (training document, benchmark item) pair at or above the containment."""

    clean: str | None = None
    matches: str | None = None
    summary_json: str | None = None


@dataclass(frozen=True)
class _Scanned:
    """What the pass over the training documents found: each one's verdict, the benchmark
    items matched, the number of matches, and the documents and bytes read."""

    contaminated: BoolArray
    matched_items: BoolArray
    matches: int
    docs: int
    nbytes: int


def decontaminate_source(
    inputs: str | Sequence[str],
    against: str | Sequence[str],
    params: DecontaminateParams | None,
    outputs: DecontaminateOutputs,
    read: ReadOptions | None = None,
    against_read: ReadOptions | None = None,
    progress: bool = False,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Drop every training document of ``inputs`` that contains some benchmark item of
    ``against`` at ``params.containment`` or more; write the rest and the matches (see the
    module docstring). Returns the summary. ``params`` None: the defaults."""
    params = params if params is not None else DecontaminateParams()
    check_kind(params, DecontaminateParams, DECONTAMINATE_EXAMPLE)
    check_kind(outputs, DecontaminateOutputs, "DecontaminateOutputs(clean=PATH, ...)", "outputs")
    check_inputs(inputs)
    check_inputs(against, "against")
    read = _check_read(read)
    against_read = read if against_read is None else _check_read(against_read, "against_read")
    jobs = _check_jobs(jobs)
    if "-" in _paths(inputs) and "-" in _paths(against):
        raise ParamError("standard input (-) can hold the training data or the benchmark, not both")
    started = time.perf_counter()
    with read.open(inputs) as source:
        plan, clean_fmt = _plan(inputs, against, outputs, source.fmt)
        bench_ids, bench_texts, bench_errors = _read_benchmark(against, against_read)
        with _signals_deferred():  # the kernels' modules load whole before an interrupt lands
            from .decontaminate import Decontaminator, match_lines

            finder = Decontaminator(bench_texts, params)
        gzipped = any(str(x).endswith(".gz") for x in _paths(inputs))
        bar = Progress(progress, None if gzipped else source.input_bytes)
        with plan.commit():  # every output appears at the end, together, or none does
            with contextlib.ExitStack() as stack:
                sink = None
                if outputs.matches:
                    sink = stack.enter_context(open_output(plan["--matches"]))

                def write(found: Matches, batch: DocBatch) -> None:
                    if sink is not None:
                        sink.write(match_lines(found, batch.ids, bench_ids))

                scanned = _scan(finder, read, source, jobs, bar, write)
            contaminated = scanned.contaminated
            written = (
                source.write_kept(~contaminated, plan["-o"], clean_fmt) if outputs.clean else None
            )
            summary = _summary(finder, source, scanned, written, bench_errors, started, params)
            if outputs.summary_json:
                with atomic_write(plan["--summary-json"], "w") as fh:
                    json.dump(summary, fh, indent=1)
                    fh.write("\n")
    return summary


def _plan(
    inputs: str | Sequence[str],
    against: str | Sequence[str],
    outputs: DecontaminateOutputs,
    input_fmt: str,
) -> tuple[OutputPlan, OutFmt | None]:
    """The outputs checked against every input and each other before anything is read, and
    the clean file's format (from its name)."""
    clean_fmt = _kept_format(outputs.clean, input_fmt)
    plan = plan_outputs(
        [*_paths(inputs), *_paths(against)],
        {"-o": outputs.clean, "--matches": outputs.matches, "--summary-json": outputs.summary_json},
        folders={"-o"} if clean_fmt == "folder" else (),
    )
    return plan, _kept_format(outputs.clean, input_fmt, strict=True)


def _scan(
    finder: Decontaminator,
    read: ReadOptions,
    source: Source,
    jobs: int,
    bar: Progress,
    write: Callable[[Matches, DocBatch], None],
) -> _Scanned:
    """Every training batch looked up, ``jobs`` at once; ``write`` gets each batch's matches."""
    flags: list[BoolArray] = []
    matches = docs = nbytes = 0
    matched_items = np.zeros(len(finder), dtype=bool)
    batches: Iterator[DocBatch] = read.batches(source)
    if jobs > 1:
        batches = prefetch(batches)

    def first_piece(batch: DocBatch) -> tuple[Matches, Iterator[Matches]]:
        """A batch's first piece of matches, made in a thread; the rest when it is written."""
        pieces = finder.scan_pieces(batch.texts)
        return next(pieces), pieces

    try:
        for batch, (first, rest) in ordered_map(first_piece, batches, jobs):
            flag = np.zeros(len(batch), dtype=bool)
            for found in itertools.chain([first], rest):
                flag |= found.contaminated(len(batch))
                matched_items[found.item] = True
                matches += len(found)
                if len(found):
                    write(found, batch)
            flags.append(flag)
            docs += len(batch)
            nbytes += batch.nbytes
            bar.update(docs, nbytes)
    finally:
        bar.close()
    contaminated = np.concatenate(flags) if flags else np.zeros(0, dtype=bool)
    return _Scanned(contaminated, matched_items, matches, docs, nbytes)


def _summary(
    finder: Decontaminator,
    source: Source,
    scanned: _Scanned,
    written: int | None,
    bench_errors: ErrorReport,
    started: float,
    params: DecontaminateParams,
) -> dict[str, Any]:
    """The job's figures, for the printed summary and the summary JSON."""
    seconds = time.perf_counter() - started
    docs, contaminated = scanned.docs, scanned.contaminated
    return {
        "documents": docs,
        "contaminated": int(contaminated.sum()),
        "kept": int(docs - contaminated.sum()),
        "written": written,
        "matches": scanned.matches,
        "benchmark_items": len(finder),
        "benchmark_items_matched": int(scanned.matched_items.sum()),
        "benchmark_items_without_shingles": int((finder.sizes_ == 0).sum()),
        "skipped_records": source.errors.total,
        "skipped_benchmark_records": bench_errors.total,
        "problems": source.errors.as_dict(),
        "benchmark_problems": bench_errors.as_dict(),
        "seconds": round(seconds, 3),
        "mb_per_s": round(scanned.nbytes / 1e6 / max(seconds, 1e-9), 2),
        "peak_memory_mb": round(_peak_memory_mb(), 1),
        "params": params.fingerprint(),
    }
