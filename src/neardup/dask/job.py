"""A whole dedup job on a Dask cluster: files in, part files out, the client holding O(blocks).

Stages, each kept in the work folder as it finishes (see ``workdir``), each run on the workers:

====================  ===============================  ===========================================
stage                 partitioned by                   what it does
====================  ===============================  ===========================================
scan                  input block                      read, parse, sign (``scan.scan_block``)
graph                 lookup key / id hash (shuffle)   link documents sharing a key or content
                                                       hash; find duplicate ids
components            one task, or document's block    the links' connected components: in one
                      (shuffle, one per round)         task if they fit a task, else in
                                                       large-star and small-star rounds
finish                component (shuffle)              the engine's own ``finish`` on whole
                                                       components; clusters and pairs lines
write                 input block (shuffle)            kept records, clusters and pairs parts
====================  ===============================  ===========================================

The client lists the inputs, decides from the blocks' counts (problems, duplicate ids, line and
document offsets) and writes each output folder's ``manifest.json`` last: a folder without one is
not a finished output. Outputs equal the single-machine run's, byte for byte once each folder's
parts are concatenated in order (gzip parts decompressed).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

import numpy as np

from .._heap import trim
from ..engine import DedupStats
from ..errors import InputError, ParamError
from ..io._report import (
    DUPLICATE_ID,
    MAX_EXAMPLES,
    MAX_RECORD_SIZE,
    ErrorReport,
    duplicate_problem,
    stop_message,
)
from ..io._source import _DUPLICATE_FIX, DEFAULT_ID_FIELD, missing_id_field
from ..io.formats import format_of
from ..methods import make_method, needs_fit
from ..params import DedupParams, params_json
from .bundles import regroup
from .cluster import check_workers_memory
from .components import connected_components
from .diagnostics import StageClock, check_report, performance_report
from .folders import (
    Folder,
    check_folders,
    check_written,
    unmark,
    write_manifests,
    write_summary_json,
)
from .inputs import BLOCK_BYTES, Block, InputFile, list_inputs, plan_blocks, text_bytes
from .scan import ReadSpec, scan_block, with_reference
from .stages import (
    ENGINE_SHARE,
    Layout,
    Lines,
    Outputs,
    dropped_of,
    finish_pieces,
    finish_take,
    graph_pieces,
    graph_take,
    kept_kind,
    link_bits,
    write_pieces,
    write_take,
)
from .workdir import RUN_FILE, WorkDir, work_folder
from .worker_heap import keep_heap_on_workers


class Placed(Protocol):
    """What the client's bookkeeping needs of a run: its files, blocks, lines, work folder."""

    @property
    def files(self) -> list[InputFile]: ...
    @property
    def blocks(self) -> list[Block]: ...
    @property
    def line_offsets(self) -> list[int]: ...
    @property
    def work(self) -> WorkDir: ...


#: Input bytes per destination of the graph and finish shuffles (gzip counted 4x), and the
#: fewest destinations. From the inputs (and the workers' memory limit: ``fit_to_workers``),
#: never from the number of workers; the work folder records the sizes a run started with.
DEST_BYTES = 64 << 20
MIN_DESTS = 4
#: A graph task's working memory grows with its input bytes (a block's, or a destination's)
#: on top of what the worker holds anyway: blocks and destinations are cut to this share of the
#: smallest worker's memory limit (docs/DASK.md, "Memory per worker", has the measure), never
#: below ``MIN_TASK_BYTES``.
WORKER_SHARE = 1 / 64
MIN_TASK_BYTES = 4 << 20
#: Which lines (clusters, pairs) a run's finish stage makes, kept in its folder.
LINES_FILE = "lines.json"
#: A finish part's statistics that the summary takes from the blocks instead (or not at all).
NOT_SUMMED = ("seconds", "bytes_per_doc_in_memory", "documents", "empty", "bytes_in")


@dataclass(frozen=True)
class ClusterOutputs:
    """Output folders or URL prefixes (None skips one)."""

    kept: str | None = None
    clusters: str | None = None
    pairs: str | None = None
    summary_json: str | None = None
    all_pairs: bool = False


@dataclass(frozen=True)
class JobOptions:
    """How the job reads and where it keeps its stages."""

    text_field: str = "text"
    id_field: str = "id"
    on_error: str = "stop"
    max_record_size: int = MAX_RECORD_SIZE
    work_dir: str | None = None
    restart: bool = False
    storage_options: dict[str, Any] = field(default_factory=dict)
    block_bytes: int = BLOCK_BYTES
    dest_bytes: int = DEST_BYTES  # input bytes per destination of the graph and finish shuffles
    performance_report: str | None = None  # Dask's HTML performance report of the run, if named
    format: str | None = None  # what every input is (--format); a cluster tells it by the name


