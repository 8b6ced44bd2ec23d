"""The paragraph (or line) deduplication job: inputs -> documents without repeated paragraphs.

Every document is split into units (``neardup.paragraphs``: paragraphs or non-blank lines).
The units with at least ``min_tokens`` canonical tokens are the engine's documents, in input
order (document order, then unit order): the ``Deduplicator`` removes each one that resembles
an earlier kept one at the threshold (exact copies by content hash, near ones by the method and
verification, keep-aware), exactly as it removes documents. Shorter units are left alone: never
removed, never a keeper. Pass 1 streams the units of each batch of documents through the engine
and keeps, per unit, its global number (4-8 bytes); pass 2 reads the input again and writes each
document with its removed units cut out, separators kept (``paragraphs.rewrite``); a document
whose every unit was removed is dropped. The result does not depend on ``jobs`` or the batch
size.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from ._kernels import _jit
from ._prefetch import ordered_map, prefetch
from ._types import IntArray
from .errors import ParamError
from .io import (
    DocBatch,
    Source,
    atomic_write,
    key_ranks,
    write_clusters,
    write_pairs,
)
from .paragraphs import Unit, Units, check_unit, rewrite, split
from .params import DedupParams, check_int, check_kind
from .progress import Progress
from .run import (
    DedupOutputs,
    DedupResult,
    ReadOptions,
    _check_dedup_job,
    _check_jobs,
    _load_engine,
    _peak_memory_mb,
    default_memory_limit,
    plan_dedup_outputs,
)

if TYPE_CHECKING:
    from .engine import Deduplicator, SignedBatch
    from .io._convert import OutFmt
    from .io._outputs import OutputPlan

#: Units with fewer canonical tokens are left alone by default.
DEFAULT_MIN_TOKENS = 5
#: Input formats whose records can be written back with an edited text.
EDITABLE = ("jsonl", "parquet", "text")


@dataclass(frozen=True)
class UnitOptions:
    """What a unit is and which units take part: ``unit`` "paragraph" or "line"; units with
    fewer than ``min_tokens`` canonical tokens are never removed and never keep another."""

    unit: Unit = "paragraph"
    min_tokens: int = DEFAULT_MIN_TOKENS

    def __post_init__(self) -> None:
        check_unit(self.unit)
        check_int("min_tokens (--min-paragraph-tokens)", self.min_tokens, 0, 2**31)


class UnitIds(Sequence[str]):
    """The document id of each engine document (unit), looked up by its document position."""

    def __init__(self, ids: Sequence[str], doc_of: IntArray) -> None:
        self.ids = ids
        self.doc_of = doc_of

    def __len__(self) -> int:
        return len(self.doc_of)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...

    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self.ids[int(d)] for d in self.doc_of[i].tolist()]
        return self.ids[int(self.doc_of[i])]


@dataclass
class _Layout:
    """Where units are: units per document, and each engine document's global unit number."""

    counts: list[IntArray]
    unit_of: list[IntArray]

    def arrays(self) -> tuple[IntArray, IntArray, IntArray]:
        """(first unit of each document int64[docs+1], unit_of, doc_of) of the engine docs."""
        counts = np.concatenate([np.zeros(0, np.int64), *self.counts])
        first = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=first[1:])
        unit_of = np.concatenate([np.zeros(0, np.int64), *self.unit_of])
        doc_of = np.searchsorted(first, unit_of, side="right") - 1
        return first, unit_of, doc_of.astype(np.int64)


def _unit_texts(
    source: Source,
    first: IntArray,
    units: IntArray,
    unit: Unit,
    batch_size: int,
    jobs: int,
) -> list[str]:
    """The texts of global units ``units`` (sorted), their documents read again."""
    docs = np.searchsorted(first, units, side="right") - 1
    wanted, where = np.unique(docs, return_inverse=True)
    texts = source.texts_at(wanted, batch_size, jobs)
    found = split(texts, unit)
    base = np.zeros(len(wanted) + 1, dtype=np.int64)
    np.cumsum(found.counts, out=base[1:])
    rows = base[where.ravel()] + (units - first[docs])
    return list(found.texts(rows.astype(np.int64)))


