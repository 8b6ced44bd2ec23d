"""Parquet in and out: record batches -> (id, text, key) rows; pass 2 filters rows, schema
unchanged.

Only the text, id and key columns are read in pass 1; pass 2 reads every column and writes the
kept rows with the first file's schema (all columns and metadata preserved). Rows are numbered
from 1 across the file; skipped rows are remembered by that number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, TypeVar

import numpy as np
import numpy.typing as npt

from ._arrow_blocks import (
    arrow_block,
    filtered,
    is_text_type,
    null_id,
    null_text,
    repeated_columns,
)
from ._jsonl_blocks import LineBlock
from ._report import (
    BAD_SCHEMA,
    MISSING_FILE,
    UNREADABLE,
    Entry,
    ErrorReport,
    Problems,
    too_large,
)
from ._rows import kept_rows

if TYPE_CHECKING:  # pyarrow is imported when Parquet is first read or written
    import pyarrow as pa
    import pyarrow.parquet as pq

T = TypeVar("T")
#: What pass 1 yields for one good row: (row number, id or None, text, text bytes, key).
Row = tuple[int, str | None, str, int, object]

#: Rows per record batch read from a Parquet file, and per row group written, at most.
BATCH_ROWS = 65_536
#: Bytes of the columns read per record batch (fewer rows when documents are long), and of the
#: rows buffered per row group written: memory follows bytes, whatever the document length.
BATCH_BYTES = 8 << 20
ROW_GROUP_BYTES = 64 << 20
_READ_BUFFER = 1 << 20  # bytes of a column chunk read at a time


def _read_errors() -> tuple[type[Exception], ...]:
    import pyarrow as pa

    return (OSError, pa.ArrowException, UnicodeDecodeError)


def _as_strings(column: pa.Array) -> list[str | None]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if not is_text_type(column.type):
        column = pc.cast(column, pa.string())
    values: list[str | None] = column.to_pylist()
    return values


def _is_key_type(dtype: pa.DataType) -> bool:
    """Column types whose values have an order: numbers, strings, booleans, dates, timestamps."""
    import pyarrow as pa

    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    return bool(
        is_text_type(dtype)
        or pa.types.is_integer(dtype)
        or pa.types.is_floating(dtype)
        or pa.types.is_decimal(dtype)
        or pa.types.is_boolean(dtype)
        or pa.types.is_date(dtype)
        or pa.types.is_timestamp(dtype)
    )


def _key_values(column: pa.Array) -> list[object]:
    """A key column -> Python values: ints, floats (decimals and half floats as float64),
    strings, booleans, or numpy.datetime64 for dates and timestamps (zoned ones in UTC); nulls
    are None, or NaT for dates and timestamps."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    dtype = column.type
    if pa.types.is_date(dtype) or pa.types.is_timestamp(dtype):
        return list(column.to_numpy(zero_copy_only=False))
    if pa.types.is_decimal(dtype) or pa.types.is_floating(dtype):
        column = pc.cast(column, pa.float64())
    values: list[object] = column.to_pylist()
    return values


def text_schema(text_field: str) -> pa.Schema:
    """The schema of kept rows when no Parquet file was read: one string column."""
    import pyarrow as pa

    return pa.schema([pa.field(text_field, pa.string())])


@dataclass
class SchemaRef:
    """The schema of the first usable Parquet file: every later file must match it; kept rows
    are written with it and with that file's compression codec."""

    schema: pa.Schema | None = None
    name: str = ""
    compression: str = "snappy"


def _column_problem(
    schema: pa.Schema,
    field: str,
    type_ok: Callable[[pa.DataType], bool],
    type_problem: str,
    fix_missing: str,
    fix_type: str,
) -> tuple[str, str] | None:
    """(problem, fix) when ``field`` is absent from ``schema`` or of a type it cannot be."""
    names = schema.names
    if field not in names:
        shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        return f"there is no column '{field}' (columns: {shown})", fix_missing
    kind = schema.field(field).type
    if not type_ok(kind):
        return f"column '{field}' has type {kind}, {type_problem}", fix_type
    return None