def _check(params: DedupParams, options: JobOptions) -> None:
    if params.keep == "field":
        raise ParamError(
            "--keep-field is not available on a cluster yet; use --keep first or longest, or "
            "run without --dask"
        )
    if needs_fit(params):
        raise ParamError(
            "SimHash IDF weighting learns from the whole corpus first; on a cluster use "
            "--simhash-weighting binary or count"
        )
    if options.on_error not in ("stop", "skip"):
        raise ParamError(f"on_error must be 'stop' or 'skip', got {options.on_error!r}")


def _check_outputs(
    outputs: ClusterOutputs,
    files: list[InputFile],
    options: JobOptions,
    storage: dict[str, Any],
    inputs: list[str],
) -> None:
    """Output folders and files are not inputs, not each other, not the work folder, and
    folders hold nothing but an earlier neardup output (replaced) when they exist."""
    if not outputs.kept and not outputs.clusters and not outputs.pairs:
        raise ParamError("nothing to write: give -o FOLDER (and/or --clusters, --pairs FOLDER)")
    check_folders(
        {"-o": outputs.kept, "--clusters": outputs.clusters, "--pairs": outputs.pairs},
        {"--summary-json": outputs.summary_json,
         "--performance-report": options.performance_report},
        files, options.work_dir, storage, inputs,
    )  # fmt: skip
    check_report(options.performance_report)


def _problems(
    metas: list[dict[str, Any]],
    layout: Placed,
    dups: list[tuple[int, int, str, int]],
    on_error: str,
) -> ErrorReport:
    """Every bad record and file, in input order: the first raised (stop) or all counted."""
    found: list[tuple[tuple[int, int], str, str]] = []  # ((block, line), kind, message)
    counts: dict[str, int] = {}
    for meta in metas:
        b = int(meta["block"])
        name = layout.files[layout.blocks[b].file].name
        for kind, n in meta["counts"].items():
            counts[kind] = counts.get(kind, 0) + int(n)
        for recno, kind, problem, fix in meta["problems"]:
            line = int(recno) + layout.line_offsets[b]
            found.append(((b, line), kind, f"{_where(name, line)}: {problem}; {fix}"))
        for kind, problem, fix in meta["file_problems"]:
            found.append(((b, 1 << 62), kind, f"{name}: {problem}; {fix}"))
    for block, line, message, _ in dups:
        counts[DUPLICATE_ID] = counts.get(DUPLICATE_ID, 0) + 1
        found.append(((block, line), DUPLICATE_ID, message))
    found.sort(key=lambda f: f[0])
    if found and on_error == "stop":
        _, kind, message = found[0]
        raise InputError(stop_message(kind, message))
    report = ErrorReport()
    report.counts = counts
    report.examples = [message for _, _, message in found[:MAX_EXAMPLES]]
    return report


def _where(name: str, recno: int) -> str:
    """A record's place as one machine says it: ``NAME line N`` (JSONL), ``NAME row N``."""
    return f"{name} {format_of(name).unit or 'line'} {recno}"


def _dup_problems(
    layout: Placed, n_graph: int, stage: str = "graph"
) -> list[tuple[int, int, str, int]]:
    """(block, line, message, doc) of every record dropped for an id an earlier one has."""
    out = []
    for d in range(n_graph):
        if not layout.work.exists(f"{stage}/dups-{d:05d}.parquet"):  # no id was sent there
            continue
        t = layout.work.read_table(f"{stage}/dups-{d:05d}.parquet")
        flags = [  # whether each has no id (a work folder of an older run has no flags)
            t.column(c).to_pylist() if c in t.column_names else [False] * t.num_rows
            for c in ("absent", "earlier_absent")
        ]
        for doc, earlier, line, eline, rid, absent, eabsent in zip(
            t.column("doc").to_pylist(), t.column("earlier").to_pylist(),
            t.column("line").to_pylist(), t.column("earlier_line").to_pylist(),
            t.column("id").to_pylist(), *flags, strict=True,
        ):  # fmt: skip
            b, eb = doc >> 32, earlier >> 32
            name = layout.files[layout.blocks[b].file].name
            ename = layout.files[layout.blocks[eb].file].name
            unit = format_of(name).unit or "line"
            problem = duplicate_problem(rid, _where(ename, eline), unit, (absent, eabsent))
            out.append((b, line, f"{_where(name, line)}: {problem}; {_DUPLICATE_FIX}", doc))
    return out


