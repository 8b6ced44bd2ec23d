"""CSV and TSV files in (pyarrow's CSV reader): a header row names the columns, each row is a
record; every column is read as text (no guessing of numbers or dates, so a row writes back as
it was read). Rows are numbered from 1 after the header. Quoted values may hold newlines and
delimiters (TSV too: it is read with CSV's quoting, which neardup's own TSV output needs for
values holding tabs or line breaks). Bad records: a row with the wrong number of columns or a
quote left open to the end of the file (``bad_csv``), a value that is not UTF-8
(``invalid_utf8``: columns are read as bytes and checked batch by batch, so only that row is
lost).
"""

from __future__ import annotations

import math
import re
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
    INVALID_UTF8,
    MAX_EXAMPLES,
    UNREADABLE,
    Entry,
    Problems,
)
from ._rows import kept_rows

#: CSV and TSV file names (a .gz after them is decompressed).
CSV_SUFFIXES = (".csv", ".csv.gz")
TSV_SUFFIXES = (".tsv", ".tsv.gz", ".tab")
BAD_CSV = "bad_csv"  # a row with another number of columns than the header, or a quote left open
_BLOCK = 8 << 20
#: How many of a file's last bytes are kept to tell whether it ends inside a quoted value.
TAIL = 1 << 16
T = TypeVar("T")
#: Which rows of a batch are bad records already reported (None: none).
Skip = npt.NDArray[np.bool_] | None

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.csv as pcsv


def _read_errors() -> tuple[type[Exception], ...]:
    import pyarrow as pa

    return (OSError, pa.ArrowException, UnicodeDecodeError)


def _open(entry: Entry, delimiter: str, on_bad: Any = None) -> pcsv.CSVStreamingReader:
    """A streaming reader of ``entry`` with every column as bytes (each row's UTF-8 is
    checked apart, so that a bad byte costs its row, not the file)."""
    return _reader(entry, delimiter, _input(entry), on_bad)


def _input(entry: Entry) -> Any:
    """The file's bytes, decompressed when it is gzip."""
    import pyarrow as pa

    return pa.input_stream(str(entry.path), compression="detect")


