"""A block of an input file on a worker -> its signed documents; kept lines and texts by span.

The worker reads its block through fsspec with the single-machine reader itself (the file's
``io.formats`` format: the same parser, the same bad-record messages), signs it with the
engine's ``Deduplicator.sign`` (the method's signatures, the verifier's evidence), and keeps the
result in the work folder. Problems are collected, not raised: whether a run stops is decided
on the client once every block's first problem is known, so the one reported is the first in
input order, as on one machine.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from typing import Any, BinaryIO, cast

import numpy as np
import numpy.typing as npt

from .._kernels.ranges import gather_ranges
from .._types import IntArray
from ..engine import Deduplicator
from ..io._jsonl_blocks import LineBlock, read_runs
from ..io._parquet import (
    ParquetSink,
    SchemaRef,
    copy_rows_parquet,
    first_usable,
    text_schema,
)
from ..io._report import MAX_EXAMPLES, MAX_RECORD_SIZE, Entry, ErrorReport, Problems
from ..io.formats import Fields, format_of
from ..params import DedupParams
from ..text import Utf8Texts
from .inputs import Block, InputFile, filesystem
from .tables import Docs, Rows, doc_keys, evidence_rows, signature_rows
from .workdir import WorkDir

_READ = 1 << 20


@dataclass(frozen=True)
class ReadSpec:
    """How records are read: fields, and whether ids default to ``NAME:LINE`` (several files);
    for Parquet inputs, the first usable file's schema (serialised), name and codec, which
    every file must have and kept rows are written with (``parquet_reference``)."""

    text_field: str
    id_field: str
    many: bool
    limit: int = MAX_RECORD_SIZE  # the largest record read (--max-record-size)
    schema: bytes = b""
    schema_of: str = ""
    compression: str = "snappy"

    @property
    def fields(self) -> Fields:
        return Fields(self.text_field, self.id_field, many=self.many)

    def memo(self) -> SchemaRef | None:
        """What the Parquet reader checks files against (None: not a Parquet run)."""
        if not self.schema:
            return None
        import pyarrow as pa

        schema = pa.ipc.read_schema(pa.py_buffer(self.schema))
        return SchemaRef(schema, self.schema_of, self.compression)


class Collected(Problems):
    """Problems remembered in order instead of raised or counted (the client decides)."""

    def __init__(self) -> None:
        super().__init__("skip", ErrorReport())
        self.records: list[tuple[int, str, str, str]] = []
        self.files: list[tuple[str, str, str]] = []

    def record(self, entry: Entry, recno: int, kind: str, problem: str, fix: str) -> None:
        self.records.append((recno, kind, problem, fix))

    def file(self, entry: Entry, kind: str, problem: str, fix: str, skip_hint: bool = True) -> None:
        self.files.append((kind, problem, fix))


class OwnedLines(io.RawIOBase):
    """The lines of a file that start in bytes [start, end): from the first line start at or
    after ``start`` to the newline ending the line that holds byte end - 1. Counts its lines."""

    def __init__(self, open_file: Any, start: int, end: int) -> None:
        self._open = open_file
        self._start = start
        self._end = end
        self.lines = 0
        self._raw: Any = None
        self.seek(0)

    def readable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        if pos != 0 or whence != 0:
            raise io.UnsupportedOperation("only seek(0) is supported")
        if self._raw is not None:
            self._raw.close()
        self._raw = self._open()
        self._pos = 0
        self._done = False
        self._last = 0x0A
        self.lines = 0
        if self._start > 0:  # the first line starting at or after start
            self._raw.seek(self._start - 1)
            pos = self._start - 1
            while True:
                chunk = self._raw.read(_READ)
                if not chunk:
                    self._done = True
                    break
                cut = chunk.find(b"\n")
                if cut >= 0:
                    self._pos = pos + cut + 1
                    self._raw.seek(self._pos)
                    break
                pos += len(chunk)
        else:
            self._pos = 0
        self.first = self._pos  # the file offset of the block's first line
        if self._pos >= self._end:
            self._done = True
        return 0

    def readinto(self, buffer: Any) -> int:
        if self._done:
            return 0
        data = self._raw.read(len(buffer))
        if not data:
            self._done = True
        else:
            if self._pos + len(data) >= self._end:  # the line holding byte end - 1 ends here
                cut = data.find(b"\n", max(self._end - 1 - self._pos, 0))
                if cut >= 0:
                    data = data[: cut + 1]
                    self._done = True
            self._pos += len(data)
            self.lines += data.count(b"\n")
            self._last = data[-1]
        if self._done and self._last != 0x0A and (self._pos > 0):
            self.lines += 1
            self._last = 0x0A
        n = len(data)
        buffer[:n] = data
        return n

    def close(self) -> None:
        if self._raw is not None:
            self._raw.close()
        super().close()


def with_reference(
    spec: ReadSpec, files: list[InputFile], storage_options: dict[str, Any] | None
) -> ReadSpec:
    """``spec`` with the first usable Parquet file's schema, name and codec, read from its
    footer on the client (files before it that cannot be read are skipped, as one machine
    skips them); as it is for other inputs."""
    if not files or not by_row_groups(files[0]):
        return spec
    for file in files:
        first = first_usable(file_entry(file, storage_options), spec.text_field, spec.id_field)
        if first is not None and first.schema is not None:
            schema = first.schema.serialize().to_pybytes()
            return replace(spec, schema=schema, schema_of=first.name, compression=first.compression)
    return spec


def file_entry(file: InputFile, storage_options: dict[str, Any] | None) -> Entry:
    """An Entry whose bytes come from fsspec (gzip recognised by its first bytes), its
    records counted as its format counts them (lines, rows)."""
    fs, path = filesystem(file.url, storage_options)
    return Entry(
        name=file.name,
        path=None,
        unit=format_of(file.name).unit,
        opener=lambda: cast(BinaryIO, fs.open(path, "rb")),
    )


def scan_block(
    block: Block,
    file: InputFile,
    spec: ReadSpec,
    params: DedupParams,
    work: WorkDir,
    storage_options: dict[str, Any] | None,
) -> dict[str, Any]:
    """Read, parse and sign one block; its documents go to the work folder, and what the client
    needs (counts, problems, lines) is returned. A block already in the folder is not redone."""
    rel = f"scan/part-{block.index:05d}"
    if work.exists(rel + ".json"):
        return cast(dict[str, Any], work.read_json(rel + ".json"))
    parts, collected, reader = read_block(block, file, spec, storage_options)
    docs, texts = placed_docs(block.index, parts, 0 if reader is None else reader.first)
    dedup = Deduplicator(params)
    if by_row_groups(file) and dedup.verifier.needs_texts:
        docs = spool_texts(work, block.index, docs, texts)
    docs = _signed(docs, texts, dedup)
    work.write_table(rel + ".parquet", docs.to_arrow())
    meta = block_meta(block, docs, parts, collected, reader)
    work.write_json(rel + ".json", meta)
    return meta


def read_block(
    block: Block, file: InputFile, spec: ReadSpec, storage_options: dict[str, Any] | None
) -> tuple[list[LineBlock], Collected, OwnedLines | None]:
    """The parsed records of one block, its problems, and the reader of a plain file's part
    (its first byte and line count; None when the block is the whole file)."""
    collected = Collected()
    fmt = format_of(file.name)
    if by_row_groups(file):
        entry = file_entry(file, storage_options)
        entry.max_record, entry.byte_range = spec.limit, (block.start, block.end)
        first = spec.memo() or SchemaRef()  # none given: the file is its own reference
        return list(fmt.blocks(entry, spec.fields, collected, None, first)), collected, None
    fs, path = filesystem(file.url, storage_options)
    readers: list[OwnedLines] = []  # a block of a plain file: its own lines only

    def owned() -> BinaryIO:
        readers.append(OwnedLines(lambda: fs.open(path, "rb"), block.start, block.end))
        return cast(BinaryIO, readers[-1])

    if block.start == 0 and block.end >= file.size:
        entry = file_entry(file, storage_options)
        entry.max_record = spec.limit
    else:
        entry = Entry(name=file.name, path=None, plain=True, opener=owned, max_record=spec.limit)
    parts = list(fmt.blocks(entry, spec.fields, collected))
    return parts, collected, readers[-1] if readers else None


def by_row_groups(file: InputFile) -> bool:
    """Whether the file's blocks are the row groups that start in their byte ranges
    (Parquet), not the lines that do (JSONL)."""
    return format_of(file.name).cluster_blocks == "row groups"


def block_meta(
    block: Block,
    docs: Docs,
    parts: list[LineBlock],
    collected: Collected,
    reader: OwnedLines | None,
) -> dict[str, Any]:
    """What the client needs of a scanned block: counts, first problems, lines."""
    records = sorted([*collected.records, *(p for part in parts for p in part.problems)])
    counts: dict[str, int] = {}
    for _, kind, _, _ in records:
        counts[kind] = counts.get(kind, 0) + 1
    for kind, _, _ in collected.files:
        counts[kind] = counts.get(kind, 0) + 1
    return {
        "block": block.index,
        "lines": reader.lines if reader is not None else None,
        "records": len(docs),
        "nbytes": int((docs.end - docs.start).sum()),
        "counts": counts,
        "problems": [list(p) for p in records[:MAX_EXAMPLES]],
        "file_problems": [list(p) for p in collected.files[:MAX_EXAMPLES]],
        "absent": int(docs.absent.sum()),
    }


def placed_docs(block: int, parts: list[LineBlock], base: int) -> tuple[Docs, Utf8Texts]:
    """The block's records as Docs placed in their file (keys, lines, ids, byte spans), not yet
    signed (no content hash, length, signature or evidence), and their texts."""
    ids = Utf8Texts.concat([p.ids for p in parts]) if parts else Utf8Texts.from_strings([])
    texts = Utf8Texts.concat([p.texts for p in parts]) if parts else Utf8Texts.from_strings([])

    def cat(name: str, dtype: Any) -> np.ndarray:
        return np.concatenate([np.zeros(0, dtype=dtype), *(getattr(p, name) for p in parts)])

    n = len(texts)
    nothing = Rows(np.zeros(0, np.uint8), np.zeros(n + 1, np.int64), "|u1", None)
    docs = Docs(
        doc_keys(block, n),
        cat("recnos", np.int64),
        ids,
        cat("absent", np.bool_),
        cat("starts", np.int64) + base,
        cat("ends", np.int64) + base,
        cat("firsts", np.uint8),
        np.zeros(n, np.uint64),
        np.zeros(n, np.int64),
        nothing,
        nothing,
    )
    return docs, texts


def spool_texts(work: WorkDir, block: int, docs: Docs, texts: Utf8Texts) -> Docs:
    """``docs`` placed in a spool of their texts in the work folder (``scan/texts-NNNNN.bin``,
    the UTF-8 texts one after another), which ``spooled_texts`` reads them again from: a
    Parquet file's rows cannot be read one by one."""
    lo, hi = int(texts.offsets[0]), int(texts.offsets[-1])
    work.write_bytes(spool_name(block), texts.buf[lo:hi].tobytes())
    spans = texts.offsets - lo
    return replace(docs, start=spans[:-1].copy(), end=spans[1:].copy())


