"""Index jobs: inputs on disk -> the index (add), match lists (query), kept records (dedup).

What ``neardup index add|query`` and ``neardup dedup --index`` run: each reads its inputs in
batches (a reader thread parsing ahead) and calls one ``Index`` method over them
(``add_stream``, ``answers`` batch by batch, in processes with ``--jobs``, ``dedup_stream``). Outputs are checked before the first
input byte is read (never an input or the index) and appear together at the end, or not at all.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .._prefetch import prefetch
from .._processes import process_map
from ..candidates import distinct
from ..errors import InputError, ParamError
from ..io import DocBatch, Source, atomic_write, plan_outputs
from ..io._atomic import open_output
from ..io._report import BAD_TEXT, ErrorReport
from ..progress import Progress
from ..run import ReadOptions, _check_jobs, _kept_format, _paths, default_memory_limit
from . import Index
from .checks import SURROGATE, check_limit, date_problem, not_unicode
from .results import Deduplicated


def _open(
    inputs: str | Sequence[str],
    read: ReadOptions,
    url_field: str | None = None,
    date_field: str | None = None,
) -> Source:
    """Inputs for the index jobs: a URL field stands for the id, a date field is read as a key."""
    if url_field and read.id_field != "id":
        raise ParamError("--url-field names the id of each document; give it or --id-field")
    source = read.open(inputs, id_field=url_field, key_field=date_field)
    if url_field:
        source.id_flag = "--url-field"
    return source


def _dates(keys: list[object] | None) -> list[str | None] | None:
    """Key values of a date field as strings (ISO dates sort as dates)."""
    if keys is None:
        return None
    return [None if k is None else str(k) for k in keys]


#: The files SQLite keeps beside a database: its rollback journal, write-ahead log and the log's
#: index. An output there would vanish (SQLite removes a closed index's log) or be taken for a
#: journal to roll back.
SQLITE_FILES = ("-journal", "-wal", "-shm")


def index_files(path: str, outputs: Mapping[str, str | None]) -> list[str]:
    """The index and its SQLite files, as inputs no output may be; ParamError for an output
    named as one of the SQLite files, whether or not it exists now."""
    # SQLite opens an index through a symlink at its target, and keeps its files beside that.
    beside = {
        os.path.abspath(where + suffix)
        for where in (path, os.path.realpath(path))
        for suffix in SQLITE_FILES
    }
    for role, value in outputs.items():
        if value and value != "-" and beside & {os.path.abspath(value), os.path.realpath(value)}:
            raise ParamError(
                f"{role} {value} is a file SQLite keeps beside the index {path}; name another "
                "output file"
            )
    return [path, *(path + suffix for suffix in SQLITE_FILES)]


def _bad_rows(
    ids: Sequence[str], texts: Sequence[str], dates: Sequence[str | None] | None
) -> dict[int, str]:
    """Rows whose id, stored text or date is not Unicode (a lone surrogate), or whose date is
    no ISO date, and what is wrong with each."""
    bad = {i: SURROGATE.format(what="id") for i in not_unicode(ids)}
    for what, values in (("text", texts), ("date", dates or [])):
        found = {i: SURROGATE.format(what=what) for i in not_unicode(values) if i not in bad}
        bad.update(found)
    for i, date in enumerate(dates or []):
        problem = "" if i in bad else date_problem(date)
        if problem:
            bad[i] = f"its {problem}"
    return bad


def _skip_or_stop(
    bad: dict[int, str], ids: Sequence[str], on_error: str, report: ErrorReport
) -> None:
    """Each bad row one line, counted under ``--on-error skip``, else the run stops there."""
    messages = {i: f"document {ids[i]!r}: {said}" for i, said in bad.items()}
    if on_error == "stop":
        raise InputError(f"{messages[min(bad)]}, or use --on-error skip to skip such records")
    for i in sorted(bad):
        report.add(BAD_TEXT, messages[i])


def _acceptable(
    ids: list[str],
    texts: Sequence[str],
    dates: list[str | None] | None,
    store_text: bool,
    on_error: str,
    report: ErrorReport,
) -> tuple[list[str], Sequence[str], None, list[str | None] | None]:
    """A batch to add without the records whose id, stored text or date is not Unicode (a
    lone surrogate) or whose date is no ISO date: each one line, counted under ``--on-error
    skip``, else the run stops."""
    bad = _bad_rows(ids, texts if store_text else [], dates)
    if not bad:
        return ids, texts, None, dates
    _skip_or_stop(bad, ids, on_error, report)
    rows = [i for i in range(len(ids)) if i not in bad]
    kept_dates = None if dates is None else [dates[i] for i in rows]
    return [ids[i] for i in rows], [texts[i] for i in rows], None, kept_dates


def _to_add(
    source: Source, read: ReadOptions, store_text: bool, sizes: deque[int]
) -> Iterator[tuple[list[str], Sequence[str], None, list[str | None] | None]]:
    """The batches ``index add`` adds (``_acceptable``), each one's input bytes appended to
    ``sizes``; a misspelt id field is refused before the first batch with records is added."""
    checked = False
    for batch in prefetch(read.batches(source)):
        if not checked and len(batch.ids):
            source.refuse_missing_id_field_so_far(len(batch.ids))
            checked = True
        sizes.append(batch.nbytes)
        yield _acceptable(
            list(batch.ids), batch.texts, _dates(batch.keys), store_text, read.on_error,
            source.errors,
        )  # fmt: skip


def add_source(
    path: str,
    inputs: str | Sequence[str],
    read: ReadOptions | None = None,
    url_field: str | None = None,
    date_field: str | None = None,
    progress: bool = False,
    jobs: int | None = None,
) -> dict[str, Any]:
    """Add the documents of ``inputs`` to the index at ``path``, one transaction per batch,
    ``jobs`` batches signed in threads while the previous one is written (all cores)."""
    read = read or ReadOptions()
    jobs = _check_jobs(jobs)
    started = time.perf_counter()
    docs = nbytes = 0
    index = Index.open(path)
    try:
        with _open(inputs, read, url_field, date_field) as source:
            bar = Progress(progress, source.input_bytes)
            sizes: deque[int] = deque()

            def committed(batch: object) -> None:
                nonlocal docs, nbytes
                docs += len(batch[0])  # type: ignore[index]
                nbytes += sizes.popleft()
                bar.update(docs, nbytes)

            try:
                batches = _to_add(source, read, index.store_text, sizes)
                done = index.add_stream(batches, jobs, committed)
            finally:
                bar.close()
            skipped = source.errors.total
            unnamed = source.named_by_place
            undated = source.missing_keys if date_field else 0
        size = len(index)
    finally:
        index.close()
    seconds = time.perf_counter() - started
    return {
        "read": docs,
        "added": done.added,
        "replaced": done.replaced,
        "skipped_records": skipped,
        "named_by_line": unnamed,
        "without_date": undated,
        "documents": size,
        "seconds": round(seconds, 3),
        "docs_per_s": round(docs / max(seconds, 1e-9)),
    }


def query_source(
    path: str,
    inputs: str | Sequence[str],
    output: str | None,
    read: ReadOptions | None = None,
    threshold: float | None = None,
    limit: int | None = None,
    jobs: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Query the index at ``path`` with each document of ``inputs``; one JSON line per query
    ``{"id": ..., "matches": [{"id", "score", "kind", ...}, ...]}`` to ``output`` ("-" or None:
    standard output), written atomically. With ``jobs`` > 1 and more than one batch, batches
    are answered in ``jobs`` processes, each reading the index (a lookup holds the GIL for most
    of its time, so threads would share one core); the answers do not depend on it.
    ``progress``: a line on stderr with the queries answered and the input bytes they came
    from."""
    read = read or ReadOptions()
    jobs = _check_jobs(jobs)
    check_limit(limit)  # before anything is read
    started = time.perf_counter()
    queries = matched = 0
    budget = _postings_budget(jobs)
    index = _holding(path, budget)
    try:
        with _open(inputs, read) as source:
            outputs = {"-o": output or "-"}
            plan = plan_outputs([*_paths(inputs), *index_files(path, outputs)], outputs)
            bar = Progress(progress, source.input_bytes, desc="querying")
            nbytes = 0
            with plan.commit(), open_output(plan["-o"]) as out:
                batches = prefetch(_even(read, source.input_bytes, jobs).batches(source))
                answered = _answered(index, batches, jobs, (path, threshold, limit, budget))
                try:
                    for batch, (lines, with_matches) in answered:
                        out.write(lines)
                        matched += with_matches
                        queries += len(batch)
                        nbytes += batch.nbytes
                        bar.update(queries, nbytes)
                finally:
                    bar.close()
            skipped = source.errors.total
    finally:
        index.close()
    seconds = time.perf_counter() - started
    return {
        "queries": queries,
        "with_matches": matched,
        "skipped_records": skipped,
        "seconds": round(seconds, 3),
        "queries_per_s": round(queries / max(seconds, 1e-9)),
    }


