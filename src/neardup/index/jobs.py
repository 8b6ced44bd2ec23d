"""Index jobs: inputs on disk -> the index (add), match lists (query), kept records (dedup).

What ``neardup index add|query`` and ``neardup dedup --index`` run: each reads its inputs in
batches (a reader thread parsing ahead) and calls one ``Index`` method over them
(``add_stream``, ``query_stream``, ``dedup_stream``). Outputs are checked before the first
input byte is read (never an input or the index) and appear together at the end, or not at all.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from .._prefetch import prefetch
from ..candidates import distinct
from ..errors import ParamError
from ..io import DocBatch, Source, atomic_write, plan_outputs
from ..io._atomic import open_output
from ..progress import Progress
from ..run import ReadOptions, _check_jobs, _kept_format, _paths
from . import Index


def _open(
    inputs: str | Sequence[str],
    read: ReadOptions,
    url_field: str | None = None,
    date_field: str | None = None,
) -> Source:
    """Inputs for the index jobs: a URL field stands for the id, a date field is read as a key."""
    if url_field and read.id_field != "id":
        raise ParamError("--url-field names the id of each document; give it or --id-field")
    return read.open(inputs, id_field=url_field, key_field=date_field)


def _dates(keys: list[object] | None) -> list[str | None] | None:
    """Key values of a date field as strings (ISO dates sort as dates)."""
    if keys is None:
        return None
    return [None if k is None else str(k) for k in keys]


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

            def batches() -> Iterator[
                tuple[list[str], Sequence[str], None, list[str | None] | None]
            ]:
                for batch in prefetch(read.batches(source)):
                    sizes.append(batch.nbytes)
                    yield list(batch.ids), batch.texts, None, _dates(batch.keys)

            def committed(batch: object) -> None:
                nonlocal docs, nbytes
                docs += len(batch[0])  # type: ignore[index]
                nbytes += sizes.popleft()
                bar.update(docs, nbytes)

            try:
                done = index.add_stream(batches(), jobs, committed)
            finally:
                bar.close()
            skipped = source.errors.total
        size = len(index)
    finally:
        index.close()
    seconds = time.perf_counter() - started
    return {
        "read": docs,
        "added": done.added,
        "replaced": done.replaced,
        "skipped_records": skipped,
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
    standard output), written atomically. ``jobs`` threads sign batches while the previous
    one is looked up; the answers do not depend on it. ``progress``: a line on stderr with the
    queries answered and the input bytes they came from."""
    read = read or ReadOptions()
    started = time.perf_counter()
    queries = matched = 0
    index = Index.open(path)
    try:
        with _open(inputs, read) as source:
            plan = plan_outputs([*_paths(inputs), path], {"-o": output or "-"})
            bar = Progress(progress, source.input_bytes, desc="querying")
            nbytes = 0
            with plan.commit(), open_output(plan["-o"]) as out:
                answers = index.query_stream(
                    prefetch(read.batches(source)),
                    lambda b: b.texts,
                    _check_jobs(jobs),
                    threshold=threshold,
                    limit=limit,
                )
                try:
                    for batch, found in answers:
                        out.write(found.json_lines(batch.ids).encode("utf-8", "backslashreplace"))
                        matched += len(distinct(found.q))  # query rows ascend
                        queries += len(batch)
                        nbytes += batch.nbytes
                        bar.update(queries, nbytes)
                finally:
                    bar.close()
    finally:
        index.close()
    seconds = time.perf_counter() - started
    return {
        "queries": queries,
        "with_matches": matched,
        "seconds": round(seconds, 3),
        "queries_per_s": round(queries / max(seconds, 1e-9)),
    }


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
    join the index (one transaction per batch). Returns the summary."""
    read = read or ReadOptions()
    started = time.perf_counter()
    index = Index.open(index_path)
    try:
        with _open(inputs, read) as source:
            # Checked before the first document is read or added: never an input or the index.
            kept_fmt = _kept_format(kept_output, source.fmt)
            plan = plan_outputs(
                [*_paths(inputs), index_path],
                {"-o": kept_output, "--summary-json": summary_json},
                folders={"-o"} if kept_fmt == "folder" else (),
            )
            kept_fmt = _kept_format(kept_output, source.fmt, strict=True)
            batches: Iterator[DocBatch] = prefetch(read.batches(source))
            done = index.dedup_stream(((b.ids, b.texts) for b in batches), add=add)
            with plan.commit():  # the kept file and the summary appear together, or neither
                written = (
                    source.write_kept(done.kept, plan["-o"], kept_fmt) if kept_output else None
                )
                summary = {
                    **done.summary(),
                    "written": written,
                    "skipped_records": source.errors.total,
                    "seconds": round(time.perf_counter() - started, 3),
                }
                if summary_json:
                    with atomic_write(plan["--summary-json"], "w") as fh:
                        json.dump(summary, fh, indent=1)
                        fh.write("\n")
    finally:
        index.close()
    return summary