def spool_name(block: int) -> str:
    return f"scan/texts-{block:05d}.bin"


def spooled_texts(
    work: WorkDir, block: int, starts: IntArray, ends: IntArray, wanted: IntArray
) -> Utf8Texts:
    """The texts of records ``wanted`` (indices into the spans, ascending) from the block's
    spool (``spool_texts``): runs of them read back to back, longer gaps sought over
    (``read_runs``: a finish task asks for a few texts of a block dozens of times)."""
    if not len(wanted):
        return Utf8Texts.from_strings([])
    s, e = starts[wanted], ends[wanted]
    run_s, run_e, run = read_runs(s, e)
    data = np.empty(int((run_e - run_s).sum()), dtype=np.uint8)
    at = 0
    with work.fs.open(work.path(spool_name(block)), "rb") as fh:
        for lo, hi in zip(run_s.tolist(), run_e.tolist(), strict=True):
            fh.seek(lo)
            data[at : at + hi - lo] = np.frombuffer(fh.read(hi - lo), dtype=np.uint8)
            at += hi - lo
    shift = (np.cumsum(run_e - run_s) - run_e)[run]  # a spool offset -> its place in ``data``
    offsets = np.zeros(len(wanted) + 1, dtype=np.int64)
    np.cumsum(e - s, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    gather_ranges(data, s + shift, e + shift, out)
    return Utf8Texts(out, offsets)


def _signed(docs: Docs, texts: Utf8Texts, dedup: Deduplicator) -> Docs:
    """The block's records, signed (``Deduplicator.sign`` bounds its working arrays itself)."""
    signed = dedup.sign(texts)
    return replace(
        docs,
        canonical=signed.canonical.astype(np.uint64),
        length=signed.lengths.astype(np.int64),
        sig=signature_rows(signed.signatures),
        ev=evidence_rows(signed.evidence),
    )


def texts_of(
    file: InputFile,
    starts: IntArray,
    ends: IntArray,
    firsts: npt.NDArray[np.uint8],
    wanted: IntArray,
    spec: ReadSpec,
    storage_options: dict[str, Any] | None,
) -> Utf8Texts:
    """The texts of records ``wanted`` (indices into the spans, ascending) read again."""
    entry = file_entry(file, storage_options)
    entry.spans = [(starts, ends, firsts)]
    texts = format_of(file.name).texts_at(entry, wanted, spec.fields, 1)
    return Utf8Texts.from_strings(texts)


def copy_kept(
    file: InputFile,
    block: Block,
    docs: Docs,
    keep: npt.NDArray[np.bool_],
    out: Any,
    spec: ReadSpec,
    storage_options: dict[str, Any] | None,
) -> None:
    """Write a block's kept records, as they were, to ``out``: JSONL lines byte for byte by
    their spans; Parquet rows by their numbers, every column, with the run's schema and codec
    (a Parquet file of its own, empty or not)."""
    entry = file_entry(file, storage_options)
    if not by_row_groups(file):
        entry.spans = [(docs.start, docs.end, docs.first)]
        format_of(file.name).write_kept([entry], lambda _entry: keep, out, Fields(), None)
        return
    entry.byte_range = (block.start, block.end)
    first = spec.memo() or SchemaRef()
    sink = ParquetSink(out, first.schema or text_schema(spec.text_field), first.compression)
    copy_rows_parquet(entry, docs.recno[keep], sink)
    sink.close()


__all__ = ["Collected", "ReadSpec", "Rows", "copy_kept", "scan_block", "texts_of"]
