"""Arrow record batches (of a Parquet, CSV or TSV file) -> ``LineBlock``: ids and texts as the
UTF-8 buffers Arrow already holds, no Python string per row.

The rows and problems are those of the row-by-row reader (``_parquet.batch_rows``): a null
text, a text over the record limit, then a null id, in that order of precedence, each a bad
record skipped; ids absent from the file are left for the source to number.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..text import Utf8Texts
from ._jsonl_blocks import LineBlock
from ._report import BAD_ID, BAD_SCHEMA, BAD_TEXT, Entry, Problems, too_large

if TYPE_CHECKING:
    import pyarrow as pa


def null_text(text_field: str) -> tuple[str, str, str]:
    """(kind, problem, fix) of a row whose text is null."""
    return (
        BAD_TEXT,
        f"field '{text_field}' is null",
        "give every row a text (an empty string is fine)",
    )


def null_id(id_field: str) -> tuple[str, str, str]:
    """(kind, problem, fix) of a row whose id is null."""
    return (
        BAD_ID,
        f"field '{id_field}' is null",
        "give every row an id, or use --id-field to name another column",
    )


def repeated_columns(entry: Entry, names: list[str], problems: Problems) -> bool:
    """Whether columns share a name (reported as a bad file): a field name stands for one
    value, so such columns could be neither read by name nor all written back."""
    repeated = [f"{n} columns are named '{name}'" for name, n in Counter(names).items() if n > 1]
    if not repeated:
        return False
    problems.file(
        entry,
        BAD_SCHEMA,
        ", ".join(repeated),
        "rename them so that each name is used once",
        skip_hint=False,
    )
    return True


def is_text_type(dtype: pa.DataType) -> bool:
    """Whether a column of ``dtype`` holds text: strings of any width, views, dictionaries."""
    import pyarrow as pa

    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    is_view = getattr(pa.types, "is_string_view", None)
    return bool(
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or (is_view is not None and is_view(dtype))
    )


def large_strings(column: pa.Array) -> pa.Array:
    """A text or id column as large strings (dictionaries decoded, integers written out as
    ``str`` writes them), so its values are one buffer with 64-bit offsets."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return pc.cast(column, pa.large_string())


def filtered(batch: pa.RecordBatch, keep: pa.Array) -> pa.RecordBatch:
    """The rows of ``batch`` where ``keep`` is true, every column of its type: Arrow cannot
    filter view types (``string_view``, ``binary_view``, in structs and lists too), so such a
    column is filtered as its large form and cast back."""
    import pyarrow as pa

    if not any(_has_view(f.type) for f in batch.schema):
        return batch.filter(keep)
    arrays = []
    for field, column in zip(batch.schema, batch.columns, strict=True):
        if _has_view(field.type):
            column = column.cast(_unviewed(field.type)).filter(keep).cast(field.type)
        else:
            column = column.filter(keep)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


def _has_view(dtype: pa.DataType) -> bool:
    return _unviewed(dtype) != dtype


def _unviewed(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` with every string or binary view in it made a large string or binary."""
    import pyarrow as pa

    if pa.types.is_string_view(dtype):
        return pa.large_string()
    if pa.types.is_binary_view(dtype):
        return pa.large_binary()
    if pa.types.is_struct(dtype):
        return pa.struct([dtype.field(i).with_type(_unviewed(dtype.field(i).type))
                          for i in range(dtype.num_fields)])  # fmt: skip
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        item = dtype.value_field.with_type(_unviewed(dtype.value_type))
        return pa.list_(item) if pa.types.is_list(dtype) else pa.large_list(item)
    return dtype


def utf8_values(column: pa.Array) -> Utf8Texts:
    """The values of a large-string column as Utf8Texts over Arrow's buffers (a null's value
    is empty)."""
    _, offsets, data = column.buffers()
    at = np.frombuffer(offsets, dtype=np.int64)[column.offset : column.offset + len(column) + 1]
    buf = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, dtype=np.uint8)
    return Utf8Texts(buf, at)


def _no_ids(n: int) -> Utf8Texts:
    """``n`` empty ids (the rows of a file without an id column: the source numbers them)."""
    return Utf8Texts(np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))


def arrow_block(
    entry: Entry,
    batch: pa.RecordBatch,
    row0: int,
    text_field: str,
    id_field: str,
    done: npt.NDArray[np.bool_] | None = None,
    empty_id_absent: bool = False,
) -> LineBlock:
    """The good rows of ``batch`` (its first row is number ``row0 + 1``) as a LineBlock, and
    its bad rows as the block's problems (rows ``done`` marks were reported already, and are
    left out quietly). Spans: each text's UTF-8 bytes (what batches are
    sized by), from 0; these formats' rows are read again from the source's spool, never by
    span. ``empty_id_absent``: an empty id (a CSV cell) is no id, the row named by its number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = large_strings(batch.column(text_field))
    sizes = pc.binary_length(texts).fill_null(0).to_numpy(zero_copy_only=False)
    no_text = texts.is_null().to_numpy(zero_copy_only=False)
    big = ~no_text & (sizes > entry.max_record)
    has_id = id_field in batch.schema.names
    ids = large_strings(batch.column(id_field)) if has_id else None
    no_id = np.zeros(len(sizes), np.bool_)
    if ids is not None:
        no_id = ids.is_null().to_numpy(zero_copy_only=False) & ~no_text & ~big
    good = ~(no_text | big | no_id)
    reported = np.zeros(len(sizes), np.bool_) if done is None else done
    problems = []
    for j in np.flatnonzero(~good & ~reported).tolist():
        if no_text[j]:
            why = null_text(text_field)
        elif big[j]:
            why = too_large(int(sizes[j]), entry.max_record)
        else:
            why = null_id(id_field)
        problems.append((row0 + j + 1, *why))
    good &= ~reported
    if not good.all():  # bad rows out (a filter copies the texts: not when every row is good)
        keep = pa.array(good)
        texts = texts.filter(keep)
        ids = ids.filter(keep) if ids is not None else None
    rows = np.flatnonzero(good).astype(np.int64)
    n = len(rows)
    absent = np.full(n, ids is None, dtype=np.bool_)
    if ids is not None and empty_id_absent:
        absent = pc.binary_length(ids).to_numpy(zero_copy_only=False) == 0
    return LineBlock(
        recnos=rows + (row0 + 1),
        ids=utf8_values(ids) if ids is not None else _no_ids(n),
        absent=absent,
        texts=utf8_values(texts),
        starts=np.zeros(n, np.int64),
        ends=sizes[good].astype(np.int64),
        firsts=np.zeros(n, np.uint8),
        problems=problems,
    )
