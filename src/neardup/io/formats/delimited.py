"""CSV and TSV: a header row names the columns, each row is a record, every column read as text
(pyarrow's CSV reader, imported when such a file is first read); kept rows are written through
an Arrow sink, every column kept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .._atomic import Output, open_output
from .._csv import CSV_SUFFIXES, TSV_SUFFIXES, kept_csv_batches, scan_csv, scan_csv_blocks
from .._jsonl_blocks import LineBlock
from .._report import Entry, Problems
from .._sinks import OutFmt, make_sink
from .base import ArrowFormat, Fields, Part, Record

if TYPE_CHECKING:
    from .._sinks import Sink


class Delimited(ArrowFormat):
    """Rows of values split by ``delimiter`` ("," for CSV, tab for TSV)."""

    unit: str | None = "row"

    def __init__(self, name: OutFmt, suffixes: tuple[str, ...], delimiter: str) -> None:
        self.name = name
        self.suffixes = suffixes
        self.default_out = name
        self.copies_as = name
        self.delimiter = delimiter

    def arrow_blocks(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[LineBlock]:
        return scan_csv_blocks(entry, fields.text, fields.id, problems, self.delimiter)

    def records(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[Record]:
        return scan_csv(entry, fields.text, fields.id, problems, self.delimiter, fields.key)

    def write_kept(
        self, entries: list[Entry], part: Part, out: Output, fields: Fields, memo: object
    ) -> None:
        """The kept rows through the Arrow sink of this format (values written as text)."""
        with open_output(out) as handle:
            sink = make_sink(self.default_out, handle, (fields.id, fields.text))
            for entry in entries:
                self.convert_kept(entry, part(entry), sink, fields)
            sink.close()

    def convert_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], sink: Sink, fields: Fields
    ) -> None:
        for batch in kept_csv_batches(entry, keep, self.delimiter):
            sink.write_arrow(batch)


CSV = Delimited("csv", CSV_SUFFIXES, ",")
TSV = Delimited("tsv", TSV_SUFFIXES, "\t")