def _scan(layout: Layout, client: Any) -> list[dict[str, Any]]:
    """The scan stage over every block (``dd.from_map``): the blocks' counts, in order; read
    back by the client when a resumed run's scan had finished (no task to start)."""
    import dask.dataframe as dd
    import pandas as pd

    if not layout.blocks:  # no input file: nothing to scan (Dask maps over no partition)
        return []
    if layout.work.done("scan"):
        metas = layout.work.read_jsons([f"scan/part-{b.index:05d}.json" for b in layout.blocks])
        refuse_missing_id_field(layout.spec.id_field, metas)
        return metas

    def one(block: Any) -> Any:
        meta = scan_block(
            block, layout.files[block.file], layout.spec, layout.params, layout.work,
            layout.storage_options,
        )  # fmt: skip
        trim()
        return pd.DataFrame({"value": [json.dumps(meta)]})

    meta = pd.DataFrame({"value": pd.Series([], dtype=str)})
    frame = dd.from_map(one, layout.blocks, meta=meta, label="neardup-scan")
    metas = [json.loads(v) for v in frame.compute()["value"].tolist()]
    refuse_missing_id_field(layout.spec.id_field, metas)
    return metas


def refuse_missing_id_field(id_field: str, metas: list[dict[str, Any]]) -> None:
    """ParamError when an id field other than the default was named and no record has it
    (as one machine refuses it: ``Source._refuse_missing_id_field``)."""
    records = sum(int(m["records"]) for m in metas)
    absent = sum(int(m["absent"]) for m in metas)
    if id_field != DEFAULT_ID_FIELD and records and absent == records:
        raise ParamError(missing_id_field(id_field))


def _line_offsets(layout: Placed, metas: list[dict[str, Any]]) -> list[int]:
    """Lines of the file before each block (blocks of one plain file are consecutive)."""
    offsets = []
    previous_file, lines = -1, 0
    for block, meta in zip(layout.blocks, metas, strict=True):
        if block.file != previous_file:
            previous_file, lines = block.file, 0
        offsets.append(lines)
        lines += int(meta["lines"] or 0)
    return offsets


def _stage(layout: Placed, name: str, run: Any) -> dict[int, dict[str, Any]]:
    """A shuffle stage's answers: computed (then marked done) or read back from the folder."""
    work = layout.work
    if work.done(name):
        return {index: work.answer(name, index) for index in sorted(work.finished(name))}
    answers = run()
    work.mark(name)
    return answers


def check_job(
    inputs: list[str], params: DedupParams, outputs: ClusterOutputs, options: JobOptions
) -> list[InputFile]:
    """The input files, once the parameters, options and outputs are checked (before any
    cluster is needed: a wrong path is said at once, not after a cluster started)."""
    _check(params, options)
    storage = dict(options.storage_options)
    files = list_inputs(inputs, storage, options.format)
    _check_outputs(outputs, files, options, storage, inputs)
    return files


def run_job(
    inputs: list[str],
    params: DedupParams,
    outputs: ClusterOutputs,
    options: JobOptions,
    client: Any,
    info: Any = None,
    files: list[InputFile] | None = None,
) -> dict[str, Any]:
    """Deduplicate ``inputs`` on the cluster of ``client``; returns the summary (also written
    to every output folder's manifest). ``files``: what ``check_job`` gave, if it ran."""
    started = time.perf_counter()
    if files is None:
        files = check_job(inputs, params, outputs, options)
    options = fit_to_workers(options, client)
    keep_heap_on_workers(client)
    with (
        work_folder(options.work_dir, options.storage_options, info, client) as work,
        performance_report(client, options.performance_report, dict(options.storage_options)),
    ):
        options = sizes_started_with(work, options)
        return _run(files, params, outputs, options, client, info, work, started)


def sizes_started_with(work: WorkDir, options: JobOptions) -> JobOptions:
    """``options`` with the block and destination sizes of the run kept in ``work``, if any:
    they cut the work into tasks and never change the output, so a run resumed on workers with
    another memory limit goes on with the cut it started with."""
    if options.restart or not work.exists(RUN_FILE):
        return options
    sizes = dict(work.read_json(RUN_FILE)).get("options") or {}
    return replace(
        options,
        block_bytes=int(sizes.get("block_bytes", options.block_bytes)),
        dest_bytes=int(sizes.get("dest_bytes", options.dest_bytes)),
    )


def worker_limits(client: Any) -> list[int]:
    """The memory limits of the cluster's workers that have one (bytes)."""
    workers = client.scheduler_info().get("workers", {}).values()
    return [int(w["memory_limit"]) for w in workers if w.get("memory_limit")]