def _eligible(found: Units, min_tokens: int) -> IntArray:
    """The units of ``found`` with at least ``min_tokens`` canonical tokens."""
    return np.flatnonzero(found.tokens >= min_tokens).astype(np.int64)


def _first_step(fmt: str, unit: Unit) -> str:
    """What to run first on input ``fmt`` that ``--unit`` cannot rewrite: a run of whole
    documents whose output it can (the order PARAGRAPHS.md advises anyway)."""
    if fmt in ("csv", "tsv"):  # rows can be written as JSONL or Parquet, every column kept
        return (
            f"run dedup on the rows first with -o NAME.jsonl or -o NAME.parquet (every "
            f"column is kept), then --unit {unit} on that output"
        )
    return f"run dedup on the pages first, then --unit {unit} on its JSONL output"


def _check_outputs(
    inputs: str | Sequence[str], outputs: DedupOutputs, source: Source, unit: Unit
) -> tuple[OutputPlan, OutFmt | None]:
    """The output plan and the kept output's format, refused unless documents can be written
    back in the input's own format (rewritten units keep every other field)."""
    if source.fmt not in EDITABLE:
        raise ParamError(
            f"--unit {unit} rewrites documents in their own format: JSONL, Parquet "
            f"or text files, not {source.fmt}; {_first_step(source.fmt, unit)}"
        )
    plan, kept_fmt = plan_dedup_outputs(inputs, outputs, source.fmt)
    native = {"jsonl": "jsonl", "parquet": "parquet", "text": "folder"}[source.fmt]
    if kept_fmt not in (None, native):
        raise ParamError(
            f"--unit {unit} writes the rewritten documents as {source.fmt}, the "
            f"input's format; name -o so (it names {kept_fmt})"
        )
    return plan, kept_fmt


def _unit_engine(
    params: DedupParams,
    units: UnitOptions,
    read: ReadOptions,
    source: Source,
    jobs: int,
    memory_limit: int | None,
    all_pairs: bool,
) -> Deduplicator:
    """The engine whose documents are units, its method built (and SimHash's IDF fitted over
    the eligible units) before threads share it; ``jobs`` is set on it (1 interpreted)."""
    engine = _load_engine()
    if _jit.mode() == "python":
        jobs = 1

    def unit_texts() -> Iterator[str]:
        for batch in read.batches(source):
            found = split(batch.texts, units.unit, params.shingle.tokens)
            yield from found.texts(_eligible(found, units.min_tokens))

    dedup = engine(
        params,
        idf=engine.fit_idf(params, unit_texts, read.docs_hint),
        memory_limit=default_memory_limit() if memory_limit is None else memory_limit,
        pairs="all" if all_pairs else "removal",
        jobs=jobs,
    )
    dedup.method  # built once, before threads share it  # noqa: B018
    return dedup


@dataclass
class _UnitMap:
    """Where the units are: each document's first global unit number (int64[docs+1]), the
    global unit number and document of each engine document, and all units counted."""

    first: IntArray
    unit_of: IntArray
    doc_of: IntArray
    seen: int
    keys: list[object]

    def removed(self, kept: npt.NDArray[np.bool_]) -> _Edits:
        """What removing the engine documents not ``kept`` does to the documents."""
        removed = np.zeros(self.seen, dtype=np.bool_)
        removed[self.unit_of[~kept]] = True
        counts = np.diff(self.first)
        removed_so_far = np.zeros(self.seen + 1, dtype=np.int64)
        np.cumsum(removed, out=removed_so_far[1:])
        per_doc = removed_so_far[self.first[1:]] - removed_so_far[self.first[:-1]]
        changed = per_doc > 0
        return _Edits(removed, changed, changed & (per_doc == counts))


@dataclass
class _Edits:
    """Removed units (bool per global unit), and the documents changed and dropped (all their
    units removed)."""

    removed: npt.NDArray[np.bool_]
    changed: npt.NDArray[np.bool_]
    dropped: npt.NDArray[np.bool_]