def scan_parquet(
    entry: Entry,
    text_field: str,
    id_field: str,
    problems: Problems,
    first: SchemaRef,
    key_field: str | None = None,
) -> Iterator[Row]:
    """Pass 1: yield (row number, id or None, text, text bytes, key or None) for each good row.

    A ``key_field`` column that is absent or has no order (lists, structs, binary, ...) makes
    the file bad (bad_schema); its nulls are keys of None."""

    def rows(row0: int, batch: pa.RecordBatch) -> Iterator[Row]:
        return batch_rows(entry, batch, row0, text_field, id_field, key_field, problems)

    return _read(entry, (text_field, id_field, key_field), problems, first, rows)


def scan_parquet_blocks(
    entry: Entry, text_field: str, id_field: str, problems: Problems, first: SchemaRef
) -> Iterator[LineBlock]:
    """Pass 1 in blocks: each record batch's good rows (``arrow_block``), ids and texts kept
    in Arrow's buffers; the same rows and problems as ``scan_parquet`` without a key field."""

    def block(row0: int, batch: pa.RecordBatch) -> Iterator[LineBlock]:
        yield arrow_block(entry, batch, row0, text_field, id_field)

    return _read(entry, (text_field, id_field, None), problems, first, block)


def _read(
    entry: Entry,
    fields: tuple[str, str, str | None],
    problems: Problems,
    first: SchemaRef,
    each: Callable[[int, pa.RecordBatch], Iterator[T]],
) -> Iterator[T]:
    """``each(rows before it, batch)`` over the file's record batches of the columns pass 1
    reads (text, id, key: ``fields``); a missing, unreadable or unusable file (columns sharing a
    name among them) is reported instead, and a read failing midway after what came before it."""
    # A cluster block after a file's first checks the file quietly: the first block reports it.
    checks = problems if not entry.byte_range or not entry.byte_range[0] else _Quiet(problems)
    checked = _checked(entry, fields, checks, first)
    if checked is None:
        return
    pfile, columns = checked
    groups, row0 = owned_groups(pfile, entry.byte_range)
    if not groups:
        return
    try:
        for batch in pfile.iter_batches(
            batch_size=batch_rows_of(pfile, columns), columns=columns, row_groups=groups
        ):
            yield from each(row0, batch)
            row0 += batch.num_rows
    except _read_errors() as exc:
        problems.file(
            entry,
            UNREADABLE,
            f"reading failed after row {row0} ({exc})",
            "repair or re-create the file",
        )


class _Quiet(Problems):
    """A file's problems unsaid, its records' said (a later block of a file on a cluster)."""

    def __init__(self, problems: Problems) -> None:
        super().__init__(problems.on_error, problems.report)
        self.problems = problems

    def record(self, entry: Entry, recno: int, kind: str, problem: str, fix: str) -> None:
        self.problems.record(entry, recno, kind, problem, fix)

    def file(self, entry: Entry, kind: str, problem: str, fix: str, skip_hint: bool = True) -> None:
        return None


def open_parquet(entry: Entry) -> pq.ParquetFile:
    """The file (its path, else what its opener gives), read a page at a time: pre-buffering
    (pyarrow's default) holds every column chunk read until the reader is done, and an
    unbuffered read takes a column chunk whole (a file of one row group: the whole compressed
    column, 0.8 GB for 1 GB of text)."""
    import pyarrow.parquet as pq

    if entry.path is None and entry.opener is None:
        raise ValueError(f"{entry.name}: neither a path nor an opener to read it by")
    source = entry.path if entry.path is not None else entry.opener()  # type: ignore[misc]
    return pq.ParquetFile(source, pre_buffer=False, buffer_size=_READ_BUFFER)


