"""Sinks that write every field of each kept record in another format than the input's:
JSONL one object per line; Parquet, CSV and TSV through Arrow, whose tables are spilled to a
temporary folder batch by batch (memory stays bounded) and written with one schema at the end,
the union of every record's fields (a field a record lacks is null).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, BinaryIO, Literal

from ..errors import OutputError
from ..text import is_unicode
from ._json_lines import json_lines
from ._targets import describe_os_error

OutFmt = Literal["jsonl", "parquet", "csv", "tsv", "folder"]

#: Records per batch handed to a sink (and per spilled Arrow table).
BATCH = 8192


def jsonable(value: object) -> Any:
    """A JSON form for values JSON has no type for (Parquet dates, decimals, bytes)."""
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} has no JSON form")


class JsonlSink:
    """Records as JSON Lines, every field in its order (non-ASCII written as is)."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out

    def write(self, records: list[dict[str, Any]]) -> None:
        lines = [_json_line(r) for r in records]
        try:
            data = "".join(lines).encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (ids that were not Unicode): escaped
            data = b"".join(_utf8_line(line) for line in lines)
        self.out.write(data)

    def write_arrow(self, batch: Any) -> None:
        """An Arrow table or record batch of records (columns of strings, integers and booleans
        by kernels, the same bytes as ``write``)."""
        for part in batch.to_batches() if hasattr(batch, "to_batches") else [batch]:
            lines = json_lines(part)
            if lines is None:
                self.write(part.to_pylist())
            else:
                self.out.write(lines)

    def close(self) -> None:
        """Nothing is buffered."""

    def discard(self) -> None:
        """Nothing is held."""


def _json_line(record: dict[str, Any]) -> str:
    """A record as one JSON line; a NaN or infinity (a Parquet float) as null, since a bare
    ``NaN`` is no JSON and strict readers (JavaScript, Go, serde) refuse the line."""
    try:
        return json.dumps(record, ensure_ascii=False, default=jsonable, allow_nan=False) + "\n"
    except ValueError:
        return json.dumps(_finite(record), ensure_ascii=False, default=jsonable) + "\n"


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float, however deep, made None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _utf8_line(line: str) -> bytes:
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        record = json.loads(line)
        return (json.dumps(record, default=jsonable) + "\n").encode("ascii")


def _label(out: BinaryIO) -> str:
    """The name an output's messages give it (a guarded file's label)."""
    label = getattr(getattr(out, "raw", out), "label", None)
    return label if isinstance(label, str) else "the output"


class TableSink(ABC):
    """Records as Parquet, CSV or TSV: each batch an Arrow table spilled to a temporary
    folder; at ``close`` one schema (every field of every record) and the file written by
    ``_writer`` (the subclass's)."""

    fmt: OutFmt

    def __init__(self, out: BinaryIO, fields: tuple[str, str]) -> None:
        import pyarrow as pa

        self.out = out
        self.fields = fields  # (id, text): the columns of an output without records
        self.folder = tempfile.mkdtemp(prefix="neardup-convert-")
        self.parts: list[tuple[str, pa.Schema]] = []

    def write(self, records: list[dict[str, Any]]) -> None:
        if records:
            self.write_arrow(self._table(records))

    def _table(self, records: list[dict[str, Any]]) -> Any:
        """The records as one Arrow table; OutputError when a field's values have no one type."""
        import pyarrow as pa

        try:
            return from_records(records)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            problem = _type_problem(self.fmt, str(exc), _mixed_fields(records)[:1])
            raise OutputError(problem) from None
        except UnicodeEncodeError:
            raise OutputError(_not_unicode(self.fmt, records, self.fields[0])) from None

    def write_arrow(self, table: Any) -> None:
        """An Arrow table or record batch of records, spilled as it is."""
        import pyarrow as pa
        import pyarrow.feather as feather

        if table.num_rows == 0:
            return
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        path = os.path.join(self.folder, f"{len(self.parts):06d}.arrow")
        try:
            feather.write_feather(table, path, compression="uncompressed")
        except OSError as exc:
            where = f"{path}; TMPDIR chooses its folder"
            raise OutputError(
                f"cannot write the records converted for {_label(self.out)} ({where}): "
                f"{describe_os_error(exc)}"
            ) from None
        self.parts.append((path, table.schema))

    def close(self) -> None:
        import pyarrow as pa
        import pyarrow.feather as feather

        try:
            schema = self._checked_schema()
            writer = self._writer(schema)
            for path, _ in self.parts:
                table = feather.read_table(path, memory_map=True)
                writer(_conform(table, schema))
            writer(None)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise OutputError(_type_problem(self.fmt, str(exc), [])) from None
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the spilled parts (after ``close``, or instead of it when writing failed)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def _checked_schema(self) -> Any:
        """``_schema()``, or OutputError naming a field the parts typed differently."""
        import pyarrow as pa

        try:
            return self._schema()
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            fields = _unmerged_fields([s for _, s in self.parts])
            raise OutputError(_type_problem(self.fmt, str(exc), fields[:1])) from None

    def _schema(self) -> Any:
        import pyarrow as pa

        if not self.parts:
            return pa.schema([(name, pa.string()) for name in dict.fromkeys(self.fields)])
        schema = self._unified([s for _, s in self.parts])
        return pa.schema([f.with_type(self._column_type(f.type)) for f in schema])

    def _unified(self, schemas: list[Any]) -> Any:
        """One schema holding every part's fields, each of a type all its parts' values fit."""
        import pyarrow as pa

        return pa.unify_schemas(schemas, promote_options="permissive")

    @abstractmethod
    def _column_type(self, kind: Any) -> Any:
        """The type a unified column is written with."""

    @abstractmethod
    def _writer(self, schema: Any) -> Callable[[Any], None]:
        """A function writing one table, or finishing the file when given None."""


