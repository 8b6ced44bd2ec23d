"""Parquet: the text, id and key columns read in pass 1; kept rows written with the first
file's schema, every column kept (pyarrow is imported when a Parquet file is first read)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from .._atomic import Output, open_output
from .._jsonl_blocks import LineBlock
from .._parquet import (
    ParquetSink,
    SchemaRef,
    copy_kept_parquet,
    scan_parquet,
    scan_parquet_blocks,
    text_schema,
)
from .._report import Entry, Problems
from .base import ArrowFormat, ClusterBlocks, Fields, Part, Record

if TYPE_CHECKING:
    from .._edit import Edit
    from .._sinks import Sink

SUFFIXES = (".parquet", ".pq")


class _ArrowTo:
    """Arrow batches from the pass-2 copier handed to a conversion sink."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink

    def write(self, batch: object) -> None:
        self.sink.write_arrow(batch)


class Parquet(ArrowFormat):
    """Columnar tables; every later file must have the first usable file's schema."""

    name = "parquet"
    suffixes = SUFFIXES
    unit: str | None = "row"
    default_out = "parquet"
    copies_as = "parquet"
    cluster_blocks: ClusterBlocks = "row groups"

    def memo(self) -> SchemaRef:
        """The first usable file's schema: later files are checked against it, and kept rows
        are written with it."""
        return SchemaRef()

    def arrow_blocks(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[LineBlock]:
        first = cast(SchemaRef, memo)
        return scan_parquet_blocks(entry, fields.text, fields.id, problems, first)

    def records(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[Record]:
        first = cast(SchemaRef, memo)
        return scan_parquet(entry, fields.text, fields.id, problems, first, fields.key)

    def write_kept(
        self, entries: list[Entry], part: Part, out: Output, fields: Fields, memo: object
    ) -> None:
        """One file with the first input's schema and every column."""
        self._write(entries, part, out, fields, memo, None)

    def convert_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], sink: Sink, fields: Fields
    ) -> None:
        copy_kept_parquet(entry, keep, cast(ParquetSink, _ArrowTo(sink)))

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
        self._write(entries, part, out, fields, memo, (changed, edit))

    def _write(
        self,
        entries: list[Entry],
        part: Part,
        out: Output,
        fields: Fields,
        memo: object,
        edits: tuple[npt.NDArray[np.bool_], Edit] | None,
    ) -> None:
        first = cast(SchemaRef, memo) if memo is not None else SchemaRef()
        with open_output(out) as handle:
            sink = ParquetSink(handle, first.schema or text_schema(fields.text), first.compression)
            for entry in entries:
                edit = None if edits is None else (part(entry, edits[0]), edits[1], fields.text)
                copy_kept_parquet(entry, part(entry), sink, edit)
            sink.close()


PARQUET = Parquet()
