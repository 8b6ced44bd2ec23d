"""Arrow record batches -> JSON Lines, byte for byte what ``json.dumps(row, ensure_ascii=False)``
writes for each row, without a Python object per row or value (Parquet, CSV and TSV kept
records written as JSON Lines).

Columns of strings, integers and booleans (the text, id and metadata columns of a corpus) are
written by kernels (``_kernels/json_out.py``); a batch with another column type (floats, whose
text Python and Arrow write differently, dates, lists, structs) is left to the caller, which
goes row by row.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._arrow_blocks import is_text_type, large_strings, utf8_values

if TYPE_CHECKING:
    import pyarrow as pa

_NULL = b"null"


def _kind(dtype: pa.DataType) -> str | None:
    """ "string" (escaped), "plain" (written as Arrow casts it: integers, booleans) or None."""
    import pyarrow as pa

    if is_text_type(dtype):
        return "string"
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if pa.types.is_integer(dtype) or pa.types.is_boolean(dtype):
        return "plain"
    return None


def json_lines(batch: Any) -> memoryview | None:
    """The rows of ``batch`` (an Arrow record batch) as JSON Lines, or None when a column is
    of a type written row by row (or two columns share a name, or there are none)."""
    from .._kernels.json_out import join_rows, quote_strings

    names = batch.schema.names
    kinds = [_kind(field.type) for field in batch.schema]
    if not names or len(set(names)) != len(names) or None in kinds:
        return None
    n, k = batch.num_rows, len(names)
    pieces: list[npt.NDArray[np.uint8]] = []
    starts = np.empty((k, n), dtype=np.int64)
    ends = np.empty((k, n), dtype=np.int64)
    nulls: list[tuple[int, npt.NDArray[np.bool_]]] = []
    base = 0
    for j, (column, kind) in enumerate(zip(batch.columns, kinds, strict=True)):
        texts = utf8_values(large_strings(column))  # integers and booleans as Arrow writes them
        buf, offsets = texts.buf, texts.offsets
        if kind == "string":
            buf, offsets = quote_strings(buf, offsets)
        else:
            buf, offsets = buf[offsets[0] : offsets[-1]], offsets - offsets[0]
        starts[j] = offsets[:-1] + base
        ends[j] = offsets[1:] + base
        if column.null_count:
            nulls.append((j, column.is_null().to_numpy(zero_copy_only=False)))
        pieces.append(buf)
        base += len(buf)
    pieces.append(np.frombuffer(_NULL, dtype=np.uint8))
    values = np.concatenate(pieces)
    for j, null in nulls:  # null values: the last piece, "null"
        starts[j, null] = base
        ends[j, null] = base + len(_NULL)
    keys = [json.dumps(name, ensure_ascii=False) for name in names]
    consts = ["{" + keys[0] + ": "] + [", " + key + ": " for key in keys[1:]] + ["}\n"]
    encoded = [c.encode("utf-8") for c in consts]
    const_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in encoded], out=const_offsets[1:])
    const_buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return join_rows(const_buf, const_offsets, values, starts, ends).data  # no copy
