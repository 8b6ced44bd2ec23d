"""Benchmark decontamination on a Dask cluster: training files in, clean and matches parts out.

The benchmark is read once on the client (it is small) and its ``Decontaminator`` built once,
as a task, on a worker; every task needing it gets that one object (Dask copies it to each
worker once, and builds it again if its worker is lost). The training data never passes
through the client:

=====  ===============================  ==================================================
stage  partitioned by                   what it does
=====  ===============================  ==================================================
scan   input block                      read the block's records (``scan.read_block``, the
                                        dedup scan's reader), find the items each contains
                                        (``Decontaminator.scan`` in 16 MB batches); keep the
                                        records' places and the matches
ids    id hash (P2P shuffle)            repeated ids: the later record is a bad one, as on
                                        one machine (``stages.duplicates``)
write  input block                      clean records copied byte for byte, matches lines
=====  ===============================  ==================================================

The client holds per-block counts only. Once each output folder's parts are concatenated in
manifest order they are the single-machine ``-o`` and ``--matches`` files, byte for byte.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import time
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

import numpy as np

from .._heap import trim
from ..decontaminate import DECONTAMINATE_EXAMPLE, Decontaminator, Matches, match_lines
from ..errors import ParamError
from ..io._report import ErrorReport
from ..params import DecontaminateParams, check_kind
from ..signing import PER_TEXT_BYTE, SIGN_WORK_BYTES, work_slices
from ..text import Utf8Texts
from .bundles import Pieces, regroup
from .diagnostics import StageClock, check_report, performance_report
from .folders import (
    Folder,
    check_folders,
    check_written,
    unmark,
    write_manifests,
    write_summary_json,
)
from .inputs import Block, InputFile, list_inputs, plan_blocks, text_bytes
from .job import (
    MIN_DESTS,
    JobOptions,
    _dup_problems,
    _line_offsets,
    _problems,
    _stage,
    fit_to_workers,
    refuse_missing_id_field,
    sizes_started_with,
    start_work,
)
from .scan import ReadSpec, block_meta, copy_kept, placed_docs, read_block
from .stages import (
    PART_SIZES,
    PART_STAMPS,
    dropped_of,
    duplicates,
    fill_ids,
    id_records,
    kept_kind,
    open_part,
    part_name,
    part_stamp,
    put_part,
)
from .tables import Docs
from .workdir import WorkDir, work_folder
from .worker_heap import keep_heap_on_workers

#: Input bytes per destination of the ids shuffle, in destination sizes (``dest_bytes``): ids
#: are a small part of a record.
ID_DEST_SHARE = 16
#: Pairs of a block's matches read back at a time to be written: a block's matches can be many
#: times its text (items sharing a template at a low containment), and are never all held.
MATCH_ROWS = 1 << 16


@dataclass(frozen=True)
class DecontaminateFolders:
    """Output folders or URL prefixes (None skips one): the clean records, the matches lines;
    and the summary JSON file."""

    clean: str | None = None
    matches: str | None = None
    summary_json: str | None = None


@dataclass(frozen=True)
class Layout:
    """What every task knows of the run: files, blocks, how records read, where things go."""

    files: list[InputFile]
    blocks: list[Block]
    spec: ReadSpec
    work: WorkDir
    storage_options: dict[str, Any]
    line_offsets: list[int]


def benchmark_hash(ids: list[str], texts: list[str]) -> str:
    """The benchmark's content as a hex digest: a changed benchmark is a new run."""
    data = json.dumps([ids, texts], ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


# -- tasks (on the workers) ---------------------------------------------------------------------
def _matches_schema() -> Any:
    """The schema of a block's matches file: a pair a row, its spans as lists."""
    import pyarrow as pa

    spans = pa.large_list(pa.int64())
    return pa.schema(
        [("doc", pa.int64()), ("item", pa.int64()), ("shared", pa.int64()),
         ("containment", pa.float64()), ("starts", spans), ("ends", spans)]
    )  # fmt: skip


def _matches_table(lo: int, m: Matches) -> Any:
    """A piece of a block's matches (its documents counted from ``lo``) as an Arrow table."""
    import pyarrow as pa

    offsets = (m.span_offsets - m.span_offsets[0]).astype(np.int64)
    first, last = int(m.span_offsets[0]), int(m.span_offsets[-1])
    starts = m.starts[first:last].astype(np.int64)
    ends = m.ends[first:last].astype(np.int64)
    columns = [
        pa.array((m.doc + lo).astype(np.int64)),
        pa.array(m.item.astype(np.int64)),
        pa.array(m.shared.astype(np.int64)),
        pa.array(m.containment.astype(np.float64)),
        pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(starts)),
        pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(ends)),
    ]
    return pa.Table.from_arrays(columns, schema=_matches_schema())


