"""The stages of a cluster run after the scan, each a function the workers run.

- ``graph``: every document's lookup keys (the method's postings) and content hash, regrouped by
  key: documents sharing one are linked (the only documents that can meet in removal), and ids
  regrouped by their hash reveal duplicate ids (the later record is a bad one, as on one machine).
- ``components`` (its own module): the links -> connected components (the union of shared keys
  and exact copies): in one task when the edges fit its budget, else in rounds of large-star
  and small-star.
- ``finish``: the documents of whole components, regrouped by component, run through the
  engine's own ``Deduplicator.finish`` (the same removal, verification and pairs: components are
  independent), texts read again by span from the inputs; each document's outcome comes back as
  JSON lines of the clusters and pairs files and the keys of removed documents.
- ``write``: per block, the kept records (copied byte for byte), its clusters and pairs lines.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from .._kernels.links import key_links, split_links
from .._kernels.shingles import raw_hash_kernel
from .._types import IntArray
from ..engine import Deduplicator, SignedBatch
from ..io._gzip import gzip_bytes
from ..io._writers import write_clusters, write_pairs
from ..io.formats import format_of
from ..methods import make_method, posting_rows
from ..params import DedupParams
from ..text import Utf8Texts
from .bundles import Pieces, concat_tables, spread
from .components import labels_file, stars
from .inputs import Block, InputFile, file_stamp, filesystem, is_url
from .refetch import Refetch
from .scan import ReadSpec, copy_kept
from .tables import (
    KEY_SHIFT,
    Docs,
    binary_column,
    evidence_of,
    key_block,
    key_index,
    signatures_of,
)
from .workdir import WorkDir, open_whole, write_whole

#: The schema metadata keys of a link table's block and index bits (``link_table``).
LINK_BLOCK = b"neardup.block"
LINK_BITS = b"neardup.index_bits"
#: The fewest low bits of a link given to a document's index (``link_bits``).
MIN_LINK_BITS = 0
#: The "column" of content hashes among the lookup keys: exact copies are linked too.
CONTENT_COLUMN = -1
#: The share of a worker's memory limit the finish engine keeps per-document blocks and exact
#: sets in before spilling them (one machine's default is an eighth of the memory available):
#: a component is never split, so one finish task can hold a giant one whatever the partition.
ENGINE_SHARE = 1 / 8
#: The field of a block's write answer holding its parts' sizes in bytes, by output folder
#: (``kept``, ``clusters``...): a rerun writes a block again whose part has another size.
PART_SIZES = "part_bytes"
#: The field beside it holding each part's stamp (``file_stamp``: its ETag or modification time
#: as its folder reported it right after the write), by output folder: a rerun writes a block
#: again whose part has another stamp (a file of the same size put there since), or when the
#: answer has none (written by a version that kept sizes only).
PART_STAMPS = "part_stamps"
#: Whether the finish stage writes clusters lines and pairs lines (only for outputs asked for).
Lines = tuple[bool, bool]
#: What the write stage reads of the scan (where records are), and what the graph stage
#: reads (the signatures too): neither needs the verifier's evidence, the largest column.
PLACE_COLUMNS = ["key", "recno", "id", "absent", "start", "end", "first", "canonical", "length"]
GRAPH_COLUMNS = [*PLACE_COLUMNS, "sig"]


@dataclass(frozen=True)
class Layout:
    """What every stage knows of the run: files, blocks, how ids read, where things go."""

    files: list[InputFile]
    blocks: list[Block]
    spec: ReadSpec
    params: DedupParams
    work: WorkDir
    storage_options: dict[str, Any]
    line_offsets: list[int]  # lines of the file before each block
    pairs: str  # "removal" or "all"


def _table(columns: dict[str, Any]) -> Any:
    import pyarrow as pa

    return pa.table(columns)


def load_docs(layout: Layout, block: int, columns: list[str] | None = None) -> Docs:
    """A block's documents from the scan, absent ids filled in (``NAME:LINE`` or ``LINE``);
    ``columns``: only those read (see ``Docs.from_arrow``)."""
    docs = Docs.from_arrow(layout.work.read_table(f"scan/part-{block:05d}.parquet", columns))
    name = layout.files[layout.blocks[block].file].name
    return fill_ids(docs, name, layout.line_offsets[block], layout.spec.many)


def fill_ids(docs: Docs, name: str, line_offset: int, many: bool) -> Docs:
    """``docs`` with each absent id set to its line (``NAME:LINE`` when there are several
    files), as the single-machine reader names them; ``line_offset``: lines before the block.
    ``absent`` still says which ids were filled (duplicate-id messages say so)."""
    if not docs.absent.any():
        return docs
    ids: list[str] = list(docs.ids)
    for i in np.flatnonzero(docs.absent).tolist():
        line = int(docs.recno[i]) + line_offset
        ids[i] = f"{name}:{line}" if many else str(line)
    return replace(docs, ids=Utf8Texts.from_strings(ids))


def _id_hashes(ids: Utf8Texts) -> npt.NDArray[np.uint64]:
    return np.asarray(raw_hash_kernel(ids.buf, ids.offsets), dtype=np.uint64)


# -- graph ----------------------------------------------------------------------------------------
def graph_pieces(block: int, layout: Layout, n_dests: int, index_bits: int) -> Pieces:
    """A block's id records and link records, by destination.

    A link is one 64-bit value (``split_links``): the top bits of the record's column-folded
    key, then the document's index in the block in the low ``index_bits``, the same for every
    block of the run (``link_bits``); the block rides in the table's metadata. 8 bytes a link
    where a 64-bit key and a 64-bit document took 16: links are most of what the run moves."""
    docs = load_docs(layout, block, GRAPH_COLUMNS)
    method = make_method(layout.params)
    keys, row, col = posting_rows(method, signatures_of(docs.sig, copy=False))
    link, start = split_links(keys, row, col, docs.canonical, CONTENT_COLUMN, n_dests, index_bits)
    pieces: Pieces = {}
    ids = id_records(docs, layout.line_offsets[block], n_dests)
    for d in range(n_dests):
        at = slice(start[d], start[d + 1])
        tables: dict[str, Any] = {}
        if start[d + 1] > start[d]:
            tables["links"] = link_table(link[at], block, index_bits)
        if d in ids:
            tables["ids"] = ids[d]
        if tables:
            pieces[d] = tables
    return pieces


def link_bits(records: int) -> int:
    """Low bits of a link that hold a document's index, for blocks of up to ``records``
    documents (at least ``MIN_LINK_BITS``); the key keeps the other ``64 - bits``.

    Two keys that agree in their kept bits link documents that share no key: such a link only
    puts two components in one finish task, where the engine pairs documents by their whole
    keys, so no answer changes (at 48 kept bits, about one such link in 30 destinations of 4M
    links each)."""
    return max(MIN_LINK_BITS, int(max(records - 1, 0)).bit_length())


def id_records(docs: Docs, line_offset: int, n_dests: int) -> dict[int, Any]:
    """The documents' ids (hash, document key, line, id) by destination (a hash of the id):
    the records ``duplicates`` finds repeated ids among."""
    hashes = _id_hashes(docs.ids)
    out: dict[int, Any] = {}
    for d, mine in enumerate(_split(spread(hashes, n_dests), n_dests)):
        if len(mine):
            line = docs.recno[mine] + line_offset
            out[d] = _table(
                {
                    "hash": hashes[mine],
                    "doc": docs.key[mine],
                    "line": line,
                    "id": binary_column(docs.ids.take(mine)),
                    "absent": docs.absent[mine],
                }
            )
    return out


def _split(dest: npt.NDArray[np.int64], n: int) -> list[IntArray]:
    """Positions of each destination's rows (ascending), by one stable sort (a radix sort
    when the destinations fit 16 bits: NumPy sorts those in linear time)."""
    order = np.argsort(dest.astype(np.uint16) if n <= 1 << 16 else dest, kind="stable")
    bounds = np.searchsorted(dest[order], np.arange(n + 1))
    return [order[bounds[d] : bounds[d + 1]] for d in range(n)]


def graph_take(dest: int, tables: dict[str, list[Any]], layout: Layout) -> dict[str, Any]:
    """Links of one destination -> star edges (document, smallest document linked to it), and
    its duplicate ids; both written to the work folder."""
    work = layout.work
    rel = f"graph/part-{dest:05d}"
    if work.exists(rel + ".json"):
        return dict(work.read_json(rel + ".json"))
    edges_u, edges_v = np.zeros(0, np.int64), np.zeros(0, np.int64)
    if "links" in tables:
        key, doc = link_columns(tables["links"])
        a, b = key_links(key, doc)  # each row's document to its key's smallest holder
        del key, doc
        edges_u, edges_v = stars(a, b)  # each document to its component's smallest
    dups = duplicates(tables.get("ids", []))
    work.write_table(rel + ".parquet", _table({"doc": edges_u, "root": edges_v}))
    work.write_table(f"graph/dups-{dest:05d}.parquet", dups)
    answer = {"edges": len(edges_u), "dups": dups.num_rows}
    work.write_json(rel + ".json", answer)
    return answer


def link_table(link: npt.NDArray[np.uint64], block: int, index_bits: int) -> Any:
    """Links of one block (``split_links``) as a table ``link_columns`` reads back."""
    meta = {LINK_BLOCK: str(block).encode(), LINK_BITS: str(index_bits).encode()}
    return _table({"link": link}).replace_schema_metadata(meta)


def link_columns(tables: list[Any]) -> tuple[npt.NDArray[np.uint64], IntArray]:
    """(kept key bits, document key) of the links in ``link_table``s, in their order."""
    links = [t.column("link").to_numpy() for t in tables]
    bits = {int(t.schema.metadata[LINK_BITS]) for t in tables}
    if len(bits) != 1:
        raise ValueError(f"links of one run differ in their index bits: {sorted(bits)}")
    shift = np.uint64(bits.pop())
    key = np.concatenate(links) >> shift
    doc = np.empty(len(key), dtype=np.int64)
    at = 0
    for t, link in zip(tables, links, strict=True):
        block = np.int64(int(t.schema.metadata[LINK_BLOCK]))
        index = (link & ((np.uint64(1) << shift) - np.uint64(1))).astype(np.int64)
        doc[at : at + len(index)] = (block << KEY_SHIFT) + index
        at += len(index)
    return key, doc


def duplicates(parts: list[Any]) -> Any:
    """Records whose id an earlier record (input order) has: (doc, earlier doc, their lines, id,
    and whether each has no id and is named by its line)."""
    if not parts:
        return _dups_table([])
    ids = concat_tables(parts)
    h = ids.column("hash").to_numpy()
    doc = ids.column("doc").to_numpy()
    lines = ids.column("line").to_numpy()
    absent = (
        ids.column("absent").to_numpy(zero_copy_only=False)
        if "absent" in ids.column_names  # id tables of an older run resumed
        else np.zeros(len(doc), np.bool_)
    )
    order = np.lexsort((doc, h))
    h, doc, lines, absent = h[order], doc[order], lines[order], absent[order]
    repeated = np.flatnonzero(np.r_[h[1:] == h[:-1], False] | np.r_[False, h[1:] == h[:-1]])
    names = ids.column("id").take(order[repeated]).to_pylist()  # UTF-8 bytes
    first: dict[str, int] = {}
    out: list[tuple[int, int, int, int, str, bool, bool]] = []
    for i, name in zip(repeated.tolist(), names, strict=True):  # repeated id hashes: a handful
        rid = name.decode("utf-8", "surrogatepass")
        if rid in first:
            e = first[rid]
            out.append((int(doc[i]), int(doc[e]), int(lines[i]), int(lines[e]), rid,
                        bool(absent[i]), bool(absent[e])))  # fmt: skip
        else:
            first[rid] = i
    return _dups_table(out)


def _dups_table(rows: list[tuple[int, int, int, int, str, bool, bool]]) -> Any:
    """The table of ``duplicates``' rows, one column each."""
    import pyarrow as pa

    cols: list[Any] = list(zip(*rows, strict=True)) if rows else [()] * 7
    ints = [np.asarray(c, np.int64) for c in cols[:4]]
    flags = [pa.array(c, pa.bool_()) for c in cols[5:]]
    return pa.table(
        {
            "doc": ints[0],
            "earlier": ints[1],
            "line": ints[2],
            "earlier_line": ints[3],
            "id": list(cols[4]),
            "absent": flags[0],
            "earlier_absent": flags[1],
        }
    )