def _answered(
    index: Index,
    batches: Iterator[DocBatch],
    jobs: int,
    serve: tuple[str, float | None, int | None, int],
) -> Iterator[tuple[DocBatch, tuple[bytes, int]]]:
    """Each batch with its answer lines and queries matched: in ``jobs`` processes (``serve``:
    what each one opens, ``_serve``'s arguments), or here when one batch or one job."""
    _, threshold, limit, _ = serve
    first = list(itertools.islice(batches, 2))  # one batch: no process to start
    stream = itertools.chain(first, batches)

    def here(b: DocBatch) -> tuple[bytes, int]:
        return _answer(index, b.ids, b.texts, threshold, limit)

    if jobs > 1 and len(first) > 1:
        return process_map(
            _answer_batch, stream, jobs, here, lambda b: (b.ids, b.texts), _serve, serve
        )
    return ((b, here(b)) for b in stream)


def _even(read: ReadOptions, total: int | None, jobs: int) -> ReadOptions:
    """``read`` with batches of equal bytes, a multiple of ``jobs`` of them, none larger than
    asked: each query process then gets the same work (4 MB batches of a 13.8 MB input are
    4.2, 4.2, 4.2 and 1.2 MB; these are 3.4 MB each). A batch answers its queries in one
    lookup, so bigger batches are cheaper per query: their count does not grow."""
    if jobs <= 1 or read.batch_size is not None or not total:
        return read
    rounds = -(-total // (read.batch_bytes * jobs))
    return replace(read, batch_bytes=max(1 << 10, -(-total // (rounds * jobs))))


def _answer(
    index: Index,
    ids: Sequence[str],
    texts: Sequence[str],
    threshold: float | None,
    limit: int | None,
) -> tuple[bytes, int]:
    """A query batch's JSON lines (UTF-8) and how many of its queries matched."""
    found = index.answers(texts, threshold, limit)
    lines = found.json_lines(ids).encode("utf-8", "backslashreplace")
    return lines, len(distinct(found.q))  # query rows ascend


#: A query process's index and the query options (set once by ``_serve``).
_served: dict[str, Any] = {}


def _postings_budget(jobs: int) -> int:
    """Bytes of postings each of ``jobs`` query processes may hold in memory: their share of
    what a job may hold by default (``run.default_memory_limit``, an eighth of the memory
    available)."""
    return default_memory_limit() // jobs


def _holding(path: str, budget: int) -> Index:
    """The index a query process answers from, holding up to ``budget`` bytes of postings."""
    index = Index.open(path)
    index.hold_postings(budget)
    return index


def _serve(path: str, threshold: float | None, limit: int | None, budget: int) -> None:
    """A query process's start: open the index it answers from, for its whole life."""
    _served.update(index=_holding(path, budget), threshold=threshold, limit=limit)


def _answer_batch(work: tuple[Sequence[str], Sequence[str]]) -> tuple[bytes, int]:
    """``_answer`` in a query process."""
    ids, texts = work
    return _answer(_served["index"], ids, texts, _served["threshold"], _served["limit"])


def dedup_source(
    inputs: str | Sequence[str],
    index_path: str,
    kept_output: str | None,
    read: ReadOptions | None = None,
    add: bool = False,
    summary_json: str | None = None,
) -> dict[str, Any]:
    """Drop documents that duplicate one in the index or a kept one earlier in the input; write
    the rest (``Index.dedup_stream`` over the input's batches). With ``add``, the kept documents
    join the index in one transaction, committed after the outputs are in place: a failed or
    killed run leaves the index as it was (never documents added whose kept file is missing,
    which a second run would then remove as duplicates of the index). Returns the summary."""
    read = read or ReadOptions()
    started = time.perf_counter()
    index = Index.open(index_path)
    if not add:  # nothing is written to it: its postings may stay in memory between batches
        index.hold_postings(default_memory_limit())
    try:
        with _open(inputs, read) as source:
            # Checked before the first document is read or added: never an input or the index.
            kept_fmt = _kept_format(kept_output, source.fmt)
            outputs = {"-o": kept_output, "--summary-json": summary_json}
            plan = plan_outputs(
                [*_paths(inputs), *index_files(index_path, outputs)],
                outputs,
                folders={"-o"} if kept_fmt == "folder" else (),
            )
            kept_fmt = _kept_format(kept_output, source.fmt, strict=True)
            with index if add else contextlib.nullcontext():  # the run's one transaction
                batches = _UnicodeBatches(prefetch(read.batches(source)), add and index.store_text,
                                           read.on_error, source.errors)  # fmt: skip
                done = index.dedup_stream(batches, add=add)
                with plan.commit():  # the kept file and the summary appear together, or neither
                    out = plan["-o"] if kept_output else None
                    summary = _write_deduplicated(source, done, batches.skipped, out, kept_fmt)
                    summary["seconds"] = round(time.perf_counter() - started, 3)
                    if summary_json:
                        with atomic_write(plan["--summary-json"], "w") as fh:
                            json.dump(summary, fh, indent=1)
                            fh.write("\n")
    finally:
        index.close()
    return summary


class _UnicodeBatches:
    """A source's batches as (ids, texts) without the records whose id (or stored text) is not
    Unicode, each one line, counted under ``--on-error skip``; ``skipped``: their positions."""

    def __init__(
        self, batches: Iterator[DocBatch], stored: bool, on_error: str, report: ErrorReport
    ) -> None:
        self.batches, self.stored, self.on_error, self.report = batches, stored, on_error, report
        self.skipped: list[int] = []

    def __iter__(self) -> Iterator[tuple[list[str], Sequence[str]]]:
        for b in self.batches:
            ids, texts = list(b.ids), b.texts
            bad = _bad_rows(ids, texts if self.stored else [], None)
            if bad:
                _skip_or_stop(bad, ids, self.on_error, self.report)
                self.skipped.extend(int(b.positions[i]) for i in sorted(bad))
                rows = [i for i in range(len(ids)) if i not in bad]
                ids, texts = [ids[i] for i in rows], [texts[i] for i in rows]
            yield ids, texts


def _write_deduplicated(
    source: Source, done: Deduplicated, skipped: list[int], out: Any, kept_fmt: Any
) -> dict[str, Any]:
    """The kept records written (none of the ``skipped`` positions) and the run's summary."""
    kept = done.kept
    if skipped:  # the mask over every record read, the skipped ones not kept
        kept = np.zeros(len(done.kept) + len(skipped), dtype=np.bool_)
        kept[np.setdiff1d(np.arange(len(kept)), np.asarray(skipped, dtype=np.int64))] = done.kept
    written = source.write_kept(kept, out, kept_fmt) if out is not None else None
    return {
        **done.summary(),
        "written": written,
        "skipped_records": source.errors.total,
        "problems": source.errors.as_dict(),
    }