def owned_groups(
    pfile: pq.ParquetFile, byte_range: tuple[int, int] | None
) -> tuple[list[int], int]:
    """(row groups, rows before the first): every group, or those whose first page starts in
    ``byte_range`` (a cluster run's block: each group read by exactly one of a file's blocks)."""
    meta = pfile.metadata
    if byte_range is None:
        return list(range(meta.num_row_groups)), 0
    start, end = byte_range
    groups, before = [], 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if start <= _group_offset(group) < end:
            groups.append(g)
        elif not groups:
            before += group.num_rows
    return groups, before


def _group_offset(group: pq.RowGroupMetaData) -> int:
    """The file offset of a row group's first page (its first column's dictionary or data)."""
    if group.num_columns == 0:
        return 0
    chunk = group.column(0)
    if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
        return int(min(chunk.dictionary_page_offset, chunk.data_page_offset))
    return int(chunk.data_page_offset)


def codec_of(pfile: pq.ParquetFile) -> str:
    """The compression codec of a file's first column chunk as the writer names it ("snappy",
    "zstd", "none", ...): kept rows are written compressed as their input was."""
    meta = pfile.metadata
    if meta.num_row_groups == 0 or meta.row_group(0).num_columns == 0:
        return "snappy"
    return _CODECS.get(str(meta.row_group(0).column(0).compression).lower(), "snappy")


#: Parquet's codec names (lower case) -> the writer's: kept rows are compressed as the input
#: was; a codec not here is written as snappy (pyarrow's default).
_CODECS = {
    "snappy": "snappy",
    "gzip": "gzip",
    "brotli": "brotli",
    "zstd": "zstd",
    "lz4": "lz4",
    "lz4_raw": "lz4",
    "uncompressed": "none",
}


