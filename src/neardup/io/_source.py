"""Inputs -> batches of (ids, texts, global positions, keys) in pass 1; kept mask -> output in
pass 2, each through the inputs' ``Format`` (``formats/``).

A global position is the 0-based index of a document among the accepted records of all inputs,
in input order. Pass 1 remembers, per file, the record numbers it skipped and the position range
it produced; pass 2 skips exactly those records and checks the file did not change in between,
so ``kept[position]`` always refers to the record that pass 1 produced at that position.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import tempfile
import threading
import weakref
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np
import numpy.typing as npt

from ..errors import InputError, ParamError
from ..text import Utf8Texts
from ._atomic import Output, open_output
from ._batches import DocBatch, Pending, Records
from ._convert import output_format
from ._edit import Edit
from ._ids import Claims
from ._jsonl_blocks import LineBlock
from ._keys import KeyCheck
from ._report import (
    DUPLICATE_ID,
    Entry,
    ErrorReport,
    OnError,
    Problems,
    RecordProblem,
    duplicate_problem,
    stat_stamp,
)
from ._sinks import OutFmt, make_sink
from ._targets import open_guarded
from ._text_spool import TextSpool
from .formats import JSONL, Fields, Fmt, Format, Record, format_named

__all__ = ["DocBatch", "Fmt", "Inputs", "Source"]

Inputs = str | Path | BinaryIO | Sequence[str | Path]
_RECNO_BITS = 40  # a seen-id key packs (file index, record number) into one int
#: The id field read when none is named: records without it are named by their place, quietly.
DEFAULT_ID_FIELD = "id"
_ABSENT = 1 << 62  # and this bit when the record has no id (it is named by its number)
_DUPLICATE_FIX = "make the ids unique"


def _stamp(path: Path) -> tuple[int, int] | None:
    """(size, mtime in ns) of a file, None if it cannot be read: tells a changed file apart."""
    try:
        return stat_stamp(path.stat())
    except OSError:
        return None


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _check_unchanged(entry: Entry) -> None:
    """Raise when a file pass 1 read has changed since."""
    if entry.path is not None and entry.stamp != _stamp(entry.path):
        raise InputError(
            f"{entry.name}: the file changed between the two passes; do not modify "
            "the input while neardup runs"
        )


def missing_id_field(id_field: str, flag: str = "--id-field", first: int | None = None) -> str:
    """What a run says when no record has the id field it was told to read (by ``flag``);
    ``first``: the records read when a job that adds as it reads stopped, adding none."""
    none = "no record has" if first is None else f"none of the first {first:,} records has"
    added = "" if first is None else "; nothing was added"
    return (
        f"{none} the field {id_field!r} that {flag} names{added}; check its name, or leave "
        f"{flag} out to name records by their line (or row)"
    )


class Source:
    """Documents from one or more inputs of one format, readable in two passes.

    Use ``batches()`` for pass 1 and ``write_kept()`` for pass 2; ``errors`` counts the records
    and files skipped in "skip" mode (reset at the start of each pass 1). Close it (or use it as
    a context manager) to remove the stdin spool file.
    """

    def __init__(
        self,
        entries: list[Entry],
        fmt: Format | str,
        text_field: str,
        id_field: str,
        on_error: OnError,
        open_problems: list[tuple[str, str]],
        key_field: str | None = None,
    ) -> None:
        #: How the inputs are read and written.
        self.format: Format = format_named(fmt) if isinstance(fmt, str) else fmt
        self.fmt: Fmt = cast(Fmt, self.format.name)
        self.text_field = text_field
        self.id_field = id_field
        #: The option that named ``id_field``, for messages (``index add --url-field``).
        self.id_flag = "--id-field"
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
        #: Documents of the last pass 1 without the id field, named by their line or row.
        self.named_by_place = 0
        #: Whether a record read so far by pass 1 has the id field.
        self.id_field_found = False
        self._fields = Fields(text_field, id_field, key_field, many=len(entries) > 1)
        self._entries = entries
        self._open_problems = open_problems
        self._memo = self.format.memo()  # what the last complete pass 1 learned across files
        self._spool: str | None = None
        self._spool_complete = False
        self._finalizer: weakref.finalize | None = None
        self._texts: TextSpool | None = None  # every text, for a format that is not indexed
        #: Whether pass 1 also writes every text to a spool when an input cannot be read again
        #: by position (``Format.will_read_again``: Parquet, CSV, text, HTML, WARC, gzip,
        #: stdin), so that ``texts_at`` need not run pass 1 once more: set it before pass 1
        #: when texts will be read again (hybrid verification).
        self.keep_texts = False
        self._texts_lock = threading.Lock()  # one thread writes the spool; the others wait
        #: Streams this source opened (a named pipe given as a path): closed by close().
        self.owned: list[BinaryIO] = []

    # ----------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Remove the stdin spool file and the texts' spool, if any. Pass 2 is impossible
        afterwards for stdin."""
        if self._finalizer is not None:
            self._finalizer()
        if self._texts is not None:
            self._texts.close()
            self._texts = None
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
                not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1
            ):
                raise ParamError(f"{name} must be a positive integer, got {value!r}")
        return self._pass1(batch_size or 1 << 62, batch_bytes or 1 << 62)

    def _pass1(
        self, batch_size: int, batch_bytes: int = 1 << 62
    ) -> Generator[DocBatch, None, None]:
        """Pass 1, its texts spooled as they go by when ``keep_texts`` asks for it and no
        complete pass 1 has spooled them yet."""
        spool = None
        readable = (self.format.will_read_again(e, self._fields) for e in self._entries)
        if self.keep_texts and self._texts is None and not all(readable):
            spool = TextSpool()
        try:
            for batch in self._read(batch_size, batch_bytes):
                if spool is not None:
                    spool.add(batch.texts)
                yield batch
            if spool is not None:
                spool.seal()
                with self._texts_lock:
                    self._texts, spool = spool, None
        finally:
            if spool is not None:  # pass 1 did not run to its end
                spool.close()

    def _read(self, batch_size: int, batch_bytes: int) -> Generator[DocBatch, None, None]:
        """Every input read once: problems, ids, batches (``n_docs`` set at the end)."""
        self.n_docs = None
        self.ids = None
        self.errors.counts.clear()
        self.errors.examples.clear()
        for kind, message in self._open_problems:
            self.errors.add(kind, message)
        self.missing_keys = 0
        self.named_by_place = 0  # records without the id field, named by their line or row
        self.id_field_found = False
        problems = Problems(self.on_error, self.errors)
        memo = self.format.memo()
        seen = Claims()
        check = None if self.key_field is None else KeyCheck(self.key_field)
        records = Records(check is not None)
        pending = Pending(batch_size, batch_bytes)
        pos = 0
        for index, entry in enumerate(self._entries):
            entry.reset()
            entry.start = pos
            if self.format.reads_blocks(entry, self._fields):
                if records.ids:  # records of earlier files first, in their own batch
                    yield records.take(pos)
                pending.pos = pending.pos if pending.held else pos
                yield from self._pass1_blocks(entry, index, seen, problems, pending, memo)
            else:
                yield from pending.flush()  # blocks of earlier files first
                scan = self._scan(entry, problems, memo)
                yield from self._pass1_records(
                    scan, entry, index, seen, problems, check, records, (batch_size, batch_bytes)
                )
            pos += entry.n_docs
        yield from pending.flush()
        if records.ids:
            yield records.take(pos)
        self._memo = memo
        self.ids = seen.close()
        self._refuse_missing_id_field(pos)
        self.n_docs = pos

    def _refuse_missing_id_field(self, n_docs: int) -> None:
        """ParamError when an id field other than the default was named and no record has it:
        a misspelt --id-field named every record by its place, silently, in every output."""
        if self.id_field == DEFAULT_ID_FIELD or not self.format.has_fields:
            return
        if n_docs and self.named_by_place == n_docs:
            raise ParamError(missing_id_field(self.id_field, self.id_flag))

    def refuse_missing_id_field_so_far(self, first: int) -> None:
        """ParamError when an id field other than the default was named and none of the records
        pass 1 read so far has it, ``first`` of them in the batch at hand: what a job that adds
        batch by batch (``index add``) checks before adding its first batch, where a run that
        writes at its end checks the whole input."""
        if self.id_field == DEFAULT_ID_FIELD or not self.format.has_fields:
            return
        if first and not self.id_field_found:
            raise ParamError(missing_id_field(self.id_field, self.id_flag, first))

    def _pass1_records(
        self,
        scan: Iterator[Record],
        entry: Entry,
        index: int,
        seen: Claims,
        problems: Problems,
        check: KeyCheck | None,
        records: Records,
        limits: tuple[int, int],
    ) -> Generator[DocBatch, None, None]:
        """Pass 1 over one input read record by record: keys checked, default and unique ids,
        batches of at most ``limits`` (documents, bytes) joined across inputs."""
        batch_size, batch_bytes = limits
        ids, texts, keys = records.ids, records.texts, records.keys
        doc_key: object = None
        for recno, rid, text, size, raw_key in scan:
            if check is not None:
                try:
                    doc_key, key_kind = check.check(raw_key)
                except RecordProblem as p:
                    problems.record(entry, recno, p.kind, p.problem, p.fix)
                    continue
            key = (index << _RECNO_BITS) | recno
            if rid is None:
                rid, key = self._fields.default_id(entry.name, recno), key | _ABSENT
                self.named_by_place += 1
            else:
                self.id_field_found = True
            if not self._claim(seen, rid, key, problems):
                continue
            ids.append(rid)
            texts.append(text)
            if keys is not None and check is not None:
                if check.kind is None and key_kind is not None:
                    check.commit(key_kind, entry.where(recno))
                keys.append(doc_key)
                self.missing_keys += doc_key is None
            records.nbytes += size
            entry.n_docs += 1
            if len(ids) == batch_size or records.nbytes >= batch_bytes:
                yield records.take(entry.start + entry.n_docs)
                ids, texts, keys = records.ids, records.texts, records.keys

    def _pass1_blocks(
        self,
        entry: Entry,
        index: int,
        seen: Claims,
        problems: Problems,
        pending: Pending,
        memo: object = None,
    ) -> Generator[DocBatch, None, None]:
        """Pass 1 over one file in blocks: the same records, ids, checks and messages as the
        line-by-line path, without per-record Python when a block has no problem. The parser
        reads ``batch_bytes`` at a time (when a byte size is asked for), so a block is a batch
        as it is; smaller pieces (of this file or the next) are joined first."""
        entry.stamp = _stamp(cast(Path, entry.path))
        entry.spans = []
        blocks = self.format.blocks(entry, self._fields, problems, pending.chunk, memo)
        for block in blocks:
            block = self._accept(entry, index, seen, problems, block)
            if not len(block):
                continue
            entry.spans.append((block.starts, block.ends, block.firsts))
            entry.n_docs += len(block)
            yield from pending.add(block.ids, block.texts, block.ends - block.starts)

    def _accept(
        self,
        entry: Entry,
        index: int,
        seen: Claims,
        problems: Problems,
        block: LineBlock,
    ) -> LineBlock:
        """Default ids, unique ids and the block's bad lines, reported in line order."""
        recnos = block.recnos
        keys = (index << _RECNO_BITS) | recnos | np.where(block.absent, _ABSENT, 0)
        self.id_field_found = self.id_field_found or not block.absent.all()
        if block.absent.any():
            self.named_by_place += int(block.absent.sum())
            ids = block.id_list()
            for i in np.flatnonzero(block.absent).tolist():
                recno = int(recnos[i])
                ids[i] = self._fields.default_id(entry.name, recno)
            block.ids = Utf8Texts.from_strings(cast(list[str], ids))
            block.absent = np.zeros(len(ids), dtype=np.bool_)
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
                self._duplicate(block.ids[i], int(earlier[i]), int(keys[i]), problems)
                continue
            rows.append(i)
        while nxt is not None:
            problems.record(entry, *nxt)
            nxt = next(bad, None)
        return block.take(np.asarray(rows, dtype=np.int64))

    def _claim(self, seen: Claims, rid: str, key: int, problems: Problems) -> bool:
        """Record ``rid`` as the id of the record at ``key``; False (and a bad record) when an
        earlier record has it."""
        earlier = seen.one(rid, key)
        if earlier < 0:
            return True
        self._duplicate(rid, earlier, key, problems)
        return False

    def _duplicate(self, rid: str, earlier: int, key: int, problems: Problems) -> None:
        """Report the record at ``key`` whose id (or name) the record at ``earlier`` has."""
        entry, recno = self._entry_of(key)
        absent = (bool(key & _ABSENT), bool(earlier & _ABSENT))
        where = self._where(earlier)
        problem = duplicate_problem(rid, where, entry.unit or "record", absent)
        problems.record(entry, recno, DUPLICATE_ID, problem, _DUPLICATE_FIX)

    def _entry_of(self, key: int) -> tuple[Entry, int]:
        """The input and record number a seen-id key packs."""
        return self._entries[(key & ~_ABSENT) >> _RECNO_BITS], key & ((1 << _RECNO_BITS) - 1)

    def _where(self, key: int) -> str:
        entry, recno = self._entry_of(key)
        return entry.where(recno)

    def _scan(self, entry: Entry, problems: Problems, memo: object) -> Iterator[Record]:
        if entry.stream is not None:
            return self._scan_stream(entry, problems)
        if entry.path is not None:
            entry.stamp = _stamp(entry.path)  # None if missing: the scanner reports that
        return self.format.records(entry, self._fields, problems, memo)

    def _scan_stream(self, entry: Entry, problems: Problems) -> Iterator[Record]:
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
            yield from JSONL.records(entry, self._fields, problems, None, tee=tee)
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

        Inputs whose format reads single records again (``Format.reads_again``: a plain JSONL
        file read in blocks, only the wanted lines parsed, in ``jobs`` threads) do so; for
        others (other formats, gzip, stdin) the first call runs pass 1 again, keeping every
        text in a temporary file (``TextSpool``) that later calls read. Threads may call it at
        once.
        """
        docs = np.asarray(positions, dtype=np.int64)
        again = all(self.format.reads_again(e) for e in self._entries if e.n_docs)
        if self.n_docs is not None and again:
            texts: list[str] = []
            for entry in self._entries:
                lo, hi = np.searchsorted(docs, [entry.start, entry.start + entry.n_docs])
                if hi > lo:
                    _check_unchanged(entry)
                    local = docs[lo:hi] - entry.start
                    texts.extend(self.format.texts_at(entry, local, self._fields, jobs))
            return texts
        if not len(docs):
            return []
        with self._texts_lock:
            if self._texts is None:
                self._texts = self._spooled(batch_size)
        return self._texts.texts(docs)

    def _spooled(self, batch_size: int) -> TextSpool:
        """Pass 1 again, every text written to a new spool; the inputs must be as pass 1 saw
        them (the same files, the same number of documents)."""
        n_docs = self.n_docs
        for entry in self._entries:
            _check_unchanged(entry)
        spool = TextSpool()
        try:
            for batch in self.batches(batch_size):
                spool.add(batch.texts)
            spool.seal()
        except BaseException:
            spool.close()
            raise
        if n_docs is not None and len(spool) != n_docs:
            spool.close()
            raise InputError(
                f"the inputs gave {len(spool):,} documents when read again, not {n_docs:,}: "
                "do not modify the input while neardup runs"
            )
        return spool

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
        each record is written (see ``_sinks``; text files become ``{"id": path, "text"}``).
        Runs pass 1 first if it has not run to the end.
        """
        target = fmt or output_format(out, self.format)
        mask = self._kept_mask(kept)
        copies = target == self.format.copies_as

        def part(entry: Entry, flags: npt.NDArray[np.bool_] = mask) -> npt.NDArray[np.bool_]:
            return flags[entry.start : entry.start + entry.n_docs]

        if edit is not None and changed is not None:
            if not copies:
                raise ParamError(
                    f"rewritten {self.fmt} records are written as {self.fmt}; name -o so"
                )
            self.format.write_edited(
                self._entries, part, changed, edit, out, self._fields, self._memo
            )
        elif copies:
            self.format.write_kept(self._entries, part, out, self._fields, self._memo)
        else:
            with open_output(out) as handle:
                sink = make_sink(target, handle, (self.id_field, self.text_field))
                try:
                    for entry in self._entries:
                        self.format.convert_kept(entry, part(entry), sink, self._fields)
                    sink.close()
                finally:
                    sink.discard()  # the spilled parts go whether the write failed or not
        return int(mask.sum())

    def _kept_mask(self, kept: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """``kept`` checked against the documents of a complete pass 1 (run now if needed), the
        inputs checked unchanged since."""
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
            if entry.n_docs:
                _check_unchanged(entry)
        return mask