def _sign_units(
    dedup: Deduplicator,
    source: Source,
    read: ReadOptions,
    units: UnitOptions,
    jobs: int,
    progress: bool,
) -> _UnitMap:
    """Split each batch into units and append the eligible ones to ``dedup`` as its
    documents (``jobs`` batches at once, in input order); where the units are."""
    mode = dedup.params.shingle.tokens

    def sign(batch: DocBatch) -> tuple[IntArray, IntArray, SignedBatch]:
        found = split(batch.texts, units.unit, mode)
        rows = _eligible(found, units.min_tokens)
        return found.counts, rows, dedup.sign(found.texts(rows))

    layout = _Layout([], [])
    seen = 0
    keys: list[object] = []
    bar = Progress(progress, source.input_bytes)
    try:
        batches: Iterator[DocBatch] = read.batches(source)
        if jobs > 1:
            batches = prefetch(batches)
        for batch, (counts, rows, signed) in ordered_map(sign, batches, jobs):
            dedup.append(signed, batch.nbytes)
            layout.counts.append(counts)
            layout.unit_of.append(rows + seen)
            seen += int(counts.sum())
            if batch.keys is not None:
                keys.extend(batch.keys)
            bar.update(int(batch.positions[-1]) + 1 if len(batch) else 0, dedup.n_bytes)
    finally:
        bar.close()
    return _UnitMap(*layout.arrays(), seen, keys)


def _write_unit_rows(
    plan: OutputPlan,
    outputs: DedupOutputs,
    dedup: Deduplicator,
    ids: Sequence[str],
    where: _UnitMap,
) -> None:
    """The clusters and pairs outputs: one row per unit, its document's id and number in it."""
    unit_of, doc_of = where.unit_of, where.doc_of
    parts = unit_of - where.first[doc_of]
    unit_ids = UnitIds(ids, doc_of)
    if outputs.clusters:
        # Cluster labels: the global unit number of each cluster's first unit.
        labels = unit_of[dedup.clusters_]
        sizes = np.bincount(dedup.clusters_, minlength=len(unit_of))
        rows = np.flatnonzero(sizes[dedup.clusters_] >= 2)
        write_clusters(
            plan["--clusters"], unit_ids, labels, dedup.kept_, rows,
            duplicate_of=dedup.duplicate_of_, score=dedup.duplicate_score_, parts=parts,
        )  # fmt: skip
    if outputs.pairs:
        a, b, score = dedup.all_pairs() if outputs.all_pairs else dedup.pairs_
        write_pairs(plan["--pairs"], unit_ids, a, b, score, parts=parts)


def _summary(
    dedup: Deduplicator,
    units: UnitOptions,
    where: _UnitMap,
    edits: _Edits,
    written: int | None,
    skipped: int,
    seconds: float,
) -> dict[str, Any]:
    """The run's summary (printed by ``format_summary``, written by ``--summary-json``)."""
    groups = dedup.groups_
    gone = np.flatnonzero(~dedup.kept_)
    of = dedup.duplicate_of_[gone]  # -1: no direct pair (components removal)
    exact = int(((of >= 0) & (groups[gone] == groups[np.maximum(of, 0)])).sum())
    seen, compared = where.seen, len(where.unit_of)
    return {
        "unit": units.unit,
        "min_tokens": units.min_tokens,
        "documents": len(where.first) - 1,
        "paragraphs": seen,
        "paragraphs_compared": compared,
        "paragraphs_short": seen - compared,
        "paragraphs_removed": len(gone),
        "removed_exact": exact,
        "removed_near": len(gone) - exact,
        "documents_rewritten": int((edits.changed & ~edits.dropped).sum()),
        "documents_dropped": int(edits.dropped.sum()),
        "written": written,
        "skipped_records": skipped,
        "seconds": round(seconds, 3),
        "mb_per_s": round(dedup.n_bytes / 1e6 / max(seconds, 1e-9), 2),
        "peak_memory_mb": round(_peak_memory_mb(), 1),
        "method": dedup.method.describe(),
        "params": dedup.params.fingerprint(),
        "engine": dedup.stats_.as_dict(),
    }