class ParquetTableSink(TableSink):
    """Records as one Parquet file; a column of nulls only becomes a string column."""

    fmt: OutFmt = "parquet"

    def _column_type(self, kind: Any) -> Any:
        import pyarrow as pa

        return pa.string() if pa.types.is_null(kind) else kind

    def _writer(self, schema: Any) -> Callable[[Any], None]:
        import pyarrow.parquet as pq

        pwriter = pq.ParquetWriter(self.out, schema)

        def write_parquet(table: Any) -> None:
            if table is None:
                pwriter.close()
            else:
                pwriter.write_table(table)

        return write_parquet


class CsvTableSink(TableSink):
    """Records as CSV (or TSV, by the delimiter); nested and binary values as JSON text, and
    the values of a field of several types (ids 7 and "b") each as the text of its own type."""

    def __init__(self, out: BinaryIO, fields: tuple[str, str], fmt: OutFmt, delimiter: str):
        super().__init__(out, fields)
        self.fmt = fmt
        self.delimiter = delimiter

    def _table(self, records: list[dict[str, Any]]) -> Any:
        """The records as one Arrow table, a field of several types in them as text."""
        import pyarrow as pa

        try:
            return from_records(records)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return super()._table(_mixed_as_text(records))
        except UnicodeEncodeError:
            raise OutputError(_not_unicode(self.fmt, records, self.fields[0])) from None

    def _unified(self, schemas: list[Any]) -> Any:
        """One schema of every part's fields, a field typed differently by parts as text."""
        import pyarrow as pa

        try:
            return super()._unified(schemas)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return _text_where_mixed(schemas)

    def _column_type(self, kind: Any) -> Any:
        return _csv_type(kind)

    def _writer(self, schema: Any) -> Callable[[Any], None]:
        import pyarrow.csv as csv

        options = csv.WriteOptions(delimiter=self.delimiter)
        cwriter = csv.CSVWriter(self.out, schema, write_options=options)

        def write_csv(table: Any) -> None:
            if table is None:
                cwriter.close()
            else:
                cwriter.write_table(table)

        return write_csv


def _csv_type(kind: Any) -> Any:
    """CSV holds scalars: nested and binary values are written as JSON text."""
    import pyarrow as pa

    if pa.types.is_nested(kind) or pa.types.is_binary(kind) or pa.types.is_null(kind):
        return pa.string()
    return kind


def from_records(records: list[dict[str, Any]]) -> Any:
    """An Arrow table of ``records`` with every field any of them has, first seen first, null
    where a record lacks it (Arrow's ``from_pylist`` takes the first record's fields only and
    dropped a field the batch's first record lacked)."""
    import pyarrow as pa

    names = dict.fromkeys(k for r in records for k in r)
    return pa.Table.from_pydict({name: [r.get(name) for r in records] for name in names})


def _mixed_as_text(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with the values of each field that no one Arrow type holds as CSV text."""

    mixed = set(_mixed_fields(records))
    return [{k: _cell(v) if k in mixed else v for k, v in r.items()} for r in records]


def _mixed_fields(records: list[dict[str, Any]]) -> list[str]:
    """The fields of ``records`` whose values no one Arrow type holds (or past 64 bits)."""
    import pyarrow as pa

    mixed = []
    for name in dict.fromkeys(k for r in records for k in r):
        try:
            pa.array([r.get(name) for r in records])
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            mixed.append(name)
    return mixed


def _text_cell(value: Any) -> str | None:
    """A nested or binary value as CSV text: nested as JSON (NaN as null), bytes as their
    UTF-8 text (else base64), as the JSON Lines output gives them, without JSON's quotes."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return str(jsonable(value))
    return json.dumps(_finite(value), ensure_ascii=False, default=jsonable)


def _cell(value: Any) -> str | None:
    """One value as the CSV text written for a column of its own type (nested as JSON)."""
    import pyarrow as pa

    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list | dict):
        return json.dumps(_finite(value), ensure_ascii=False, default=jsonable)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # what Arrow writes for an integer, and for any size
    text: str = pa.scalar(value).cast(pa.string()).as_py()
    return text