def dropped_of(work: WorkDir, n_graph: int, stage: str = "graph") -> dict[int, IntArray]:
    """Documents dropped for a duplicate id, by block (indices within the block, ascending)."""
    keys = []
    for d in range(n_graph):
        if not work.exists(f"{stage}/dups-{d:05d}.parquet"):  # no id was sent there
            continue
        t = work.read_table(f"{stage}/dups-{d:05d}.parquet")
        keys.append(t.column("doc").to_numpy())
    every = np.sort(np.concatenate([np.zeros(0, np.int64), *keys]))
    blocks = key_block(every)
    return {int(b): key_index(every[blocks == b]) for b in np.unique(blocks).tolist()}


# -- finish ---------------------------------------------------------------------------------------
def finish_pieces(
    block: int, layout: Layout, n_dests: int, dropped: dict[int, list[int]], components: str
) -> Pieces:
    """A block's documents in components (and not dropped), by component destination;
    ``components``: the folder of the components' labels, a file per block."""
    rel = labels_file(components, block)
    if not layout.work.exists(rel):  # none of the block's documents is linked
        return {}
    docs = load_docs(layout, block)
    t = layout.work.read_table(rel)
    keys = t.column("doc").to_numpy()
    labels = t.column("label").to_numpy()
    rows = key_index(keys)
    if block in dropped:
        keep = ~np.isin(rows, np.asarray(dropped[block], dtype=np.int64))
        rows, labels = rows[keep], labels[keep]
    dest = spread(labels, n_dests)
    pieces: Pieces = {}
    for d, at in enumerate(_split(dest, n_dests)):  # one stable sort, not a pass per destination
        if len(at):
            sub = docs.take(rows[at]).to_arrow()
            sub = sub.append_column("label", _table({"x": labels[at]}).column("x"))
            pieces[d] = {"docs": sub}
    return pieces