def components_budget(options: JobOptions, client: Any) -> int:
    """Bytes the single components task may hold: the finish engine's share of the smallest
    worker's memory limit (a finish task holds a whole component too), at least a shuffle
    destination's ``dest_bytes``; only ``dest_bytes`` when no worker has a limit."""
    limits = worker_limits(client)
    return (
        max(options.dest_bytes, int(min(limits) * ENGINE_SHARE)) if limits else options.dest_bytes
    )


def fit_to_workers(options: JobOptions, client: Any) -> JobOptions:
    """``options`` with blocks and shuffle destinations no larger than ``WORKER_SHARE`` of the
    smallest memory limit among the cluster's workers; unchanged when no worker has one;
    ParamError when one has less than a worker needs (``check_workers_memory``)."""
    limits = worker_limits(client)
    check_workers_memory(limits)
    if not limits:
        return options
    size = max(MIN_TASK_BYTES, int(min(limits) * WORKER_SHARE))
    return replace(
        options,
        block_bytes=min(options.block_bytes, size),
        dest_bytes=min(options.dest_bytes, size),
    )


def start_work(
    work: WorkDir, files: list[InputFile], options: JobOptions, say: Any, run: dict[str, Any]
) -> ReadSpec:
    """Bind the work folder to this run (``run``: what besides the inputs and block size
    makes it this run), saying so when it resumes one; returns how the blocks' records read."""
    run_record = {
        **run,
        "inputs": [{"name": f.name, "size": f.size, "stamp": f.stamp} for f in files],
        "options": {"block_bytes": options.block_bytes, "dest_bytes": options.dest_bytes},
    }
    if work.start(run_record, options.restart):
        say(f"resuming the run kept in {work.url}")
    spec = ReadSpec(
        options.text_field, options.id_field, many=len(files) > 1, limit=options.max_record_size
    )
    return with_reference(spec, files, options.storage_options)


def _start(
    files: list[InputFile],
    params: DedupParams,
    outputs: ClusterOutputs,
    options: JobOptions,
    say: Any,
    work: WorkDir,
) -> Layout:
    """The run's layout: its blocks planned and its work folder started (or resumed, when
    the parameters and read options are those of the run that started it)."""
    blocks = plan_blocks(files, options.block_bytes)
    read = [
        options.text_field,
        options.id_field,
        options.on_error,
        outputs.all_pairs,
        options.max_record_size,
    ]
    spec = start_work(work, files, options, say, {"params": params.fingerprint(), "read": read})
    return Layout(
        files, blocks, spec, params, work, dict(options.storage_options), [0] * len(blocks),
        "all" if outputs.all_pairs else "removal",
    )  # fmt: skip


def finish_lines(work: WorkDir, wanted: Lines) -> Lines:
    """The clusters and pairs lines the finish stage makes (``wanted``: those whose outputs
    are asked for). A finish stage kept without lines now wanted is done again; one kept with
    more goes on making them (a folder of before they were optional made both)."""
    rel = f"finish/{LINES_FILE}"
    if work.exists("finish"):
        made = tuple(work.read_json(rel)) if work.exists(rel) else (True, True)
        if all(m or not w for m, w in zip(made, wanted, strict=True)):
            return (bool(made[0]), bool(made[1]))
        work.forget("finish")
    work.write_json(rel, list(wanted))
    return wanted


def _first_records(metas: list[Any], dropped: dict[int, np.ndarray]) -> list[int]:
    """The number of each block's first record, counting the records read less those dropped
    for a repeated id."""
    records = np.asarray([int(m["records"]) for m in metas], dtype=np.int64)
    for b, v in dropped.items():
        records[b] -= len(v)
    return np.concatenate([[0], np.cumsum(records)[:-1]]).astype(np.int64).tolist()


def _write(
    layout: Layout, outs: Outputs, finished: dict[int, Any], dropped: dict[int, list[int]]
) -> dict[int, Any]:
    """The write stage: each block's kept records, and the clusters and pairs of each finish
    piece, written to the output folders (their earlier parts cleared unless resuming it)."""
    work, n_blocks, storage = layout.work, len(layout.blocks), layout.storage_options
    check_written(work, _folders(outs), n_blocks, storage)
    if not work.done("write"):
        unmark(_folders(outs), storage)
    items = [("finish", d) for d in sorted(finished)] + [("blocks", n_blocks)]
    return _stage(
        layout, "write",
        lambda: regroup(items, write_pieces, (layout,), n_blocks, write_take,
                        (layout, outs, dropped), "neardup-write", (work, "write")),
    )  # fmt: skip


