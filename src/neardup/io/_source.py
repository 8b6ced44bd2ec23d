"""Inputs -> batches of (ids, texts, global positions, keys) in pass 1; kept mask -> output in
pass 2.

A global position is the 0-based index of a document among the accepted records of all inputs,
in input order. Pass 1 remembers, per file, the record numbers it skipped and the position range
it produced; pass 2 skips exactly those records and checks the file did not change in between,
so ``kept[position]`` always refers to the record that pass 1 produced at that position.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, cast

import numpy as np
import numpy.typing as npt

from ..errors import InputError, ParamError
from ..params import check_int
from ..text import Utf8Texts
from ._atomic import Output, atomic_dir, open_output
from ._convert import JsonlSink, LineRecords, OutFmt, TableSink, make_sink, output_format
from ._csv import is_csv_name
from ._edit import Edit, edit_jsonl, edit_text
from ._ids import IdRegistry
from ._jsonl import copy_kept_jsonl, scan_jsonl, texts_at_jsonl
from ._jsonl_blocks import (
    LineBlock,
    copy_kept_spans,
    scan_jsonl_blocks,
    texts_at_spans,
)
from ._keys import KeyCheck
from ._report import (
    DUPLICATE_ID,
    MAX_RECORD_SIZE,
    MISSING_FILE,
    UNREADABLE,
    Entry,
    ErrorReport,
    OnError,
    Problems,
    RecordProblem,
)
from ._targets import open_guarded
from ._text import copy_kept_text, scan_text
from ._web import WEB_FORMATS, web_format, web_scan, web_write_kept

if TYPE_CHECKING:
    import pyarrow as pa

    from ._parquet import ParquetSink, SchemaRef

Fmt = Literal["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"]
FORMATS: tuple[Fmt, ...] = ("jsonl", "parquet", "csv", "tsv", "text", "warc", "html")
Inputs = str | Path | BinaryIO | Sequence[str | Path]

_JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".ndjson.gz")
_PARQUET_SUFFIXES = (".parquet", ".pq")
#: Names read as one text document each; a file without a suffix is text too.
_TEXT_SUFFIXES = (".txt", ".text", ".md", ".rst")
_STDIN_NAME = "<stdin>"
#: A URL such as s3://bucket/key or https://host/path (not a Windows drive letter).
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
_RECNO_BITS = 40  # a seen-id key packs (file index, record number) into one int
#: Lines read again per task when ``texts_at`` reads an indexed JSONL file in several threads.
TEXTS_AT_CHUNK = 4096
_DUPLICATE_FIX = (
    "make the ids unique (with --on-error skip the first record with an id is kept and later "
    "ones are dropped)"
)


#: The largest block the JSONL parser reads at a time when batches are sized in bytes.
CHUNK_MAX = 64 << 20


class _Pending:
    """Parsed blocks not yet handed on, and the batches they make: a block of at least half
    ``batch_bytes`` (or ``batch_size`` documents) goes on as it is, sliced (views) by the
    count; smaller ones wait to be joined with the next, across files."""

    def __init__(self, batch_size: int, batch_bytes: int, pos: int = 0) -> None:
        self.batch_size = batch_size
        self.batch_bytes = batch_bytes
        #: Bytes the JSONL parser reads at a time: the batch size in bytes, when one is given.
        self.chunk = min(batch_bytes, CHUNK_MAX) if batch_bytes < 1 << 62 else None
        self.pos = pos  # global position of the first pending document
        self.ids: list[Utf8Texts] = []
        self.texts: list[Utf8Texts] = []
        self.sizes: list[npt.NDArray[np.int64]] = []
        self.held = self.held_bytes = 0

    def add(
        self, ids: Utf8Texts, texts: Utf8Texts, sizes: npt.NDArray[np.int64]
    ) -> Iterator[DocBatch]:
        self.ids.append(ids)
        self.texts.append(texts)
        self.sizes.append(sizes)
        self.held += len(ids)
        self.held_bytes += int(sizes.sum())
        if self.held >= self.batch_size or self.held_bytes >= self.batch_bytes // 2:
            yield from self.flush()

    def flush(self) -> Iterator[DocBatch]:
        """Every pending document, in batches of at most ``batch_size``."""
        if not self.held:
            return
        if len(self.ids) == 1:
            ids, texts, size = self.ids[0], self.texts[0], self.sizes[0]
        else:
            ids, texts = Utf8Texts.concat(self.ids), Utf8Texts.concat(self.texts)
            size = np.concatenate(self.sizes)
        self.ids, self.texts, self.sizes = [], [], []
        self.held = self.held_bytes = 0
        for cut in range(0, len(ids), self.batch_size):
            end = min(cut + self.batch_size, len(ids))
            yield DocBatch(
                ids[cut:end], texts[cut:end], np.arange(self.pos + cut, self.pos + end),
                int(size[cut:end].sum()),
            )  # fmt: skip
        self.pos += len(ids)


class _ArrowTo:
    """Arrow batches from a pass-2 copier handed to a conversion sink."""

    def __init__(self, sink: JsonlSink | TableSink) -> None:
        self.sink = sink

    def write(self, batch: object) -> None:
        self.sink.write_arrow(batch)


@dataclass(frozen=True, slots=True)
class DocBatch:
    """Documents of one pass-1 batch.

    ``positions[i]`` is the global 0-based index of document i (consecutive across batches);
    ``nbytes`` is the input size these documents came from (JSONL line bytes, text-file bytes,
    Parquet text bytes), for throughput reports. ``keys`` is None unless the source was opened
    with a ``key_field``; then ``keys[i]`` is document i's key (see ``open_source``): an int,
    float, str, bool or numpy.datetime64 of one kind for the whole run, or None when missing.
    """

    ids: Sequence[str]
    texts: Sequence[str]
    positions: npt.NDArray[np.int64]
    nbytes: int
    keys: list[object] | None = None

    def __len__(self) -> int:
        return len(self.ids)


def detect_format(path: str | Path) -> Fmt:
    """Format from the name: .jsonl/.json/.ndjson (optionally .gz) -> "jsonl", .parquet/.pq ->
    "parquet", .csv/.tsv (optionally .gz) -> "csv"/"tsv", .warc/.warc.gz -> "warc",
    .html/.htm -> "html", .txt/.text/.md/.rst or no suffix -> "text"; ParamError for any other
    name (force a format with ``fmt``/``--format`` instead)."""
    name = Path(path).name.lower()
    if web_format(name):
        return web_format(name)  # type: ignore[return-value]
    if name.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(_PARQUET_SUFFIXES):
        return "parquet"
    table = is_csv_name(name)
    if table is not None:
        return table  # type: ignore[return-value]
    if name.endswith(_TEXT_SUFFIXES) or "." not in name.lstrip("."):
        return "text"
    raise ParamError(
        f"{path}: cannot tell the format from the name; use --format "
        f"{'|'.join(FORMATS)} (text reads each file as one document)"
    )


def _stamp(path: Path) -> tuple[int, int] | None:
    """(size, mtime in ns) of a file, None if it cannot be read: tells a changed file apart."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