def batch_rows_of(pfile: pq.ParquetFile, columns: list[str] | None) -> int:
    """Rows per record batch holding about ``BATCH_BYTES`` of ``columns`` (None: all), by their
    uncompressed size in the file's metadata averaged over its rows; at most ``BATCH_ROWS``."""
    meta = pfile.metadata
    if meta.num_rows == 0:
        return BATCH_ROWS
    wanted = None if columns is None else set(columns)
    size = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if wanted is None or chunk.path_in_schema.split(".")[0] in wanted:
                size += chunk.total_uncompressed_size
    per_row = max(size / meta.num_rows, 1.0)
    return int(min(BATCH_ROWS, max(1, BATCH_BYTES // per_row)))


def _usable_columns(
    entry: Entry,
    schema: pa.Schema,
    text_field: str,
    id_field: str,
    key_field: str | None,
    problems: Problems,
) -> list[str] | None:
    """The columns pass 1 reads (text, id when present, key), or None after reporting a text,
    id or key column that is absent or of a type it cannot be (a bad file)."""
    import pyarrow as pa

    names = schema.names
    bad = _column_problem(
        schema,
        text_field,
        is_text_type,
        "not string",
        "use --text-field to name the column that holds the text",
        "store the text as a string column, or use --text-field to name another column",
    )
    if bad is not None:
        problems.file(entry, BAD_SCHEMA, *bad, skip_hint=text_field in names)
        return None
    has_id = id_field in names
    if has_id:
        id_type = schema.field(id_field).type
        if not (is_text_type(id_type) or pa.types.is_integer(id_type)):
            problems.file(
                entry,
                BAD_SCHEMA,
                f"column '{id_field}' has type {id_type}, not string or integer",
                "store ids as strings or integers, or use --id-field to name another column",
            )
            return None
    if key_field is not None:
        bad = _column_problem(
            schema,
            key_field,
            _is_key_type,
            "which has no order",
            "use --keep-field to name the column that holds the key",
            "use --keep-field to name a number, string, boolean, date or timestamp column",
        )
        if bad is not None:
            problems.file(entry, BAD_SCHEMA, *bad, skip_hint=key_field in names)
            return None
    columns = [text_field] + [name for name in (id_field,) if has_id and name != text_field]
    if key_field is not None and key_field not in columns:
        columns.append(key_field)
    return columns


def _checked(
    entry: Entry, fields: tuple[str, str, str | None], problems: Problems, first: SchemaRef
) -> tuple[pq.ParquetFile, list[str]] | None:
    """(the open file, the columns pass 1 reads), or None after reporting why the file cannot
    be read: missing, unreadable, columns sharing a name, an unusable text, id or key column,
    or a schema other than the first usable file's (which ``first`` is set to)."""
    text_field, id_field, key_field = fields
    try:
        pfile = open_parquet(entry)
    except FileNotFoundError:
        problems.file(entry, MISSING_FILE, "file not found", "check the path")
        return None
    except _read_errors() as exc:
        problems.file(entry, UNREADABLE, f"not a readable Parquet file ({exc})", "check the file")
        return None
    if repeated_columns(entry, pfile.schema_arrow.names, problems):
        return None
    columns = _usable_columns(entry, pfile.schema_arrow, text_field, id_field, key_field, problems)
    if columns is None or not _same_schema(entry, pfile, first, problems):
        return None
    return pfile, columns


def first_usable(entry: Entry, text_field: str, id_field: str) -> SchemaRef | None:
    """What the file sets as the first usable Parquet file (its schema, name and codec), or
    None when it is not usable (the next file is then the first)."""
    first = SchemaRef()
    if _checked(
        entry, (text_field, id_field, None), _Quiet(Problems("skip", ErrorReport())), first
    ):
        return first
    return None


def _same_schema(entry: Entry, pfile: pq.ParquetFile, first: SchemaRef, problems: Problems) -> bool:
    """Whether the file has the first usable file's schema (the first sets it, and the codec
    kept rows are written with)."""
    schema = pfile.schema_arrow
    if first.schema is None:
        first.schema, first.name, first.compression = schema, entry.name, codec_of(pfile)
        return True
    if schema.equals(first.schema, check_metadata=False):
        return True
    problems.file(
        entry,
        BAD_SCHEMA,
        f"its columns differ from those of {first.name}",
        "deduplicate files with one schema together, or convert them to one schema first",
    )
    return False


def batch_rows(
    entry: Entry,
    batch: pa.RecordBatch,
    row0: int,
    text_field: str,
    id_field: str,
    key_field: str | None,
    problems: Problems,
    done: npt.NDArray[np.bool_] | None = None,
) -> Iterator[Row]:
    """The good rows of one Arrow record batch (of a Parquet or CSV file) whose first row is
    number ``row0 + 1``: (record number, id, text, its UTF-8 bytes, key); a null text or id, or
    a text over the record limit, is a problem recorded and skipped; rows ``done`` marks were
    reported already (a CSV row that is not UTF-8) and are skipped quietly."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text_column = batch.column(text_field)
    texts = _as_strings(text_column)
    sizes: list[int] = (
        pc.binary_length(text_column.cast(pa.string()))
        .fill_null(0)
        .to_numpy(zero_copy_only=False)
        .tolist()
    )
    ids = _as_strings(batch.column(id_field)) if id_field in batch.schema.names else None
    keys = _key_values(batch.column(key_field)) if key_field is not None else None
    for j, text in enumerate(texts):
        recno = row0 + j + 1
        if done is not None and done[j]:
            continue
        if text is None:
            problems.record(entry, recno, *null_text(text_field))
            continue
        if sizes[j] > entry.max_record:
            problems.record(entry, recno, *too_large(sizes[j], entry.max_record))
            continue
        rid = None
        if ids is not None:
            rid = ids[j]
            if rid is None:
                problems.record(entry, recno, *null_id(id_field))
                continue
        yield recno, rid, text, sizes[j], None if keys is None else keys[j]


@dataclass
class ParquetSink:
    """Buffers filtered batches and writes them as row groups of about BATCH_ROWS rows or
    ROW_GROUP_BYTES bytes, whichever comes first."""

    out: BinaryIO
    schema: pa.Schema
    compression: str = "snappy"
    _writer: pq.ParquetWriter | None = None
    _buffer: list[pa.RecordBatch] = field(default_factory=list)
    _rows: int = 0
    _bytes: int = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self._buffer.append(batch)
        self._rows += batch.num_rows
        self._bytes += batch.nbytes
        if self._rows >= BATCH_ROWS or self._bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            self._writer = pq.ParquetWriter(self.out, self.schema, compression=self.compression)
        if self._buffer:
            table = pa.Table.from_batches(self._buffer).cast(self.schema)
            groups = max(1, -(-self._bytes // ROW_GROUP_BYTES))  # a batch may be large alone
            self._writer.write_table(table, row_group_size=max(-(-self._rows // groups), 1))
        self._buffer, self._rows, self._bytes = [], 0, 0

    def close(self) -> None:
        """Write what is buffered and the footer (an empty file still gets the schema)."""
        self._flush()
        if self._writer is not None:
            self._writer.close()


def copy_kept_parquet(
    entry: Entry,
    keep: npt.NDArray[np.bool_],
    sink: ParquetSink,
    edit: tuple[npt.NDArray[np.bool_], Callable[[int, str], str], str] | None = None,
) -> None:
    """Pass 2: write the rows of the file's kept documents, every column preserved.

    ``keep[i]`` is for the file's i-th accepted row; rows skipped in pass 1 are skipped by row
    number, vectorised per batch. ``edit``: (changed, edit, text field): the text of each
    changed row i becomes ``edit(entry.start + i, text)``.
    """
    import pyarrow as pa

    if entry.n_docs == 0:
        return
    pfile = open_parquet(entry)
    for batch, index, select, done in kept_rows(
        entry, pfile.iter_batches(batch_size=batch_rows_of(pfile, None)), keep
    ):
        if edit is not None and edit[0][done : done + index.size].any():
            batch = _edited(
                batch, index, edit[0][done : done + index.size], entry.start + done, edit
            )
        sink.write(filtered(batch, pa.array(select)))


def copy_rows_parquet(entry: Entry, rows: npt.NDArray[np.int64], sink: ParquetSink) -> None:
    """The rows numbered ``rows`` (1-based across the file, ascending) of the row groups the
    entry reads (``Entry.byte_range``), every column, to ``sink``: a cluster block's kept rows."""
    import pyarrow as pa

    pfile = open_parquet(entry)
    groups, row0 = owned_groups(pfile, entry.byte_range)
    if not groups or not len(rows):
        return
    for batch in pfile.iter_batches(batch_size=batch_rows_of(pfile, None), row_groups=groups):
        n = batch.num_rows
        lo, hi = np.searchsorted(rows, [row0 + 1, row0 + n + 1])
        if hi > lo:
            select = np.zeros(n, dtype=np.bool_)
            select[rows[lo:hi] - row0 - 1] = True
            sink.write(filtered(batch, pa.array(select)))
        row0 += n
        if hi == len(rows):
            return


def _edited(
    batch: pa.RecordBatch,
    index: npt.NDArray[np.int64],
    changed: npt.NDArray[np.bool_],
    first: int,
    edit: tuple[npt.NDArray[np.bool_], Callable[[int, str], str], str],
) -> pa.RecordBatch:
    """``batch`` with the text of its accepted rows ``index[changed]`` edited (``first``: the
    global position of its first accepted row)."""
    import pyarrow as pa

    field_index = batch.schema.get_field_index(edit[2])
    column = batch.column(field_index)
    values = column.to_pylist()
    for k in np.flatnonzero(changed).tolist():
        row = int(index[k])
        values[row] = edit[1](first + k, values[row])
    dtype = column.type
    plain = dtype.value_type if pa.types.is_dictionary(dtype) else dtype
    new = pa.array(values, type=plain)
    if pa.types.is_dictionary(dtype):
        new = new.dictionary_encode().cast(dtype)
    arrays = list(batch.columns)
    arrays[field_index] = new
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)