def dedup_paragraphs(
    inputs: str | Sequence[str],
    params: DedupParams,
    outputs: DedupOutputs,
    units: UnitOptions | None = None,
    read: ReadOptions | None = None,
    progress: bool = False,
    jobs: int | None = None,
    memory_limit: int | None = None,
) -> DedupResult:
    """Remove repeated paragraphs (or lines) from the documents of ``inputs``.

    ``outputs.kept``: the documents, each with its removed units cut out (other fields kept, in
    the input's format: JSONL, Parquet or text files), documents left without a unit dropped;
    ``outputs.clusters`` / ``outputs.pairs``: one row per unit of a cluster / per pair, the
    document's id plus the unit's number in it (``docs/PARAGRAPHS.md``). Returns the summary.
    """
    read = _check_dedup_job(inputs, params, outputs, read)
    if units is not None:
        check_kind(units, UnitOptions, "UnitOptions(unit='line', ...) or None", "units")
    units = units or UnitOptions()
    jobs = _check_jobs(jobs)
    started = time.perf_counter()
    with read.open(inputs, key_field=read.key_field) as source:
        plan, kept_fmt = _check_outputs(inputs, outputs, source, units.unit)
        dedup = _unit_engine(params, units, read, source, jobs, memory_limit, outputs.all_pairs)
        jobs = dedup.jobs
        source.keep_texts = dedup.verifier.needs_texts  # spooled in pass 1 where they must be
        where = _sign_units(dedup, source, read, units, jobs, progress)
        first, unit_of = where.first, where.unit_of
        key = key_ranks(where.keys, params.keep_prefer)[where.doc_of] if read.key_field else None
        dedup.finish(
            key,
            lambda docs: _unit_texts(
                source, first, unit_of[docs], units.unit, read.docs_hint, jobs
            ),
        )
        _jit.settle()
        edits = where.removed(dedup.kept_)

        def edit(position: int, text: str) -> str:
            return rewrite(text, edits.removed[first[position] : first[position + 1]], units.unit)

        ids: Sequence[str] = source.ids if source.ids is not None else []
        with plan.commit():
            written = None
            if outputs.kept:
                written = source.write_kept(
                    ~edits.dropped, plan["-o"], kept_fmt, edits.changed, edit
                )
            _write_unit_rows(plan, outputs, dedup, ids, where)
            seconds = time.perf_counter() - started
            summary = _summary(dedup, units, where, edits, written, source.errors.total, seconds)
            if outputs.summary_json:
                with atomic_write(plan["--summary-json"], "w") as fh:
                    json.dump(summary, fh, indent=1)
                    fh.write("\n")
        errors = source.errors
    return DedupResult(dedup, ids, summary, errors.summary() if errors.total else "")


def format_summary(s: dict[str, Any], problems: str) -> str:
    """The printed summary of a paragraph (line) run, in the whole-document summary's layout."""
    what = "paragraphs" if s["unit"] == "paragraph" else "lines"
    short = f"left alone (< {s['min_tokens']} tokens)"
    rows = [
        ("documents", s["documents"]),
        (what, s["paragraphs"]),
        (short, s["paragraphs_short"]),
        (f"{what} removed", s["paragraphs_removed"]),
        ("  exact copies", s["removed_exact"]),
        ("  near copies", s["removed_near"]),
        ("documents rewritten", s["documents_rewritten"]),
        ("documents dropped", s["documents_dropped"]),
    ]
    if s.get("written") is not None:
        rows.append(("documents written", s["written"]))
    width = max(21, len(short) + 1)
    lines = [f"neardup dedup --unit {s['unit']} summary"]
    lines += [f"  {label:<{width}}{value:>12,}" for label, value in rows]
    lines += [
        f"  {'method':<{width}}{s['method']}",
        f"  {'skipped records':<{width}}{s['skipped_records']:>12,}",
        f"  {'time':<{width}}{s['seconds']:>11.2f}s",
        f"  {'throughput':<{width}}{s['mb_per_s']:>8.1f} MB/s",
        f"  {'peak memory':<{width}}{s['peak_memory_mb']:>9.0f} MB",
    ]
    text = "\n".join(lines) + "\n"
    if problems:
        text += problems.rstrip("\n") + "\n"
    return text