class _Claims:
    """The ids claimed so far in a pass 1, and by which record (a key: file index and record
    number). Blocks claim in one kernel call (``IdRegistry``); records read one at a time use a
    dict, whose ids reach the registry before the next block's claims, so each sees every earlier
    id. After a block, single records ask the registry (slower; only when a stream follows a
    file)."""

    def __init__(self) -> None:
        self.registry = IdRegistry()
        self._seen: dict[str, int] | None = {}
        self._ids: list[str] = []
        self._keys: list[int] = []

    def one(self, rid: str, key: int) -> int:
        """-1 when ``rid`` is new (claimed now), else the key of the record that has it."""
        if self._seen is None:
            return self.registry.claim_one(rid, key)
        earlier = self._seen.setdefault(rid, key)
        if earlier != key:
            return earlier
        self._ids.append(rid)
        self._keys.append(key)
        if len(self._ids) >= 65_536:
            self._flush()
        return -1

    def block(self, ids: Utf8Texts, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``IdRegistry.claim`` after the records claimed one at a time."""
        self._flush()
        self._seen = None
        return self.registry.claim(ids, keys)

    def _flush(self) -> None:
        if self._ids:
            self.registry.claim(Utf8Texts.from_strings(self._ids), np.asarray(self._keys))
            self._ids, self._keys = [], []

    def close(self) -> Utf8Texts:
        """Every claimed id in claim order (= position); the tables are freed."""
        self._flush()
        self._seen = None
        return self.registry.close()


class Source:
    """Documents from one or more inputs of one format, readable in two passes.

    Use ``batches()`` for pass 1 and ``write_kept()`` for pass 2; ``errors`` counts the records
    and files skipped in "skip" mode (reset at the start of each pass 1). Close it (or use it as
    a context manager) to remove the stdin spool file.
    """

    def __init__(
        self,
        entries: list[Entry],
        fmt: Fmt,
        text_field: str,
        id_field: str,
        on_error: OnError,
        open_problems: list[tuple[str, str]],
        key_field: str | None = None,
    ) -> None:
        self.fmt: Fmt = fmt
        self.text_field = text_field
        self.id_field = id_field
        self.key_field = key_field
        self.on_error: OnError = on_error
        self.errors = ErrorReport()
        #: Number of documents pass 1 produced; None until a pass 1 has run to the end.
        self.n_docs: int | None = None
        #: The ids of the last complete pass 1, by position (one UTF-8 buffer, not a Python
        #: string each); None until a pass 1 has run to the end.
        self.ids: Utf8Texts | None = None
        #: Documents of the last pass 1 whose key was missing (absent, null, NaN, NaT); 0
        #: without a key field. Equal to n_docs means the field was never found: warn.
        self.missing_keys = 0
        self._entries = entries
        self._open_problems = open_problems
        self._schema: pa.Schema | None = None
        self._spool: str | None = None
        self._spool_complete = False
        self._finalizer: weakref.finalize | None = None
        #: Streams this source opened (a named pipe given as a path): closed by close().
        self.owned: list[BinaryIO] = []

    # ----------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Remove the stdin spool file, if any. Pass 2 is impossible afterwards for stdin."""
        if self._finalizer is not None:
            self._finalizer()
        for stream in self.owned:
            stream.close()
        self.owned.clear()
        self._spool = None
        self._spool_complete = False

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def input_bytes(self) -> int | None:
        """Total size of the input files (compressed size for gzip), None for a stream."""
        total = 0
        for entry in self._entries:
            if entry.stream is not None and not self._spool_complete:
                return None
            if entry.path is not None and entry.path.exists():
                total += entry.path.stat().st_size
        return total

    # ----------------------------------------------------------------- pass 1
    def batches(
        self, batch_size: int | None = 10_000, batch_bytes: int | None = None
    ) -> Generator[DocBatch, None, None]:
        """Pass 1: the documents in input order, in batches of at most ``batch_size`` documents
        and about ``batch_bytes`` bytes of input (None: no limit of that kind; one must be
        given). By bytes, a JSONL file's batch is the block its parser read, never copied;
        blocks much smaller than ``batch_bytes`` (a file's tail, small files) are joined. The
        concatenated ids, texts, positions and keys do not depend on the batch sizes. Closing
        the generator early leaves pass 1 unfinished."""
        if batch_size is None and batch_bytes is None:
            raise ParamError("give batch_size (documents) or batch_bytes (bytes), or both")
        for name, value in (("batch_size", batch_size), ("batch_bytes", batch_bytes)):
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ParamError(f"{name} must be a positive integer, got {value!r}")
        return self._pass1(batch_size or 1 << 62, batch_bytes or 1 << 62)

    def _pass1(
        self, batch_size: int, batch_bytes: int = 1 << 62
    ) -> Generator[DocBatch, None, None]:
        self.n_docs = None
        self.ids = None
        self.errors.counts.clear()
        self.errors.examples.clear()
        for kind, message in self._open_problems:
            self.errors.add(kind, message)
        problems = Problems(self.on_error, self.errors)
        first = None
        if self.fmt == "parquet":  # pyarrow is imported only when Parquet is read or written
            from ._parquet import SchemaRef

            first = SchemaRef()
        seen = _Claims()
        many = len(self._entries) > 1
        check = None if self.key_field is None else KeyCheck(self.key_field)
        self.missing_keys = 0
        ids: list[str] = []
        texts: list[str] = []
        keys: list[object] | None = None if check is None else []
        nbytes = 0
        pos = 0
        pending = _Pending(batch_size, batch_bytes)
        for index, entry in enumerate(self._entries):
            entry.reset()
            entry.start = pos
            if not self._in_blocks(entry):
                yield from pending.flush()  # blocks of earlier files first
            if self._in_blocks(entry):
                if ids:  # records of earlier files first, in their own batch
                    yield DocBatch(ids, texts, np.arange(pos - len(ids), pos), nbytes, keys)
                    ids, texts, nbytes = [], [], 0
                pending.pos = pending.pos if pending.held else pos
                yield from self._pass1_blocks(entry, index, many, seen, problems, pending)
                pos += entry.n_docs
                continue
            for recno, rid, text, size, raw_key in self._scan(entry, problems, first):
                if check is not None:
                    try:
                        doc_key, key_kind = check.check(raw_key)
                    except RecordProblem as p:
                        problems.record(entry, recno, p.kind, p.problem, p.fix)
                        continue
                if rid is None:
                    rid = f"{entry.name}:{recno}" if many else str(recno)
                key = (index << _RECNO_BITS) | recno
                if not self._claim(seen, rid, key, entry, recno, problems):
                    continue
                ids.append(rid)
                texts.append(text)
                if keys is not None and check is not None:
                    if check.kind is None and key_kind is not None:
                        check.commit(key_kind, entry.where(recno))
                    keys.append(doc_key)
                    self.missing_keys += doc_key is None
                nbytes += size
                entry.n_docs += 1
                pos += 1
                if len(ids) == batch_size or nbytes >= batch_bytes:
                    yield DocBatch(ids, texts, np.arange(pos - len(ids), pos), nbytes, keys)
                    ids, texts, nbytes = [], [], 0
                    keys = None if check is None else []
        yield from pending.flush()
        if ids:
            yield DocBatch(ids, texts, np.arange(pos - len(ids), pos), nbytes, keys)
        self._schema = None if first is None else first.schema
        self.ids = seen.close()
        self.n_docs = pos

    def _in_blocks(self, entry: Entry) -> bool:
        """JSONL files are read in blocks by a kernel (streams and key fields line by line)."""
        return (
            self.fmt == "jsonl"
            and entry.stream is None
            and entry.path is not None
            and self.key_field is None
        )

    def _pass1_blocks(
        self,
        entry: Entry,
        index: int,
        many: bool,
        seen: _Claims,
        problems: Problems,
        pending: _Pending,
    ) -> Generator[DocBatch, None, None]:
        """Pass 1 over one JSONL file in blocks: the same records, ids, checks and messages as
        the line-by-line path, without per-record Python when a block has no problem. The
        parser reads ``batch_bytes`` at a time (when a byte size is asked for), so a block is
        a batch as it is; smaller pieces (of this file or the next) are joined first."""
        entry.stamp = _stamp(cast(Path, entry.path))
        entry.spans = []
        for block in scan_jsonl_blocks(
            entry, self.text_field, self.id_field, problems, chunk=pending.chunk
        ):
            block = self._accept(entry, index, many, seen, problems, block)
            if not len(block):
                continue
            entry.spans.append((block.starts, block.ends, block.firsts))
            entry.n_docs += len(block)
            yield from pending.add(block.ids, block.texts, block.ends - block.starts)

    def _accept(
        self,
        entry: Entry,
        index: int,
        many: bool,
        seen: _Claims,
        problems: Problems,
        block: LineBlock,
    ) -> LineBlock:
        """Default ids, unique ids and the block's bad lines, reported in line order."""
        recnos = block.recnos
        if block.absent.any():
            ids = block.id_list()
            for i in np.flatnonzero(block.absent).tolist():
                recno = int(recnos[i])
                ids[i] = f"{entry.name}:{recno}" if many else str(recno)
            block.ids = Utf8Texts.from_strings(cast(list[str], ids))
            block.absent = np.zeros(len(ids), dtype=np.bool_)
        keys = (index << _RECNO_BITS) | recnos
        earlier = seen.block(block.ids, keys)
        if not (earlier >= 0).any():  # every id new: no Python step per record
            for recno, kind, problem, fix in block.problems:
                problems.record(entry, recno, kind, problem, fix)
            return block
        bad = iter(block.problems)
        nxt = next(bad, None)
        dup = set(np.flatnonzero(earlier >= 0).tolist())
        rows: list[int] = []
        for i, recno in enumerate(recnos.tolist()):
            while nxt is not None and nxt[0] < recno:
                problems.record(entry, *nxt)
                nxt = next(bad, None)
            if i in dup:
                self._duplicate(block.ids[i], int(earlier[i]), entry, recno, problems)
                continue
            rows.append(i)
        while nxt is not None:
            problems.record(entry, *nxt)
            nxt = next(bad, None)
        return block.take(np.asarray(rows, dtype=np.int64))

    def _claim(
        self, seen: _Claims, rid: str, key: int, entry: Entry, recno: int, problems: Problems
    ) -> bool:
        """Record ``rid`` as the id of the record at ``key``; False (and a bad record) when an
        earlier record has it."""
        earlier = seen.one(rid, key)
        if earlier < 0:
            return True
        self._duplicate(rid, earlier, entry, recno, problems)
        return False

    def _duplicate(
        self, rid: str, earlier: int, entry: Entry, recno: int, problems: Problems
    ) -> None:
        problems.record(
            entry,
            recno,
            DUPLICATE_ID,
            f"id {rid!r} is already used by {self._where(earlier)}",
            _DUPLICATE_FIX,
        )

    def _where(self, key: int) -> str:
        entry = self._entries[key >> _RECNO_BITS]
        return entry.where(key & ((1 << _RECNO_BITS) - 1))

    def _scan(
        self, entry: Entry, problems: Problems, first: SchemaRef | None
    ) -> Iterator[tuple[int, str | None, str, int, object]]:
        if entry.stream is not None:
            yield from self._scan_stream(entry, problems)
            return
        if entry.path is not None:
            entry.stamp = _stamp(entry.path)  # None if missing: the scanner reports that
        if self.fmt == "jsonl":
            yield from scan_jsonl(
                entry, self.text_field, self.id_field, problems, key_field=self.key_field
            )
        elif self.fmt in WEB_FORMATS:
            yield from web_scan(self.fmt, entry, self.id_field, problems, self.key_field)
        elif self.fmt == "parquet":
            from ._parquet import scan_parquet

            yield from scan_parquet(  # first is a SchemaRef for Parquet sources (_pass1)
                entry, self.text_field, self.id_field, problems, cast("SchemaRef", first),
                self.key_field,
            )  # fmt: skip
        elif self.fmt in ("csv", "tsv"):
            from ._csv import scan_csv

            yield from scan_csv(entry, self.text_field, self.id_field, problems, self.key_field)
        else:
            yield from scan_text(entry, problems)

    def _scan_stream(
        self, entry: Entry, problems: Problems
    ) -> Iterator[tuple[int, str | None, str, int, object]]:
        """Read stdin once, copying every line into a spool file that later passes read."""
        if self._spool is not None:
            raise InputError(
                f"{entry.name}: the stream was only partly read by an earlier pass and cannot "
                "be read again; run pass 1 to the end before pass 2"
            )
        fd, spool = tempfile.mkstemp(prefix="neardup-stdin-", suffix=".jsonl")
        self._spool = spool
        self._finalizer = weakref.finalize(self, _unlink_quietly, spool)
        with open_guarded(
            fd, f"the copy of {entry.name} kept for the second pass ({spool})"
        ) as tee:
            yield from scan_jsonl(
                entry, self.text_field, self.id_field, problems, tee=tee, key_field=self.key_field
            )
        entry.stream = None
        entry.path = Path(spool)
        entry.plain = True  # decompressed lines, whatever their first bytes
        entry.stamp = _stamp(entry.path)
        self._spool_complete = True

    # ----------------------------------------------------------------- pass 2
    def texts_at(
        self, positions: npt.ArrayLike, batch_size: int = 10_000, jobs: int = 1
    ) -> list[str]:
        """The texts of documents ``positions`` (sorted global indices), read again after pass 1.

        JSONL files are scanned line by line and only the wanted lines parsed (indexed files:
        ``TEXTS_AT_CHUNK`` lines a task, in ``jobs`` threads); other inputs are read again in
        full (pass 1).
        """
        docs = np.asarray(positions, dtype=np.int64)
        files = all(e.path is not None for e in self._entries if e.n_docs)
        if self.n_docs is not None and self.fmt == "jsonl" and files:
            texts: list[str] = []
            for entry in self._entries:
                lo, hi = np.searchsorted(docs, [entry.start, entry.start + entry.n_docs])
                if hi > lo:
                    if entry.stamp != _stamp(cast(Path, entry.path)):
                        raise InputError(
                            f"{entry.name}: the file changed between the two passes; do "
                            "not modify the input while neardup runs"
                        )
                    local = docs[lo:hi] - entry.start
                    if entry.spans is not None:
                        texts.extend(self._texts_at_spans(entry, local, jobs))
                    else:
                        texts.extend(texts_at_jsonl(entry, local, self.text_field))
            return texts
        found: dict[int, str] = {}
        for batch in self.batches(batch_size):
            hit = np.flatnonzero(np.isin(batch.positions, docs))
            for i in hit.tolist():
                found[int(batch.positions[i])] = batch.texts[i]
        return [found[d] for d in docs.tolist()]

    def _texts_at_spans(self, entry: Entry, local: npt.NDArray[np.int64], jobs: int) -> list[str]:
        def read(wanted: npt.NDArray[np.int64]) -> list[str]:
            return texts_at_spans(entry, wanted, self.text_field, self.id_field)

        if jobs <= 1 or len(local) < 2 * TEXTS_AT_CHUNK:
            return read(local)
        from ._prefetch import ordered_map

        chunks = [local[i : i + TEXTS_AT_CHUNK] for i in range(0, len(local), TEXTS_AT_CHUNK)]
        return [t for _, part in ordered_map(read, chunks, jobs) for t in part]

    def write_kept(
        self,
        kept: npt.ArrayLike,
        out: Output,
        fmt: OutFmt | None = None,
        changed: npt.NDArray[np.bool_] | None = None,
        edit: Edit | None = None,
    ) -> int:
        """Pass 2: write the records whose ``kept[position]`` is True, in input order, to
        ``out`` in ``fmt`` (None: what ``output_format`` tells from ``out``'s name); returns
        how many were written. With ``changed`` and ``edit``, a kept record whose
        ``changed[position]`` is True gets the text ``edit(position, text)`` (``_edit.py``;
        JSONL, Parquet and text files, in their own format).

        In the input's own format records are copied as they were. JSONL: the original line
        bytes, verbatim (gzip-compressed if ``out`` ends in ``.gz``; ``"-"`` or a binary stream
        is written to directly). Parquet: one file with the first input's schema and every
        column. Text: ``out`` is a new (or empty) folder that receives a copy of each kept file
        under its path relative to the inputs' common folder. In another format every field of
        each record is written (see ``_convert``; text files become ``{"id": path, "text"}``).
        Runs pass 1 first if it has not run to the end.
        """
        target = fmt or output_format(out, self.fmt)
        if self.n_docs is None:
            for _ in self._pass1(65_536):
                pass
        n_docs = cast(int, self.n_docs)
        mask = np.asarray(kept)
        if mask.dtype != np.bool_ or mask.shape != (n_docs,):
            raise ParamError(
                f"kept must be a bool array of shape ({n_docs},), one flag per document, "
                f"got dtype {mask.dtype} and shape {mask.shape}"
            )
        for entry in self._entries:
            if entry.n_docs and entry.path is not None and entry.stamp != _stamp(entry.path):
                raise InputError(
                    f"{entry.name}: the file changed between the two passes; do not modify "
                    "the input while neardup runs"
                )

        def part(entry: Entry, flags: npt.NDArray[np.bool_] = mask) -> npt.NDArray[np.bool_]:
            return flags[entry.start : entry.start + entry.n_docs]

        if edit is not None and changed is not None:
            if not _native(self.fmt, target):
                raise ParamError(
                    f"rewritten {self.fmt} records are written as {self.fmt}; name -o so"
                )
            self._write_edited(part, changed, edit, out)
        elif not _native(self.fmt, target):
            with open_output(out) as handle:
                sink = make_sink(target, handle, (self.id_field, self.text_field))
                for entry in self._entries:
                    self._convert_kept(entry, part(entry), sink)
                sink.close()
        elif self.fmt in WEB_FORMATS:
            with open_output(out) as handle:
                for entry in self._entries:
                    web_write_kept(self.fmt, entry, part(entry), handle, self.id_field)
        elif self.fmt == "text":
            if not isinstance(out, str | Path) or str(out) == "-":
                raise ParamError("text-file input writes kept files to a folder: name one")
            with atomic_dir(out) as folder:
                for entry in self._entries:
                    copy_kept_text(entry, part(entry), folder)
        elif self.fmt == "parquet":
            from ._parquet import ParquetSink, copy_kept_parquet, text_schema

            schema = self._schema or text_schema(self.text_field)
            with open_output(out) as handle:
                rows = ParquetSink(handle, schema)
                for entry in self._entries:
                    copy_kept_parquet(entry, part(entry), rows)
                rows.close()
        else:
            with open_output(out) as handle:
                for entry in self._entries:
                    if entry.spans is not None:
                        copy_kept_spans(entry, part(entry), handle)
                    else:
                        copy_kept_jsonl(entry, part(entry), handle)
        return int(mask.sum())

    def _convert_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], sink: JsonlSink | TableSink
    ) -> None:
        """One input's kept records, every field, into a sink of another format."""
        if self.fmt in ("jsonl", *WEB_FORMATS):
            lines = LineRecords(sink.write)
            if self.fmt in WEB_FORMATS:
                web_write_kept(self.fmt, entry, keep, cast(BinaryIO, lines), self.id_field)
            elif entry.spans is not None:
                copy_kept_spans(entry, keep, lines)
            else:
                copy_kept_jsonl(entry, keep, cast(BinaryIO, lines))
            lines.close()
        elif self.fmt == "parquet":
            from ._parquet import copy_kept_parquet

            copy_kept_parquet(entry, keep, cast("ParquetSink", _ArrowTo(sink)))
        elif self.fmt in ("csv", "tsv"):
            from ._csv import kept_csv_batches

            for batch in kept_csv_batches(entry, keep):
                sink.write_arrow(batch)
        elif entry.n_docs and keep[0] and entry.path is not None:  # a text file
            text = entry.path.read_bytes().decode("utf-8")
            sink.write([{self.id_field: entry.name, self.text_field: text}])

    def _write_edited(
        self,
        part: Callable[..., npt.NDArray[np.bool_]],
        changed: npt.NDArray[np.bool_],
        edit: Edit,
        out: Output,
    ) -> None:
        """``write_kept`` with the changed records' texts edited."""
        if self.fmt in WEB_FORMATS:
            raise ParamError(f"{self.fmt} input cannot be written with edited texts")
        if self.fmt == "text":
            if not isinstance(out, str | Path) or str(out) == "-":
                raise ParamError("text-file input writes kept files to a folder: name one")
            with atomic_dir(out) as folder:
                for entry in self._entries:
                    edit_text(entry, part(entry), part(entry, changed), edit, folder)
        elif self.fmt == "parquet":
            from ._parquet import ParquetSink, copy_kept_parquet, text_schema

            schema = self._schema or text_schema(self.text_field)
            with open_output(out) as handle:
                sink = ParquetSink(handle, schema)
                for entry in self._entries:
                    edits = (part(entry, changed), edit, self.text_field)
                    copy_kept_parquet(entry, part(entry), sink, edits)
                sink.close()
        else:
            with open_output(out) as handle:
                for entry in self._entries:
                    edit_jsonl(
                        entry, part(entry), part(entry, changed), edit, self.text_field, handle
                    )