def _dense(keys: IntArray, offsets: IntArray, dropped: dict[int, list[int]]) -> IntArray:
    """Global positions (input order among accepted records) of document keys."""
    blocks = key_block(keys)
    idx = key_index(keys)
    out = offsets[blocks] + idx
    for b in np.unique(blocks).tolist():
        if b in dropped:
            at = blocks == b
            out[at] -= np.searchsorted(np.asarray(dropped[b], dtype=np.int64), idx[at])
    return out


def finish_take(
    dest: int,
    tables: dict[str, list[Any]],
    layout: Layout,
    offsets: list[int],
    dropped: dict[int, list[int]],
    lines: Lines,
) -> dict[str, Any]:
    """The engine's ``finish`` on the documents of whole components; writes the rows each
    block needs (removed documents, and clusters and pairs lines as ``lines`` asks: 1 s of
    2 workers' 11 on 1M documents, when neither is written) and returns the statistics."""
    import pyarrow as pa

    work = layout.work
    rel = f"finish/part-{dest:05d}"
    if work.exists(rel + ".json"):
        return dict(work.read_json(rel + ".json"))
    table = concat_tables(tables["docs"])
    order = np.argsort(table.column("key").to_numpy(), kind="stable")
    table = table.take(pa.array(order))
    docs = Docs.from_arrow(table)
    memory = engine_memory()
    dedup = Deduplicator(layout.params, pairs=layout.pairs, **memory)  # type: ignore[arg-type]
    dedup.append(
        SignedBatch(docs.canonical, docs.length, signatures_of(docs.sig), evidence_of(docs.ev)), 0
    )
    refetch = Refetch(layout, docs, memory.get("spill_dir"))
    try:
        dedup.finish(None, refetch)
    finally:
        refetch.close()
    clusters, rows, pairs, (a, b) = _result_lines(dedup, docs, offsets, dropped, layout, lines)
    removed = docs.key[~dedup.kept_]
    out = _table(
        {
            "kind": np.concatenate([np.zeros(len(removed), np.int8), np.ones(len(rows), np.int8),
                                    np.full(len(a), 2, np.int8)]),
            "key": np.concatenate([removed, docs.key[rows], docs.key[a]]),
            "key2": np.concatenate([np.zeros(len(removed) + len(rows), np.int64), docs.key[b]]),
            "line": [b""] * len(removed) + clusters + pairs,
        }
    )  # fmt: skip
    work.write_table(rel + ".parquet", out)
    stats = {k: v for k, v in dedup.stats_.as_dict().items() if isinstance(v, int | float)}
    work.write_json(rel + ".json", stats)
    return stats


