"""CSV and TSV files in (pyarrow's CSV reader): a header row names the columns, each row is a
record; every column is read as text (no guessing of numbers or dates, so a row writes back as
it was read). Rows are numbered from 1 after the header. A row with the wrong number of
columns is a bad record (``bad_csv``); quoted values may hold newlines and delimiters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from ._arrow_blocks import arrow_block, repeated_columns
from ._jsonl_blocks import LineBlock
from ._parquet import Row, batch_rows
from ._report import (
    _SKIP_HINT,
    BAD_SCHEMA,
    MAX_EXAMPLES,
    UNREADABLE,
    Entry,
    Problems,
)
from ._rows import kept_rows

#: CSV and TSV file names (a .gz after them is decompressed).
CSV_SUFFIXES = (".csv", ".csv.gz")
TSV_SUFFIXES = (".tsv", ".tsv.gz", ".tab")
BAD_CSV = "bad_csv"  # a row with another number of columns than the header
_BLOCK = 8 << 20
T = TypeVar("T")

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.csv as pcsv


def _read_errors() -> tuple[type[Exception], ...]:
    import pyarrow as pa

    return (OSError, pa.ArrowException, UnicodeDecodeError)


def _open(entry: Entry, delimiter: str, on_bad: Any = None) -> pcsv.CSVStreamingReader:
    """A streaming reader of ``entry`` with every column as text."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    parse = pcsv.ParseOptions(
        delimiter=delimiter, newlines_in_values=True, invalid_row_handler=on_bad
    )
    quiet = pcsv.ParseOptions(
        delimiter=delimiter, newlines_in_values=True, invalid_row_handler=lambda row: "skip"
    )
    source = pa.input_stream(str(entry.path), compression="detect")
    with pcsv.open_csv(  # the header's names, so that every column can be read as text
        pa.input_stream(str(entry.path), compression="detect"),
        read_options=pcsv.ReadOptions(block_size=_BLOCK),
        parse_options=quiet,
    ) as probe:
        names = probe.schema.names
    return pcsv.open_csv(
        source,
        read_options=pcsv.ReadOptions(block_size=_BLOCK),
        parse_options=parse,
        convert_options=pcsv.ConvertOptions(
            column_types={name: pa.string() for name in names}, strings_can_be_null=False
        ),
    )


class _BadRows:
    """pyarrow's invalid-row handler: "stop" remembers the first and ends the read; "skip"
    counts each (pass 2 skips the same rows silently)."""

    def __init__(self, entry: Entry, problems: Problems | None) -> None:
        self.entry = entry
        self.problems = problems
        self.first: str | None = None

    def __call__(self, row: Any) -> str:
        if self.problems is None:
            return "skip"
        stop = self.problems.on_error == "stop"
        if not stop and len(self.problems.report.examples) >= MAX_EXAMPLES:
            self.problems.report.add(BAD_CSV, "")  # counted; its message would not be kept
            return "skip"
        number = row.number if row.number is not None else _line_of(self.entry, row.text)
        line = f" line {number}" if number is not None else ""
        text = row.text if len(row.text) <= 40 else row.text[:37] + "..."
        message = (
            f"{self.entry.name}{line}: the row has {row.actual_columns} columns, the header "
            f"{row.expected_columns} ({text!r}); quote values that hold the delimiter, or fix "
            "the row"
        )
        if stop:
            self.first = self.first or message
            return "error"
        self.problems.report.add(BAD_CSV, message)
        return "skip"


def _line_of(entry: Entry, text: str) -> int | None:
    """The line where the row ``text`` starts (pyarrow numbers no lines when values may hold
    newlines): found by reading the file again, for the messages that are kept."""
    import pyarrow as pa

    needle = text.encode("utf-8")
    if not needle:
        return None
    lines = 0
    tail = b""
    with pa.input_stream(str(entry.path), compression="detect") as stream:
        while True:
            chunk = stream.read(_BLOCK)
            if not chunk:
                return None
            data = tail + chunk
            at = data.find(needle)
            if at >= 0:
                return lines + data.count(b"\n", 0, at) + 1
            keep = min(len(data), len(needle))
            lines += data.count(b"\n", 0, len(data) - keep)
            tail = data[len(data) - keep :]


def scan_csv(
    entry: Entry,
    text_field: str,
    id_field: str,
    problems: Problems,
    delimiter: str = ",",
    key_field: str | None = None,
) -> Iterator[Row]:
    """Pass 1: yield (row number, id or None, text, text bytes, key or None) for each good row."""

    def rows(row0: int, batch: pa.RecordBatch) -> Iterator[Row]:
        return batch_rows(entry, batch, row0, text_field, id_field, key_field, problems)

    return _read(entry, (text_field, key_field), problems, delimiter, rows)