def _reader(
    entry: Entry, delimiter: str, source: Any, on_bad: Any = None
) -> pcsv.CSVStreamingReader:
    """A streaming reader of ``source`` (the bytes of ``entry``), every column as binary."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    parse = pcsv.ParseOptions(
        delimiter=delimiter, newlines_in_values=True, invalid_row_handler=on_bad
    )
    quiet = pcsv.ParseOptions(
        delimiter=delimiter, newlines_in_values=True, invalid_row_handler=lambda row: "skip"
    )
    with pcsv.open_csv(  # the header's names, so that every column can be read as bytes
        _input(entry), read_options=pcsv.ReadOptions(block_size=_BLOCK), parse_options=quiet
    ) as probe:
        names = probe.schema.names
    return pcsv.open_csv(
        source,
        read_options=pcsv.ReadOptions(block_size=_BLOCK),
        parse_options=parse,
        convert_options=pcsv.ConvertOptions(
            column_types={name: pa.binary() for name in names}, strings_can_be_null=False
        ),
    )


def _blank(entry: Entry) -> bool:
    """Whether the file (decompressed) holds nothing but line breaks, which pyarrow refuses
    as an empty CSV file."""
    try:
        with _input(entry) as stream:
            while chunk := stream.read(_BLOCK):
                if chunk.strip(b"\r\n"):
                    return False
    except _read_errors():
        return False
    return True


class _Tail:
    """A binary stream that keeps its last ``TAIL`` bytes as they are read (for
    ``_unclosed_quote``, which looks at how the file ends)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tail = b""

    @property
    def closed(self) -> bool:
        return bool(self.stream.closed)

    def read(self, size: int = -1) -> bytes:
        data: bytes = self.stream.read(size)
        self.tail = (self.tail + data)[-TAIL:] if len(data) < TAIL else data[-TAIL:]
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.stream.close()


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
        has = f"{row.actual_columns} column" + ("" if row.actual_columns == 1 else "s")
        message = (
            f"{self.entry.name}{line}: the row has {has}, the header "
            f"{row.expected_columns} ({text!r}); quote values that hold the delimiter, or fix "
            "the row"
        )
        if row.text.count('"') % 2:  # a quote opened and never closed: the row ran to the end
            message = (
                f"{self.entry.name}{line}: the row opens a quote that is never closed, so the "
                f"rest of the file would be one value ({text!r}); close the quote (a quote "
                'inside a quoted value is written twice: "")'
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

    def rows(row0: int, batch: pa.RecordBatch, done: Skip) -> Iterator[Row]:
        found = batch_rows(entry, batch, row0, text_field, id_field, key_field, problems, done)
        return ((row[0], row[1] or None, *row[2:4], cell_key(row[4])) for row in found)

    return _read(entry, (text_field, key_field), problems, delimiter, rows)


#: A number as CSV cells write one: digits, a point, an exponent (no NaN, inf or 1_000).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def cell_key(value: object) -> object:
    """A --keep-field cell as the key it stands for: every CSV value is text, so a number
    (``10``, ``-2.5e3``) compares as one (as text, "9" ranked above "10"); an empty cell is
    missing; any other text stays text (ISO dates order as text)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return None
    if _NUMBER.fullmatch(text):
        if text.lstrip("+-").isdigit():
            return int(text)
        number = float(text)
        return number if math.isfinite(number) else value
    return value


def scan_csv_blocks(
    entry: Entry, text_field: str, id_field: str, problems: Problems, delimiter: str = ","
) -> Iterator[LineBlock]:
    """Pass 1 in blocks: each record batch's good rows (``arrow_block``), ids and texts kept
    in Arrow's buffers; the same rows and problems as ``scan_csv`` without a key field."""

    def block(row0: int, batch: pa.RecordBatch, done: Skip) -> Iterator[LineBlock]:
        yield arrow_block(entry, batch, row0, text_field, id_field, done, empty_id_absent=True)

    return _read(entry, (text_field, None), problems, delimiter, block)


def _read(
    entry: Entry,
    fields: tuple[str, str | None],
    problems: Problems,
    delimiter: str,
    each: Callable[[int, pa.RecordBatch, Skip], Iterator[T]],
) -> Iterator[T]:
    """``each(rows before it, batch as text, rows already reported)`` over the file's record
    batches; a missing or unreadable file, a repeated column name, a missing text or key
    column (``fields``) and a read failing midway are reported instead (a bad row under "stop"
    names its line). Each batch waits for the next, so that the last row is checked for a
    quote left open at the end of the file before it is handed on."""
    text_field, key_field = fields
    read_errors = _read_errors()
    bad = _BadRows(entry, problems)
    if _json_lines(entry):  # its rows would be refused first, each a different width
        problems.file(entry, BAD_SCHEMA, _JSON_HEADER[0], _JSON_HEADER[1], skip_hint=False)
        return
    try:
        source = _Tail(_input(entry))
        reader = _reader(entry, delimiter, source, bad)
    except FileNotFoundError:
        problems.file(entry, "missing_file", "file not found", "check the path")
        return
    except read_errors as exc:
        if bad.first is not None:  # the reader reads its first block at once
            raise InputError(f"{bad.first}, {_SKIP_HINT}") from None
        if not _blank(entry):  # no header and no rows: no records, as an empty JSONL file
            problems.file(entry, UNREADABLE, f"not a readable CSV file ({exc})", "check the file")
        return
    names = reader.schema.names
    if repeated_columns(entry, names, problems) or _missing_column(
        entry, names, text_field, key_field, problems
    ):
        return
    row0 = 0
    held = None
    try:
        for batch in reader:
            if held is not None:
                yield from each(row0, *_as_text(entry, row0, held, problems, None))
                row0 += held.num_rows
            held = batch
        if held is not None:
            last = _unclosed_quote(entry, row0, held, source.tail, delimiter, problems)
            yield from each(row0, *_as_text(entry, row0, held, problems, last))
    except read_errors as exc:
        if bad.first is not None:
            raise InputError(f"{bad.first}, {_SKIP_HINT}") from None
        problems.file(
            entry,
            UNREADABLE,
            f"reading failed after row {row0} ({exc})",
            "repair or re-create the file",
        )


def _as_text(
    entry: Entry, row0: int, batch: pa.RecordBatch, problems: Problems, done: Skip
) -> tuple[pa.RecordBatch, Skip]:
    """``batch`` (every column bytes) with every column as text, and which of its rows are
    bad records already reported: ``done`` and each row holding a value that is not UTF-8
    (reported here, naming the field; its values are read as empty)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        try:
            text = column.cast(pa.string())
        except pa.ArrowInvalid:  # a row's bytes are not UTF-8: find it
            done = _not_utf8(entry, row0, name, column, problems, done)
            text = pc.if_else(pa.array(done), b"", column).cast(pa.string())
        columns.append(text)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names), done


def _not_utf8(
    entry: Entry, row0: int, name: str, column: pa.Array, problems: Problems, done: Skip
) -> npt.NDArray[np.bool_]:
    """``done`` (or no row) and the rows whose value in ``column`` is not UTF-8, each
    reported as a bad record naming the row, the field and the byte."""
    done = np.zeros(len(column), np.bool_) if done is None else done.copy()
    for j, value in enumerate(column.to_pylist()):
        if done[j] or value is None:
            continue
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.record(
                entry,
                row0 + j + 1,
                INVALID_UTF8,
                f"field '{name}' is not UTF-8 (byte 0x{value[exc.start]:02x} at byte "
                f"{exc.start + 1} of the value)",
                "re-encode the file as UTF-8 (iconv -f latin1 -t utf-8, say)",
            )
            done[j] = True
    return done


def _unclosed_quote(
    entry: Entry, row0: int, batch: pa.RecordBatch, tail: bytes, delimiter: str, problems: Problems
) -> Skip:
    """The last row (the last of ``batch``) as a bad record when the file ends inside its last
    value's quotes: pyarrow then reads the rest of the file, every line after the quote, as
    that one value, with no error. Told by the file's last bytes (``tail``): they are the value
    as written in quotes (each quote doubled) with no closing quote, after a delimiter or a
    line break. A quoted value may hold line breaks, and an unquoted one cannot: a long value
    (over ``TAIL`` bytes) is judged by its end alone when it holds one."""
    if batch.num_rows == 0 or batch.num_columns == 0:
        return None
    value: bytes = batch.column(batch.num_columns - 1)[-1].as_py() or b""
    written = b'"' + value.replace(b'"', b'""')
    if len(written) < len(tail):
        before = tail[-len(written) - 1 : -len(written)]
        open_quote = tail.endswith(written) and before in (delimiter.encode(), b"\n", b"\r")
    else:
        breaks = b"\n" in value or b"\r" in value
        open_quote = breaks and len(tail) == TAIL and written.endswith(tail)
    if not open_quote:
        return None
    lines = len(value.splitlines()) - 1
    problems.record(
        entry,
        row0 + batch.num_rows,
        BAD_CSV,
        f"field '{batch.schema.names[-1]}' opens a quote that is never closed, so the rest of "
        f"the file ({lines} more lines) would be its value",
        'close the quote (a quote inside a quoted value is written twice: "")',
    )
    done = np.zeros(batch.num_rows, np.bool_)
    done[-1] = True
    return done


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
    """Pass 2: the file's kept rows, every column as text, in batches (``keep[i]`` is for the
    file's i-th accepted row; rows skipped in pass 1, such as those that are not UTF-8, are
    skipped by row number before their bytes are read as text)."""
    import pyarrow as pa

    if entry.n_docs == 0:
        return
    for batch, _, select, _ in kept_rows(
        entry, _open(entry, delimiter, _BadRows(entry, None)), keep
    ):
        kept = batch.filter(pa.array(select))
        columns = [column.cast(pa.string()) for column in kept.columns]
        yield pa.RecordBatch.from_arrays(columns, names=kept.schema.names)


def is_csv_name(path: str | Path) -> str | None:
    """ "csv" or "tsv" when the name says so, else None."""
    name = Path(path).name.lower()
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    if name.endswith(TSV_SUFFIXES):
        return "tsv"
    return None