def _result_lines(
    dedup: Deduplicator,
    docs: Docs,
    offsets: list[int],
    dropped: dict[int, list[int]],
    layout: Layout,
    lines: Lines,
) -> tuple[list[bytes], IntArray, list[bytes], tuple[IntArray, IntArray]]:
    """A finish part's clusters lines and their rows, and its pairs lines and their pairs,
    none of a kind ``lines`` does not ask for."""
    none = np.zeros(0, np.int64)
    clusters: list[bytes] = []
    pairs: list[bytes] = []
    rows, a, b = none, none, none
    ids = list(docs.ids) if any(lines) else []
    if lines[0]:
        sizes = np.bincount(dedup.clusters_, minlength=len(docs))
        rows = np.flatnonzero(sizes[dedup.clusters_] >= 2)
        clusters = _lines(
            write_clusters,
            ids,
            _dense(docs.key[dedup.clusters_], np.asarray(offsets, dtype=np.int64), dropped),
            dedup.kept_,
            rows,
            duplicate_of=dedup.duplicate_of_,
            score=dedup.duplicate_score_,
        )
    if lines[1]:
        a, b, s = dedup.all_pairs() if layout.pairs == "all" else dedup.pairs_
        pairs = _lines(write_pairs, ids, a, b, s)
    return clusters, rows, pairs, (a, b)