def _text_where_mixed(schemas: list[Any]) -> Any:
    """The union of ``schemas``, a field whose types do not unify typed string (CSV text)."""
    import pyarrow as pa

    return pa.schema(
        pa.field(name, pa.string()) if field is None else field
        for name, field in _field_unions(schemas).items()
    )


def _unmerged_fields(schemas: list[Any]) -> list[str]:
    """The fields whose types in ``schemas`` do not unify."""
    return [name for name, field in _field_unions(schemas).items() if field is None]


def _field_unions(schemas: list[Any]) -> dict[str, Any]:
    """Each field of ``schemas`` (first seen first) unified over them, or None when its types
    do not unify."""
    import pyarrow as pa

    fields: dict[str, list[Any]] = {}
    for schema in schemas:
        for field in schema:
            fields.setdefault(field.name, []).append(pa.schema([field]))
    unified: dict[str, Any] = {}
    for name, each in fields.items():
        try:
            unified[name] = pa.unify_schemas(each, promote_options="permissive").field(0)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            unified[name] = None
    return unified


def _conform(table: Any, schema: Any) -> Any:
    """``table`` with ``schema``'s columns in its order (nulls for fields it lacks); where the
    schema says string, nested and binary values become JSON text and others Arrow's text."""
    import pyarrow as pa

    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if pa.types.is_string(field.type) and not (
            pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
        ):
            if pa.types.is_null(column.type):
                column = pa.nulls(table.num_rows, pa.string())
            elif pa.types.is_nested(column.type) or pa.types.is_binary(column.type):
                column = pa.array([_text_cell(v) for v in column.to_pylist()], pa.string())
        columns.append(column.cast(field.type) if column.type != field.type else column)
    return pa.Table.from_arrays(columns, schema=schema)


def _not_unicode(fmt: OutFmt, records: list[dict[str, Any]], id_field: str) -> str:
    """The one line for a record holding text that is not Unicode (a lone surrogate, which
    JSON escapes as \\uXXXX but UTF-8 cannot hold), naming the record by its id and the field."""
    for record in records:
        for name, value in record.items():
            if isinstance(value, str) and not is_unicode(value):
                rid = json.dumps(record.get(id_field))  # escaped: the id may be the culprit
                return (
                    f"cannot write the kept records as {fmt}: field '{name}' of the record with "
                    f"{id_field} {rid} holds text that is not Unicode (a lone surrogate, as JSON's "
                    "\\udXXX escapes can write); write JSONL instead (-o kept.jsonl), which keeps "
                    "it escaped, or mend the input"
                )
    return f"cannot write the kept records as {fmt}: a field holds text that is not Unicode"


def _type_problem(fmt: OutFmt, detail: str, fields: list[str]) -> str:
    """The one line for records ``fmt`` cannot hold, naming the field (``fields``: it, or
    none found) so that it can be fixed."""
    first = detail.strip().splitlines()[0] if detail.strip() else "mixed types"
    field = f"field '{fields[0]}'" if fields else "a field"
    if "too large" in first:  # Python's OverflowError: an integer past 64 bits
        return (
            f"cannot write the kept records as {fmt}: {field} holds an integer beyond 64 bits; "
            "write JSONL or CSV instead (-o kept.jsonl), or store such numbers as text"
        )
    return (
        f"cannot write the kept records as {fmt}: {field} holds values of different types "
        f"({first}); write JSONL instead (-o kept.jsonl), or give the field one type"
    )


Sink = JsonlSink | TableSink
#: The sink of each output format that records are converted into.
SINKS: dict[OutFmt, Callable[[BinaryIO, tuple[str, str]], Sink]] = {
    "jsonl": lambda out, fields: JsonlSink(out),
    "parquet": ParquetTableSink,
    "csv": lambda out, fields: CsvTableSink(out, fields, "csv", ","),
    "tsv": lambda out, fields: CsvTableSink(out, fields, "tsv", "\t"),
}


def make_sink(fmt: OutFmt, out: BinaryIO, fields: tuple[str, str]) -> Sink:
    """The sink writing records in ``fmt`` to ``out``."""
    return SINKS[fmt](out, fields)


class LineRecords:
    """A binary sink for JSON Lines that turns each line into a record and hands them on in
    batches: the verbatim pass-2 copiers write into it when the output is another format."""

    def __init__(self, take: Callable[[list[dict[str, Any]]], None]) -> None:
        self.take = take
        self.pending = b""
        self.records: list[dict[str, Any]] = []

    def write(self, data: bytes | memoryview) -> int:
        chunk = self.pending + bytes(data)
        lines = chunk.split(b"\n")
        self.pending = lines.pop()
        loads = json.loads
        for line in lines:
            if line.strip():
                self.records.append(loads(line))
        if len(self.records) >= BATCH:
            self.take(self.records)
            self.records = []
        return len(data)

    def close(self) -> None:
        """Hand on the last records (a last line without a newline included)."""
        if self.pending.strip():
            self.records.append(json.loads(self.pending))
            self.pending = b""
        if self.records:
            self.take(self.records)
            self.records = []