def _run(
    files: list[InputFile],
    params: DedupParams,
    outputs: ClusterOutputs,
    options: JobOptions,
    client: Any,
    info: Any,
    work: WorkDir,
    started: float,
) -> dict[str, Any]:
    say = info or (lambda message: None)
    layout = _start(files, params, outputs, options, say, work)
    blocks, storage = layout.blocks, layout.storage_options
    input_bytes = text_bytes(files)
    n_dests = max(MIN_DESTS, -(-input_bytes // options.dest_bytes))

    clock = StageClock(say, client)
    clock.start(f"scan: {len(blocks)} blocks of {len(files)} files")
    metas = _scan(layout, client)
    work.mark("scan")
    layout = replace(layout, line_offsets=_line_offsets(layout, metas))

    n_graph = n_dests
    index_bits = link_bits(max((int(m["records"]) for m in metas), default=0))
    clock.start("graph: linking documents that share a key")
    graph = _stage(
        layout, "graph",
        lambda: regroup(range(len(blocks)), graph_pieces, (layout, n_graph, index_bits),
                        n_graph, graph_take, (layout,), "neardup-graph", (work, "graph")),
    )  # fmt: skip
    dups = _dup_problems(layout, n_graph)
    report = _problems(metas, layout, dups, options.on_error)
    dropped_arrays = dropped_of(layout.work, n_graph)
    dropped = {b: v.tolist() for b, v in dropped_arrays.items()}
    offsets = _first_records(metas, dropped_arrays)

    clock.start("components")
    edges = {d: int(answer["edges"]) for d, answer in graph.items()}
    budget = components_budget(options, client)
    labels = connected_components(work, n_graph, len(blocks), edges, budget)

    clock.start("finish: removal per component")
    lines = finish_lines(work, (outputs.clusters is not None, outputs.pairs is not None))
    finished = _stage(
        layout, "finish",
        lambda: regroup(range(len(blocks)), finish_pieces, (layout, n_dests, dropped, labels),
                        n_dests, finish_take, (layout, offsets, dropped, lines),
                        "neardup-finish", (work, "finish")),
    )  # fmt: skip

    clock.start("write: kept records, clusters and pairs")
    outs = Outputs(outputs.kept, outputs.clusters, outputs.pairs, kept_kind(files))
    written = _write(layout, outs, finished, dropped)
    clock.start("")
    summary = _summary(params, finished, written, report, started, len(blocks))
    summary["stage_seconds"] = clock.seconds
    summary["stage_task_seconds"] = clock.tasks
    write_manifests(_folders(outs), written, summary, len(blocks), storage)
    write_summary_json(outputs.summary_json, summary, storage)
    return summary


def _summary(
    params: DedupParams,
    finished: dict[int, dict[str, Any]],
    written: dict[int, dict[str, Any]],
    report: ErrorReport,
    started: float,
    n_blocks: int,
) -> dict[str, Any]:
    # every count at 0 first: a run where no document is linked has no finish part at all
    stats: dict[str, Any] = {f.name: 0 for f in fields(DedupStats) if f.name not in NOT_SUMMED}
    for part in finished.values():
        for key, value in part.items():
            if key in NOT_SUMMED:
                continue
            if key == "check_rounds":
                stats[key] = max(stats.get(key, 0), value)
            else:
                stats[key] = stats.get(key, 0) + value
    blocks = [written[b] for b in range(n_blocks)]
    documents = sum(b["documents"] for b in blocks)
    seconds = time.perf_counter() - started
    nbytes = sum(b["nbytes"] for b in blocks)
    return {
        "documents": documents,
        "empty": sum(b["empty"] for b in blocks),
        **stats,
        "removed": stats.get("removed", 0),
        "kept": sum(b["kept"] for b in blocks),
        "written": sum(b["kept"] for b in blocks),
        "bytes_in": nbytes,
        "skipped_records": report.total,
        "problems": report.as_dict(),
        "seconds": round(seconds, 3),
        "mb_per_s": round(nbytes / 1e6 / max(seconds, 1e-9), 2),
        "method": make_method(params).describe(),
        "params": params_json(params),  # as the single-machine run's summary has them
        "params_fingerprint": params.fingerprint(),
        "tokens": params.shingle.tokens,
        "blocks": n_blocks,
    }


def _folders(outs: Outputs) -> list[Folder]:
    return [(outs.kept, outs.kind, "kept"), (outs.clusters, "jsonl", "clusters"),
            (outs.pairs, "jsonl", "pairs")]  # fmt: skip