def _matches_of(table: Any) -> Matches:
    """``_matches_table``'s table back as ``Matches``."""
    import pyarrow.compute as pc

    def num(name: str, dtype: Any) -> np.ndarray:
        return np.asarray(table.column(name).to_numpy(), dtype=dtype)

    starts = table.column("starts").combine_chunks()
    counts = np.asarray(pc.list_value_length(starts).to_numpy(zero_copy_only=False), np.int64)
    flat_starts = np.asarray(pc.list_flatten(starts).to_numpy(), np.int64)
    flat_ends = np.asarray(pc.list_flatten(table.column("ends").combine_chunks()).to_numpy())
    return Matches(
        num("doc", np.int64), num("item", np.int64), num("shared", np.int64),
        num("containment", np.float64), np.r_[0, np.cumsum(counts)].astype(np.int64),
        flat_starts, flat_ends.astype(np.int64),
    )  # fmt: skip


def _take(found: Matches, rows: np.ndarray) -> Matches:
    """The pairs ``rows`` (ascending) of ``found``, with their spans."""
    lo, hi = found.span_offsets[rows], found.span_offsets[rows + 1]
    counts = hi - lo
    spans = np.repeat(lo - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    return replace(
        found,
        doc=found.doc[rows],
        item=found.item[rows],
        shared=found.shared[rows],
        containment=found.containment[rows],
        span_offsets=np.r_[0, np.cumsum(counts)].astype(np.int64),
        starts=found.starts[spans],
        ends=found.ends[spans],
    )


def scan_block(index: int, layout: Layout, finder: Decontaminator) -> dict[str, Any]:
    """Read one block and find the benchmark items its records contain; the records' places
    and the matches go to the work folder, the counts the client needs are returned. A block
    already in the folder is not redone."""
    work = layout.work
    rel = f"scan/part-{index:05d}"
    if work.exists(rel + ".json"):
        return dict(work.read_json(rel + ".json"))
    block = layout.blocks[index]
    parts, collected, reader = read_block(
        block, layout.files[block.file], layout.spec, layout.storage_options
    )
    docs, texts = placed_docs(index, parts, 0 if reader is None else reader.first)
    meta = block_meta(block, docs, parts, collected, reader)
    del parts
    ranges = work_slices(texts, PER_TEXT_BYTE, 0, SIGN_WORK_BYTES)  # fingerprints at a time
    with work.table_writer(f"scan/matches-{index:05d}.parquet", _matches_schema()) as put:
        for lo, hi in ranges:  # a piece of matches at a time: never all of a block's at once
            for found in finder.scan_pieces(texts[lo:hi]):
                put(_matches_table(lo, found))
    del texts
    work.write_table(rel + ".parquet", docs.to_arrow())
    work.write_json(rel + ".json", meta)
    trim()
    return meta


def id_pieces(index: int, layout: Layout, n_dests: int) -> Pieces:
    """A block's ids (absent ones named by their line), by the destination of their hash."""
    docs = Docs.from_arrow(layout.work.read_table(f"scan/part-{index:05d}.parquet"))
    name = layout.files[layout.blocks[index].file].name
    offset = layout.line_offsets[index]
    docs = fill_ids(docs, name, offset, layout.spec.many)
    return {d: {"ids": t} for d, t in id_records(docs, offset, n_dests).items()}


def id_take(dest: int, tables: dict[str, list[Any]], layout: Layout) -> dict[str, Any]:
    """The records of one destination whose id an earlier record has, to the work folder."""
    work = layout.work
    rel = f"ids/part-{dest:05d}.json"
    if work.exists(rel):
        return dict(work.read_json(rel))
    dups = duplicates(tables.get("ids", []))
    work.write_table(f"ids/dups-{dest:05d}.parquet", dups)
    answer = {"dups": dups.num_rows}
    work.write_json(rel, answer)
    return answer


def write_block(
    index: int,
    dropped: list[int],
    layout: Layout,
    bench_ids: list[str],
    folders: DecontaminateFolders,
    kind: str,
) -> dict[str, Any]:
    """One block's clean records (copied byte for byte) and matches lines, each a part file;
    ``dropped``: its records dropped for a repeated id (neither clean nor matched)."""
    work = layout.work
    rel = f"write/part-{index:05d}.json"
    if work.exists(rel):
        return dict(work.read_json(rel))
    docs = Docs.from_arrow(work.read_table(f"scan/part-{index:05d}.parquet"))
    present = np.ones(len(docs), dtype=np.bool_)
    present[np.asarray(dropped, dtype=np.int64)] = False
    storage = layout.storage_options
    file = layout.files[layout.blocks[index].file]
    sizes: dict[str, int] = {}  # each part's bytes and stamp, by folder: a rerun checks the
    stamps: dict[str, str | None] = {}  # parts by them
    with contextlib.ExitStack() as stack:
        sink = None
        if folders.matches is not None:
            sink = stack.enter_context(
                open_part(folders.matches, part_name(index, "jsonl"), storage)
            )
        contaminated, n_matches, items, nbytes = _write_matches(
            layout, index, docs, present, bench_ids, sink
        )
    if folders.matches is not None:  # whole now: its stamp is the one the folder keeps
        sizes["matches"] = nbytes
        stamps["matches"] = part_stamp(folders.matches, part_name(index, "jsonl"), storage)
    keep = present & ~contaminated
    if folders.clean is not None:
        kept = io.BytesIO()
        block = layout.blocks[index]
        copy_kept(file, block, docs, keep, kept, layout.spec, storage)
        name = part_name(index, kind)
        sizes["kept"], stamps["kept"] = put_part(folders.clean, name, kept.getvalue(), storage)
    answer: dict[str, Any] = {
        PART_SIZES: sizes,
        PART_STAMPS: stamps,
        "block": index,
        "documents": int(present.sum()),
        "contaminated": int(contaminated.sum()),
        "kept": int(keep.sum()),
        "matches": n_matches,
        "items": items,
        "nbytes": int((docs.end[present] - docs.start[present]).sum()),
    }
    work.write_json(rel, answer)
    trim()
    return answer


def _write_matches(
    layout: Layout,
    index: int,
    docs: Docs,
    present: np.ndarray,
    bench_ids: list[str],
    sink: BinaryIO | None,
) -> tuple[np.ndarray, int, list[int], int]:
    """A block's matches read back a piece at a time (``MATCH_ROWS`` pairs), those of records
    not ``present`` left out, their lines written to ``sink`` (when there is one); returns
    which records are contaminated, the pairs, the items matched and the bytes written."""
    file = layout.files[layout.blocks[index].file]
    contaminated = np.zeros(len(docs), dtype=np.bool_)
    n_matches, nbytes, items = 0, 0, np.zeros(0, dtype=np.int64)
    for table in layout.work.table_pieces(f"scan/matches-{index:05d}.parquet", MATCH_ROWS):
        found = _matches_of(table)
        if not present.all():
            found = _take(found, np.flatnonzero(present[found.doc]))
        contaminated |= found.contaminated(len(docs))
        n_matches += len(found)
        items = np.union1d(items, found.item)
        if sink is not None and len(found):
            matched, row = np.unique(found.doc, return_inverse=True)
            named = fill_ids(
                docs.take(matched), file.name, layout.line_offsets[index], layout.spec.many
            )
            found = replace(found, doc=row.astype(np.int64))
            nbytes += sink.write(match_lines(found, list(named.ids), bench_ids))
    return contaminated, n_matches, items.tolist(), nbytes


def _names(ids: Utf8Texts) -> list[str]:
    return list(ids)


def _without_shingles(finder: Decontaminator) -> int:
    return int((finder.sizes_ == 0).sum())


# -- the job (on the client) --------------------------------------------------------------------
def check_job(
    inputs: list[str],
    folders: DecontaminateFolders,
    options: JobOptions,
    also_inputs: tuple[str, ...] = (),
) -> list[InputFile]:
    """The training files, once the options and output folders are checked (before any
    cluster is needed): JSONL only, outputs that are no input (``also_inputs``: the
    benchmark's files) and hold nothing but an earlier output."""
    if options.on_error not in ("stop", "skip"):
        raise ParamError(f"on_error must be 'stop' or 'skip', got {options.on_error!r}")
    if not (folders.clean or folders.matches or folders.summary_json):
        raise ParamError("name an output: -o CLEAN, --matches FOLDER or --summary-json FILE")
    storage = dict(options.storage_options)
    files = list_inputs(inputs, storage, options.format)
    against = [InputFile(p, p, 0, "", False) for p in also_inputs if p != "-"]
    check_folders(
        {"-o": folders.clean, "--matches": folders.matches},
        {"--summary-json": folders.summary_json,
         "--performance-report": options.performance_report},
        [*files, *against], options.work_dir, storage, [*inputs, *also_inputs],
    )  # fmt: skip
    check_report(options.performance_report)
    return files


def _run_key(
    params: DecontaminateParams, bench_ids: list[str], bench_texts: list[str], options: JobOptions
) -> dict[str, Any]:
    """What a resumed run must share with the one that started the work folder."""
    return {
        "params": params.fingerprint(),
        "benchmark": benchmark_hash(bench_ids, bench_texts),
        "read": [
            "decontaminate",
            options.text_field,
            options.id_field,
            options.on_error,
            options.max_record_size,
        ],
    }


def _scan(client: Any, layout: Layout, finder: Any) -> list[Any]:
    """Each block's scan metadata: scanned on the cluster, or read back when a run before
    this one finished the stage."""
    work, n_blocks = layout.work, len(layout.blocks)
    if work.done("scan"):
        return [work.read_json(f"scan/part-{b:05d}.json") for b in range(n_blocks)]
    futures = client.map(
        scan_block, range(n_blocks), layout=layout, finder=finder, pure=False, key="neardup-scan"
    )
    metas: list[Any] = client.gather(futures)
    work.mark("scan")
    return metas


def _write(
    client: Any,
    layout: Layout,
    out: list[Folder],
    dropped: dict[int, list[int]],
    names: Any,
    folders: DecontaminateFolders,
    kind: str,
) -> dict[int, Any]:
    """What each block wrote to the clean and matches folders: written on the cluster, or
    read back when a run before this one finished the stage."""
    work, n_blocks, storage = layout.work, len(layout.blocks), layout.storage_options
    if work.done("write"):
        return {b: work.read_json(f"write/part-{b:05d}.json") for b in range(n_blocks)}
    unmark(out, storage)
    futures = client.map(
        write_block, range(n_blocks), [dropped.get(b, []) for b in range(n_blocks)],
        layout=layout, bench_ids=names, folders=folders, kind=kind, pure=False, key="neardup-write",
    )  # fmt: skip
    written = dict(enumerate(client.gather(futures)))
    work.mark("write")
    return written


def run_decontaminate(
    files: list[InputFile],
    bench: tuple[list[str], list[str], ErrorReport],
    params: DecontaminateParams,
    folders: DecontaminateFolders,
    options: JobOptions,
    client: Any,
    info: Any = None,
) -> dict[str, Any]:
    """Decontaminate ``files`` (from ``check_job``) against the benchmark ``bench`` (ids,
    texts, skipped records) on the cluster of ``client``; returns the summary (also in every
    output folder's manifest)."""
    started = time.perf_counter()
    check_kind(params, DecontaminateParams, DECONTAMINATE_EXAMPLE)
    say = info or (lambda message: None)
    storage = dict(options.storage_options)
    options = fit_to_workers(options, client)
    keep_heap_on_workers(client)
    with (
        work_folder(options.work_dir, options.storage_options, info, client) as work,
        performance_report(client, options.performance_report, storage),
    ):
        options = sizes_started_with(work, options)
        return _run_in(files, bench, params, folders, options, client, say, work, started)


def _run_in(
    files: list[InputFile],
    bench: tuple[list[str], list[str], ErrorReport],
    params: DecontaminateParams,
    folders: DecontaminateFolders,
    options: JobOptions,
    client: Any,
    say: Any,
    work: WorkDir,
    started: float,
) -> dict[str, Any]:
    """The job's stages in its work folder: scan, repeated ids, write; returns the summary."""
    bench_ids, bench_texts, bench_errors = bench
    storage = dict(options.storage_options)
    blocks = plan_blocks(files, options.block_bytes)
    run = _run_key(params, bench_ids, bench_texts, options)
    spec = start_work(work, files, options, say, run)
    layout = Layout(files, blocks, spec, work, storage, [0] * len(blocks))
    input_bytes = text_bytes(files)
    n_ids = max(MIN_DESTS, -(-input_bytes // (ID_DEST_SHARE * options.dest_bytes)))

    clock = StageClock(say, client)
    clock.start(f"scan: {len(blocks)} blocks of {len(files)} files, {len(bench_texts)} items")
    # Sent once, packed (Dask never looks inside for task keys), not with every task.
    finder = client.submit(Decontaminator, Utf8Texts.from_strings(bench_texts), params, pure=False)
    names = client.submit(_names, Utf8Texts.from_strings(bench_ids), pure=False)
    empty_items = client.submit(_without_shingles, finder, pure=False)
    metas = _scan(client, layout, finder)
    refuse_missing_id_field(layout.spec.id_field, metas)
    layout = replace(layout, line_offsets=_line_offsets(layout, metas))

    clock.start("ids: finding repeated ids")
    _stage(
        layout, "ids",
        lambda: regroup(range(len(blocks)), id_pieces, (layout, n_ids), n_ids, id_take,
                        (layout,), "neardup-ids", (work, "ids")),
    )  # fmt: skip
    report = _problems(metas, layout, _dup_problems(layout, n_ids, "ids"), options.on_error)
    dropped = {b: v.tolist() for b, v in dropped_of(work, n_ids, "ids").items()}

    clock.start("write: clean records and matches")
    kind = kept_kind(files)
    out: list[Folder] = [(folders.clean, kind, "kept"), (folders.matches, "jsonl", "matches")]
    check_written(work, out, len(blocks), storage)
    written = _write(client, layout, out, dropped, names, folders, kind)
    clock.start("")
    items = (len(bench_texts), int(empty_items.result()), bench_errors)
    summary = _summary(written, report, items, params, started, folders)
    summary["blocks"] = len(blocks)
    summary["stage_seconds"] = clock.seconds
    summary["stage_task_seconds"] = clock.tasks
    write_manifests(out, written, summary, len(blocks), storage)
    write_summary_json(folders.summary_json, summary, storage)
    return summary


def _summary(
    written: dict[int, dict[str, Any]],
    report: Any,
    items: tuple[int, int, ErrorReport],
    params: DecontaminateParams,
    started: float,
    folders: DecontaminateFolders,
) -> dict[str, Any]:
    """The single-machine run's summary fields (and the bad records seen); ``items``: the
    benchmark's items, those without shingles, its skipped records."""
    blocks = [written[b] for b in sorted(written)]
    matched: set[int] = set()
    for b in blocks:
        matched.update(b["items"])
    kept = sum(b["kept"] for b in blocks)
    nbytes = sum(b["nbytes"] for b in blocks)
    seconds = time.perf_counter() - started
    return {
        "documents": sum(b["documents"] for b in blocks),
        "contaminated": sum(b["contaminated"] for b in blocks),
        "kept": kept,
        "written": kept if folders.clean else None,
        "matches": sum(b["matches"] for b in blocks),
        "benchmark_items": items[0],
        "benchmark_items_matched": len(matched),
        "benchmark_items_without_shingles": items[1],
        "skipped_records": report.total,
        "skipped_benchmark_records": items[2].total,
        "problems": report.as_dict(),
        "benchmark_problems": items[2].as_dict(),
        "seconds": round(seconds, 3),
        "mb_per_s": round(nbytes / 1e6 / max(seconds, 1e-9), 2),
        "params": params.fingerprint(),
    }
