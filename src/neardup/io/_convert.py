"""Kept records in the format ``-o`` names: JSONL (optionally .gz), Parquet, CSV or TSV.

``output_format`` tells the format from the output's name before anything is read (an unknown
name is refused). When it is the input's own format, pass 2 copies records verbatim (see
``Source.write_kept``); otherwise each kept record becomes a dict of all its fields and a sink
writes them: JSONL one object per line; Parquet, CSV and TSV through Arrow, whose tables are
spilled to a temporary folder batch by batch (memory stays bounded) and written with one
schema at the end, the union of every record's fields (a field a record lacks is null).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

from ..errors import OutputError, ParamError

OutFmt = Literal["jsonl", "parquet", "csv", "tsv", "folder"]

#: Output names and the format each gives (a ``.gz`` after JSONL, CSV or TSV compresses).
_SUFFIXES: tuple[tuple[tuple[str, ...], OutFmt], ...] = (
    ((".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".ndjson.gz"), "jsonl"),
    ((".parquet", ".pq"), "parquet"),
    ((".csv", ".csv.gz"), "csv"),
    ((".tsv", ".tsv.gz", ".tab"), "tsv"),
)
#: Records per batch handed to a sink (and per spilled Arrow table).
BATCH = 8192
_NAMES = ".jsonl, .jsonl.gz, .parquet, .csv or .tsv"


def output_format(out: object, input_fmt: str) -> OutFmt:
    """The format ``-o`` asks for, from its name: a folder (an existing one, a name ending in
    ``/``, or for text input a name without a suffix) holds copies of text files; standard
    output, a stream, a device or a pipe get the input's own format (JSONL for web pages).
    ParamError for a name that says nothing."""
    natives: dict[str, OutFmt] = {"text": "folder", "parquet": "parquet", "csv": "csv"}
    native = natives.get(input_fmt, "tsv" if input_fmt == "tsv" else "jsonl")
    if not isinstance(out, str | Path) or str(out) == "-":
        return native
    name = str(out)
    if name.endswith(("/", os.sep)) or Path(name).is_dir():
        if input_fmt != "text":
            raise ParamError(
                f"-o {name} is a folder, which holds copies of text files; name a file "
                f"ending in {_NAMES} for {input_fmt} input"
            )
        return "folder"
    try:
        mode = os.stat(name).st_mode
    except OSError:
        mode = 0
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return native
    lower = Path(name).name.lower()
    for suffixes, fmt in _SUFFIXES:
        if lower.endswith(suffixes):
            return fmt
    if input_fmt == "text" and "." not in lower.lstrip("."):
        return "folder"  # a name without a suffix, for text files: the folder of their copies
    folder = (
        " (or end it with / for a folder of the kept text files)" if input_fmt == "text" else ""
    )
    raise ParamError(
        f"cannot tell the output format from the name {name!r}; name it {_NAMES}{folder}"
    )


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
        lines = [json.dumps(r, ensure_ascii=False, default=jsonable) + "\n" for r in records]
        try:
            data = "".join(lines).encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (ids that were not Unicode): escaped
            data = b"".join(_utf8_line(line) for line in lines)
        self.out.write(data)

    def write_arrow(self, batch: Any) -> None:
        """An Arrow table or record batch of records."""
        self.write(batch.to_pylist())

    def close(self) -> None:
        """Nothing is buffered."""


def _utf8_line(line: str) -> bytes:
    try:
        return line.encode("utf-8")
    except UnicodeEncodeError:
        record = json.loads(line)
        return (json.dumps(record, default=jsonable) + "\n").encode("ascii")


class TableSink:
    """Records as Parquet, CSV or TSV: each batch an Arrow table spilled to a temporary
    folder; at ``close`` one schema (every field of every record) and the file written."""

    def __init__(self, out: BinaryIO, fmt: OutFmt, fields: tuple[str, str]) -> None:
        import pyarrow as pa

        self.out = out
        self.fmt = fmt
        self.fields = fields  # (id, text): the columns of an output without records
        self.folder = tempfile.mkdtemp(prefix="neardup-convert-")
        self.parts: list[tuple[str, pa.Schema]] = []

    def write(self, records: list[dict[str, Any]]) -> None:
        import pyarrow as pa

        if not records:
            return
        try:
            table = pa.Table.from_pylist(records)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise OutputError(_type_problem(self.fmt, str(exc))) from None
        self.write_arrow(table)

    def write_arrow(self, table: Any) -> None:
        """An Arrow table or record batch of records, spilled as it is."""
        import pyarrow as pa
        import pyarrow.feather as feather

        if table.num_rows == 0:
            return
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        path = os.path.join(self.folder, f"{len(self.parts):06d}.arrow")
        feather.write_feather(table, path, compression="uncompressed")
        self.parts.append((path, table.schema))

    def close(self) -> None:
        import pyarrow as pa
        import pyarrow.feather as feather

        try:
            schema = self._schema()
            writer = self._writer(schema)
            for path, _ in self.parts:
                table = feather.read_table(path, memory_map=True)
                writer(_conform(table, schema))
            writer(None)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise OutputError(_type_problem(self.fmt, str(exc))) from None
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _schema(self) -> Any:
        import pyarrow as pa

        if not self.parts:
            return pa.schema([(name, pa.string()) for name in dict.fromkeys(self.fields)])
        schema = pa.unify_schemas([s for _, s in self.parts], promote_options="permissive")
        if self.fmt == "parquet":
            return pa.schema(
                [f if not pa.types.is_null(f.type) else f.with_type(pa.string()) for f in schema]
            )
        return pa.schema([f.with_type(_csv_type(f.type)) for f in schema])

    def _writer(self, schema: Any) -> Callable[[Any], None]:
        """A function writing one table, or finishing the file when given None."""
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            pwriter = pq.ParquetWriter(self.out, schema)

            def write_parquet(table: Any) -> None:
                if table is None:
                    pwriter.close()
                else:
                    pwriter.write_table(table)

            return write_parquet
        import pyarrow.csv as csv

        options = csv.WriteOptions(delimiter="\t" if self.fmt == "tsv" else ",")
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


def _conform(table: Any, schema: Any) -> Any:
    """``table`` with ``schema``'s columns in its order (nulls for fields it lacks); nested
    values become JSON text where the schema says string."""
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
            else:
                column = pa.array(
                    [
                        None if v is None else json.dumps(v, ensure_ascii=False, default=jsonable)
                        for v in column.to_pylist()
                    ],
                    pa.string(),
                )
        columns.append(column.cast(field.type) if column.type != field.type else column)
    return pa.Table.from_arrays(columns, schema=schema)


def _type_problem(fmt: OutFmt, detail: str) -> str:
    first = detail.strip().splitlines()[0] if detail.strip() else "mixed types"
    return (
        f"cannot write the kept records as {fmt}: a field holds values of different types "
        f"({first}); write JSONL instead (-o kept.jsonl), or give the field one type"
    )


def make_sink(fmt: OutFmt, out: BinaryIO, fields: tuple[str, str]) -> JsonlSink | TableSink:
    """The sink writing records in ``fmt`` to ``out``."""
    if fmt == "jsonl":
        return JsonlSink(out)
    return TableSink(out, fmt, fields)


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


def batched(records: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Records in lists of BATCH."""
    batch: list[dict[str, Any]] = []
    for record in records:
        batch.append(record)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
