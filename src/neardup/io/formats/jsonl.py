"""JSON Lines (optionally gzipped): files read in blocks by the parsing kernel, streams and key
fields line by line; kept lines copied byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO, cast

import numpy as np
import numpy.typing as npt

from ..._chunks import size_chunks
from ..._prefetch import ordered_map
from .._atomic import Output, open_output
from .._edit import edit_jsonl
from .._jsonl import copy_kept_jsonl, is_gzip, scan_jsonl
from .._jsonl_blocks import (
    LineBlock,
    copy_kept_spans,
    scan_jsonl_blocks,
    span_sizes,
    texts_at_spans,
)
from .._report import Entry, Problems
from .._sinks import LineRecords
from .base import ClusterBlocks, Fields, Part, Record, RecordFormat

if TYPE_CHECKING:
    from .._edit import Edit
    from .._sinks import Sink

SUFFIXES = (".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".ndjson.gz")
#: Lines, and bytes of lines, read again per task when ``texts_at`` reads a JSONL file by spans
#: in several threads: long lines make tasks of few lines, so every thread gets work.
TEXTS_AT_CHUNK = 4096
TEXTS_AT_BYTES = 4 << 20


class Jsonl(RecordFormat):
    """One JSON object per line; standard input and pipes are read as this format."""

    name = "jsonl"
    suffixes = SUFFIXES
    cluster_blocks: ClusterBlocks = "lines"

    def reads_again(self, entry: Entry) -> bool:
        """By the byte spans pass 1 read the records from, in a file that seeks (a gzip file
        decompresses from its start again at every seek back: its texts are spooled)."""
        return entry.spans is not None and not entry.compressed

    def will_read_again(self, entry: Entry, fields: Fields) -> bool:
        """A file read in blocks that is not gzip (its first bytes, read now)."""
        return self.reads_blocks(entry, fields) and not is_gzip(entry)

    def reads_blocks(self, entry: Entry, fields: Fields) -> bool:
        """Files are read in blocks by a kernel (streams and key fields line by line)."""
        return entry.stream is None and entry.path is not None and fields.key is None

    def blocks(
        self,
        entry: Entry,
        fields: Fields,
        problems: Problems,
        chunk: int | None = None,
        memo: object = None,
    ) -> Iterator[LineBlock]:
        return scan_jsonl_blocks(entry, fields.text, fields.id, problems, chunk=chunk)

    def records(
        self,
        entry: Entry,
        fields: Fields,
        problems: Problems,
        memo: object,
        tee: BinaryIO | None = None,
    ) -> Iterator[Record]:
        """Line by line; ``tee`` receives every line read (the spool of a stream)."""
        return scan_jsonl(entry, fields.text, fields.id, problems, tee=tee, key_field=fields.key)

    def texts_at(
        self, entry: Entry, local: npt.NDArray[np.int64], fields: Fields, jobs: int
    ) -> list[str]:
        """Only the wanted lines parsed, by their byte spans (``reads_again``); a file read in
        blocks of ``TEXTS_AT_CHUNK`` lines or ``TEXTS_AT_BYTES`` a task, in ``jobs`` threads."""
        if entry.spans is None:
            raise RuntimeError(f"{entry.name}: no byte spans to read its records again by")

        def read(wanted: npt.NDArray[np.int64]) -> list[str]:
            return texts_at_spans(entry, wanted, fields.text, fields.id)

        if jobs <= 1 or len(local) < 2:
            return read(local)
        chunks = size_chunks(local, span_sizes(entry), TEXTS_AT_CHUNK, TEXTS_AT_BYTES)
        if len(chunks) < 2:
            return read(local)
        return [t for _, part in ordered_map(read, chunks, jobs) for t in part]

    def write_kept(
        self, entries: list[Entry], part: Part, out: Output, fields: Fields, memo: object
    ) -> None:
        """The original line bytes, verbatim (gzip-compressed if ``out`` ends in ``.gz``)."""
        with open_output(out) as handle:
            for entry in entries:
                _copy_kept(entry, part(entry), handle)

    def convert_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], sink: Sink, fields: Fields
    ) -> None:
        lines = LineRecords(sink.write)
        _copy_kept(entry, keep, cast(BinaryIO, lines))
        lines.close()

    def write_edited(
        self,
        entries: list[Entry],
        part: Part,
        changed: npt.NDArray[np.bool_],
        edit: Edit,
        out: Output,
        fields: Fields,
        memo: object,
    ) -> None:
        with open_output(out) as handle:
            for entry in entries:
                edit_jsonl(entry, part(entry), part(entry, changed), edit, fields.text, handle)


def _copy_kept(entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO) -> None:
    """One file's kept lines: by the spans pass 1 found, else line by line."""
    if entry.spans is not None:
        copy_kept_spans(entry, keep, out)
    else:
        copy_kept_jsonl(entry, keep, out)


JSONL = Jsonl()