def scan_csv_blocks(
    entry: Entry, text_field: str, id_field: str, problems: Problems, delimiter: str = ","
) -> Iterator[LineBlock]:
    """Pass 1 in blocks: each record batch's good rows (``arrow_block``), ids and texts kept
    in Arrow's buffers; the same rows and problems as ``scan_csv`` without a key field."""

    def block(row0: int, batch: pa.RecordBatch) -> Iterator[LineBlock]:
        yield arrow_block(entry, batch, row0, text_field, id_field)

    return _read(entry, (text_field, None), problems, delimiter, block)


def _read(
    entry: Entry,
    fields: tuple[str, str | None],
    problems: Problems,
    delimiter: str,
    each: Callable[[int, pa.RecordBatch], Iterator[T]],
) -> Iterator[T]:
    """``each(rows before it, batch)`` over the file's record batches; a missing or
    unreadable file, a repeated column name, a missing text or key column (``fields``) and a
    read failing midway are reported instead (a bad row under "stop" names its line)."""
    text_field, key_field = fields
    read_errors = _read_errors()
    bad = _BadRows(entry, problems)
    if _json_lines(entry):  # its rows would be refused first, each a different width
        problems.file(entry, BAD_SCHEMA, _JSON_HEADER[0], _JSON_HEADER[1], skip_hint=False)
        return
    try:
        reader = _open(entry, delimiter, bad)
    except FileNotFoundError:
        problems.file(entry, "missing_file", "file not found", "check the path")
        return
    except read_errors as exc:
        if bad.first is not None:  # the reader reads its first block at once
            raise InputError(f"{bad.first}, {_SKIP_HINT}") from None
        problems.file(entry, UNREADABLE, f"not a readable CSV file ({exc})", "check the file")
        return
    names = reader.schema.names
    if repeated_columns(entry, names, problems) or _missing_column(
        entry, names, text_field, key_field, problems
    ):
        return
    row0 = 0
    try:
        for batch in reader:
            yield from each(row0, batch)
            row0 += batch.num_rows
    except read_errors as exc:
        if bad.first is not None:
            raise InputError(f"{bad.first}, {_SKIP_HINT}") from None
        problems.file(
            entry,
            UNREADABLE,
            f"reading failed after row {row0} ({exc})",
            "repair or re-create the file",
        )


def _missing_column(
    entry: Entry, names: list[str], text_field: str, key_field: str | None, problems: Problems
) -> bool:
    """Whether the text or key column is absent (reported as a bad file)."""
    for field, what in ((text_field, "--text-field"), (key_field, "--keep-field")):
        if field is not None and field not in names:
            shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
            problems.file(
                entry,
                BAD_SCHEMA,
                f"there is no column '{field}' (columns: {shortened(shown)})",
                f"use {what} to name one of these columns",
                skip_hint=False,
            )
            return True
    return False


#: What a CSV file whose first line is a JSON object is told: (problem, what to do).
_JSON_HEADER = (
    "its first line is JSON, not a header of columns",
    "read it as JSON Lines (leave out --format, or name the file .jsonl)",
)


def _json_lines(entry: Entry) -> bool:
    """Whether a local file's first line opens a JSON object (JSON Lines given as CSV)."""
    if entry.path is None or not entry.path.is_file():
        return False
    try:
        with open(entry.path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False  # the reader reports it
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{")


def shortened(text: str, most: int = 300) -> str:
    """``text``, or its first ``most`` characters and an ellipsis: a message stays a line."""
    return text if len(text) <= most else text[:most] + "..."


def kept_csv_batches(
    entry: Entry, keep: npt.NDArray[np.bool_], delimiter: str = ","
) -> Iterator[pa.RecordBatch]:
    """Pass 2: the file's kept rows, every column, in batches (``keep[i]`` is for the file's
    i-th accepted row; rows skipped in pass 1 are skipped by row number)."""
    import pyarrow as pa

    if entry.n_docs == 0:
        return
    for batch, _, select, _ in kept_rows(
        entry, _open(entry, delimiter, _BadRows(entry, None)), keep
    ):
        yield batch.filter(pa.array(select))


def is_csv_name(path: str | Path) -> str | None:
    """ "csv" or "tsv" when the name says so, else None."""
    name = Path(path).name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(TSV_SUFFIXES):
        return "tsv"
    return None