def engine_memory() -> dict[str, Any]:
    """The finish engine's ``memory_limit`` (``ENGINE_SHARE`` of this worker's limit) and
    ``spill_dir`` (the worker's own folder); none off a worker or on one without a limit."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return {}
    limit = worker.memory_manager.memory_limit
    if not limit:
        return {}
    return {"memory_limit": int(limit * ENGINE_SHARE), "spill_dir": worker.local_directory}


def _lines(write: Any, *args: Any, **kwargs: Any) -> list[bytes]:
    """The rows a result writer formats, one bytes line each."""
    sink = io.BytesIO()
    write(sink, *args, **kwargs)
    data = sink.getvalue()
    return [line + b"\n" for line in data.split(b"\n")[:-1]] if data else []


# -- write ----------------------------------------------------------------------------------------
def write_pieces(item: tuple[str, int], layout: Layout) -> Pieces:
    """A finish part's rows by block; or, for ``("blocks", n)``, a marker for each of the n
    blocks, so that every block writes (one source for them all: each source of a regrouping
    costs its own tasks, about 15 ms of a run's wall time on ``local:2``)."""
    kind, index = item
    if kind == "blocks":
        return {b: {"marker": _table({"block": np.asarray([b], np.int64)})} for b in range(index)}
    t = layout.work.read_table(f"finish/part-{index:05d}.parquet")
    block = key_block(t.column("key").to_numpy())
    pieces: Pieces = {}
    for b in np.unique(block).tolist():
        pieces[int(b)] = {"rows": t.filter(_table({"x": block == b}).column("x"))}
    return pieces


@dataclass(frozen=True)
class Outputs:
    """Folders (local or URLs) the parts go to; None skips one."""

    kept: str | None
    clusters: str | None
    pairs: str | None
    kind: str  # the kept parts' format: a ``part_name`` kind


def kept_kind(files: list[InputFile]) -> str:
    """The format of the kept records' parts: the inputs' own (one format: ``list_inputs``),
    "jsonl.gz" when every input is a gzipped JSONL file."""
    kind = str(format_of(files[0].name).copies_as or "jsonl") if files else "jsonl"
    return f"{kind}.gz" if files and all(f.gzip for f in files) else kind


def part_name(block: int, kind: str) -> str:
    """A block's part file: ``part-NNNNN.`` and its kind ("jsonl", "jsonl.gz", "parquet")."""
    return f"part-{block:05d}.{kind}"


def write_take(
    block: int,
    tables: dict[str, list[Any]],
    layout: Layout,
    outputs: Outputs,
    dropped: dict[int, list[int]],
) -> dict[str, Any]:
    """One block's kept records, clusters lines and pairs lines, each as a part file."""
    work = layout.work
    rel = f"write/part-{block:05d}.json"
    if work.exists(rel):
        return dict(work.read_json(rel))
    docs = Docs.from_arrow(work.read_table(f"scan/part-{block:05d}.parquet", PLACE_COLUMNS))
    keep = np.ones(len(docs), dtype=np.bool_)
    if block in dropped:
        keep[np.asarray(dropped[block], dtype=np.int64)] = False
    present = keep.copy()
    cluster_lines: list[bytes] = []
    pair_lines: list[bytes] = []
    if "rows" in tables:
        rows = concat_tables(tables["rows"])
        kind = rows.column("kind").to_numpy()
        key = rows.column("key").to_numpy()
        key2 = rows.column("key2").to_numpy()
        lines = rows.column("line").to_pylist()
        keep[key_index(key[kind == 0])] = False
        c = np.flatnonzero(kind == 1)
        o = c[np.argsort(key[c], kind="stable")]
        cluster_lines = [lines[i] for i in o.tolist()]
        p = np.flatnonzero(kind == 2)
        o = p[np.lexsort((key2[p], key[p]))]
        pair_lines = [lines[i] for i in o.tolist()]
    file = layout.files[layout.blocks[block].file]
    storage = layout.storage_options
    written: dict[str, Any] = {"block": block, "documents": int(present.sum())}
    written["kept"] = int(keep.sum())
    written["empty"] = int((docs.canonical[present] == np.uint64(0xFFFFFFFFFFFFFFFF)).sum())
    written["nbytes"] = int((docs.end[present] - docs.start[present]).sum())
    sizes: dict[str, int] = {}  # each part's bytes and stamp, by folder: a rerun checks the
    stamps: dict[str, str | None] = {}  # parts by them
    if outputs.kept is not None:
        sink = io.BytesIO()
        place = layout.blocks[block]
        copy_kept(file, place, docs, keep, sink, layout.spec, layout.storage_options)
        data = sink.getvalue()
        name = part_name(block, outputs.kind)
        sizes["kept"], stamps["kept"] = put_part(outputs.kept, name, data, storage)
        written["kept_bytes"] = len(data)
    for count, folder, lines in (("clusters", outputs.clusters, cluster_lines),
                                 ("pairs", outputs.pairs, pair_lines)):  # fmt: skip
        if folder is not None:
            name, data = part_name(block, "jsonl"), b"".join(lines)
            sizes[count], stamps[count] = put_part(folder, name, data, storage)
    written[PART_SIZES] = sizes
    written[PART_STAMPS] = stamps
    written["clusters"] = len(cluster_lines)
    written["pairs"] = len(pair_lines)
    work.write_json(rel, written)
    return written


@contextlib.contextmanager
def open_part(folder: str, name: str, storage: dict[str, Any]) -> Iterator[BinaryIO]:
    """A part file written as it goes, whole or absent as ``put_part`` writes (not gzipped):
    for parts too large to hold."""
    fs, root = filesystem(folder, storage)
    with open_whole(fs, f"{root.rstrip('/')}/{name}", is_url(folder)) as fh:
        yield fh


def put_part(
    folder: str, name: str, data: bytes, storage: dict[str, Any]
) -> tuple[int, str | None]:
    """A part file, whole or absent; a name ending ``.gz`` gzipped (without a timestamp: the
    same bytes every run). Returns its size and stamp (``part_stamp``), which a rerun checks
    the part against."""
    if name.endswith(".gz"):
        data = gzip_bytes(data)
    fs, root = filesystem(folder, storage)
    write_whole(fs, f"{root.rstrip('/')}/{name}", data, is_url(folder))
    return len(data), part_stamp(folder, name, storage)


def part_stamp(folder: str, name: str, storage: dict[str, Any]) -> str | None:
    """A part file's stamp as its folder reports it just after the write (``file_stamp``: ETag
    or modification time; None when there is neither): a file of the same size written over
    it since, by another program or run, has another one."""
    fs, root = filesystem(folder, storage)
    return file_stamp(fs.info(f"{root.rstrip('/')}/{name}"))