def _native(fmt: str, target: str) -> bool:
    """Whether records of ``fmt`` go to ``target`` copied as they are (no conversion)."""
    return (fmt, target) in (
        ("jsonl", "jsonl"),
        ("parquet", "parquet"),
        ("text", "folder"),
        ("warc", "jsonl"),
        ("html", "jsonl"),
    )


def _expand_folder(folder: Path, problems: list[tuple[str, str]], on_error: OnError) -> list[Path]:
    """Regular files under ``folder``, recursively, sorted, hidden names left out."""

    def failed(exc: OSError) -> None:
        message = (
            f"{exc.filename}: cannot read the folder ({exc.strerror or exc}); check its permissions"
        )
        if on_error == "stop":
            raise InputError(message + ", or use --on-error skip to skip it")
        problems.append((UNREADABLE, message))

    files: list[Path] = []
    for root, dirs, names in os.walk(folder, onerror=failed):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files.extend(Path(root) / n for n in sorted(names) if not n.startswith("."))
    return [f for f in files if f.is_file()]


def is_pipe(path: str | Path) -> bool:
    """True for a named pipe or device given as an input path (``<(zcat f.gz)``, a FIFO)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _open_pipe(
    paths: list[str | Path],
    fmt: Fmt | None,
    text_field: str,
    id_field: str,
    on_error: OnError,
    key_field: str | None,
    limit: int,
) -> Source:
    """A pipe is read once, as JSONL (gzip recognised by its first bytes), and spooled like
    standard input; it cannot be read twice, so it must be the only input."""
    name = str(paths[0])
    if len(paths) > 1:
        raise ParamError(
            f"{name} is a pipe, read once like standard input; give it as the only input, or "
            "save it to a file first"
        )
    if fmt not in (None, "jsonl"):
        raise ParamError(f"{name} is a pipe, read as JSONL, not {fmt}; save it to a file first")
    try:
        raw = open(name, "rb")  # noqa: SIM115 - closed by Source.close()
    except OSError as exc:
        raise InputError(f"{name}: cannot read it ({exc.strerror or exc}); check it") from None
    entry = Entry(name=name, fmt="jsonl", path=None, stream=raw, max_record=limit)
    source = Source([entry], "jsonl", text_field, id_field, on_error, [], key_field)
    source.owned = [raw]
    return source


def open_source(
    inputs: Inputs,
    fmt: Fmt | None = None,
    *,
    text_field: str = "text",
    id_field: str = "id",
    on_error: OnError = "stop",
    key_field: str | None = None,
    max_record_size: int = MAX_RECORD_SIZE,
) -> Source:
    """Open documents for deduplication.

    ``inputs``: a path, a list of paths, ``"-"`` for standard input, or a binary stream (read
    as JSONL and spooled to a temporary file during pass 1). A folder stands for the regular
    files under it (recursive, sorted, hidden names left out). ``fmt`` forces the format,
    otherwise each file's name decides (see ``detect_format``) and mixed formats are an error.

    JSONL records are objects with a string ``text_field`` and an optional ``id_field`` (string
    or integer); a record without an id gets its 1-based line number (``"NAME:LINE"`` when
    there are several input files). Text files: id = path, text = content. Ids must be unique.

    ``on_error="stop"`` raises InputError at the first bad record (naming file, line, problem
    and fix); ``"skip"`` drops bad records and counts them in ``Source.errors``; for a
    duplicated id the first record is kept. Empty texts are not errors.

    ``key_field`` (for "keep the member with the largest/smallest FIELD") gives every DocBatch
    ``keys``: the JSON value of that field, or the Parquet column's value (a column that is
    absent or has no order makes the file bad). A key is a number (int or float), a string, a
    boolean, or a numpy.datetime64 (Parquet dates and timestamps, zoned ones in UTC). A missing
    field, null, NaN or NaT gives None and is no error (counted in ``Source.missing_keys``;
    rank it least preferred, as ``key_ranks`` does). The first key fixes the kind for the run:
    a later key of another kind (e.g. a string after numbers), an array or an object is a bad
    record (``bad_key``): InputError naming file and line, or skipped and counted. Text-file
    inputs have no fields: a key_field is a ParamError for them.

    ``max_record_size`` bounds a record in bytes (a JSONL line without its newline, a Parquet
    text, a text or HTML file, a WARC record's block): a larger one is a bad record
    (``too_large``) found while reading, before it is held, so memory stays bounded whatever
    the input (a decompression bomb, a line of gigabytes).
    """
    if on_error not in ("stop", "skip"):
        raise ParamError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    if fmt is not None and fmt not in FORMATS:
        raise ParamError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    for label, value in (("text field", text_field), ("id field", id_field)):
        if not isinstance(value, str) or not value:
            raise ParamError(f"the {label} must be a non-empty string, got {value!r}")
    if key_field is not None and (not isinstance(key_field, str) or not key_field):
        raise ParamError(f"the key field must be a non-empty string or None, got {key_field!r}")
    check_int("max_record_size (--max-record-size)", max_record_size, 1, 1 << 62)
    limit = max_record_size

    if hasattr(inputs, "read") or (isinstance(inputs, str | Path) and str(inputs) == "-"):
        if fmt not in (None, "jsonl"):
            raise ParamError(f"standard input is read as JSONL, not {fmt}; use a file for {fmt}")
        stream = sys.stdin.buffer if isinstance(inputs, str | Path) else cast(BinaryIO, inputs)
        entry = Entry(name=_STDIN_NAME, fmt="jsonl", path=None, stream=stream, max_record=limit)
        return Source([entry], "jsonl", text_field, id_field, on_error, [], key_field)

    paths = [inputs] if isinstance(inputs, str | Path) else list(cast(Sequence, inputs))
    if not paths:
        raise ParamError("no inputs given; name at least one file or folder")
    if any(str(p) == "-" for p in paths):
        raise ParamError("'-' (standard input) cannot be combined with other inputs")
    remote = next((str(p) for p in paths if _REMOTE.match(str(p))), None)
    if remote is not None:
        raise ParamError(
            f"{remote} is a remote path: the cluster backend reads those (--dask local:N, with "
            "s3fs or another fsspec filesystem installed); on one machine copy it here first"
        )
    if any(is_pipe(p) for p in paths):
        return _open_pipe(paths, fmt, text_field, id_field, on_error, key_field, limit)

    open_problems: list[tuple[str, str]] = []
    found: list[tuple[Path, Path]] = []  # (file, folder it was listed under or its parent)
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend((f, path) for f in _expand_folder(path, open_problems, on_error))
        elif path.exists():
            found.append((path, path.parent))
        else:
            message = f"{path}: file not found; check the path"
            if on_error == "stop":
                raise InputError(message)
            open_problems.append((MISSING_FILE, message))

    formats = {f: (fmt or detect_format(f)) for f, _ in found}
    kinds = sorted(set(formats.values()))
    if len(kinds) > 1:
        examples = ", ".join(
            f"{next(str(f) for f, k in formats.items() if k == kind)} is {kind}" for kind in kinds
        )
        raise ParamError(
            f"the inputs mix formats ({examples}); give files of one format, or force one "
            "with --format"
        )
    empty_default: Fmt = "text" if any(Path(p).is_dir() for p in paths) else "jsonl"
    chosen: Fmt = fmt or (kinds[0] if kinds else empty_default)
    if key_field is not None and chosen == "text":
        raise ParamError(
            f"text-file inputs have no fields, so there is no '{key_field}' to keep the "
            "largest or smallest of; give JSONL or Parquet input with that field, or drop "
            "--keep-field"
        )

    root = os.path.commonpath([os.path.abspath(base) for _, base in found]) if found else "."
    entries = [
        Entry(
            name=str(f),
            fmt=chosen,
            path=f,
            rel=Path(os.path.relpath(os.path.abspath(f), root)) if chosen == "text" else None,
            max_record=limit,
        )
        for f, _ in found
    ]
    return Source(entries, chosen, text_field, id_field, on_error, open_problems, key_field)
