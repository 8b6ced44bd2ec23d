"""Signed documents as columns: what a block's scan keeps per document, as Arrow tables.

A ``Docs`` holds, per document of a block (or of the documents routed to one task): its key
(block << 32 | index among the block's records: input order, whatever the partitioning), line
number, id (absent ids are filled in once line numbers are known), byte span and first byte in
its file, content hash, length, and the method's signature row and the verifier's evidence row
as bytes. Tables are what the work folder stores (Parquet) and what shuffles move (Arrow IPC).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._types import IntArray
from ..methods import Signatures
from ..shingles import ShingleBatch
from ..text import Utf8Texts
from ..verify import Evidence, RowEvidence, SetEvidence

KEY_SHIFT = 32


def doc_keys(block: int, n: int) -> IntArray:
    """Keys of a block's documents 0..n-1."""
    return (np.int64(block) << KEY_SHIFT) + np.arange(n, dtype=np.int64)


def key_block(keys: IntArray) -> IntArray:
    return keys >> KEY_SHIFT


def key_index(keys: IntArray) -> IntArray:
    return keys & ((1 << KEY_SHIFT) - 1)


@dataclass(frozen=True)
class Rows:
    """Rows of one dtype as a CSR of bytes: row i is ``data[offsets[i]:offsets[i+1]]`` (byte
    offsets). ``width``: the element count of every row of a matrix, -1 for a vector (one value
    a row, given back 1-d), None for rows of any length (a CSR)."""

    data: npt.NDArray[np.uint8]
    offsets: IntArray
    dtype: str
    width: int | None

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def take(self, rows: IntArray) -> Rows:
        texts = Utf8Texts(self.data, self.offsets).take(rows)
        return Rows(texts.buf, texts.offsets, self.dtype, self.width)

    @staticmethod
    def concat(parts: list[Rows]) -> Rows:
        joined = Utf8Texts.concat([Utf8Texts(p.data, p.offsets) for p in parts])
        widths = {p.width for p in parts}
        return Rows(
            joined.buf, joined.offsets, parts[0].dtype, widths.pop() if len(widths) == 1 else None
        )

    def values(self) -> np.ndarray:
        """All rows' values, concatenated, in their dtype: a read-only view of the bytes when
        they are aligned for it (as Arrow's buffers are), else a copy."""
        lo, hi = int(self.offsets[0]), int(self.offsets[-1])
        raw = self.data[lo:hi]
        dtype = np.dtype(self.dtype)
        if raw.ctypes.data % dtype.alignment == 0:
            view = raw.view(dtype)
            view.flags.writeable = False
            return view
        return np.frombuffer(raw.tobytes(), dtype=dtype)

    def element_offsets(self) -> IntArray:
        return (self.offsets - self.offsets[0]) // np.dtype(self.dtype).itemsize

    @staticmethod
    def of_matrix(values: np.ndarray) -> Rows:
        """The rows of a matrix (or a vector's values), over its bytes: a view, not a copy,
        when it is C-contiguous already (a block's signatures and evidence, 42 MB a block)."""
        values = np.ascontiguousarray(values)
        n = values.shape[0]
        row = values.itemsize * (values.shape[1] if values.ndim == 2 else 1)
        width = values.shape[1] if values.ndim == 2 else -1
        return Rows(_bytes(values), np.arange(n + 1, dtype=np.int64) * row, values.dtype.str, width)

    @staticmethod
    def of_csr(values: np.ndarray, offsets: np.ndarray) -> Rows:
        data = _bytes(np.ascontiguousarray(values))
        byte_off = np.asarray(offsets, dtype=np.int64) * values.itemsize
        return Rows(data, byte_off - byte_off[0], values.dtype.str, None)

    def matrix(self) -> np.ndarray:
        """The rows as an (n, width) matrix, or a vector for width -1."""
        if self.width == -1:
            return self.values()
        return self.values().reshape(len(self), self.width if self.width is not None else 0)


def _bytes(values: np.ndarray) -> npt.NDArray[np.uint8]:
    """A C-contiguous array's bytes, as a flat uint8 view of it."""
    return values.reshape(-1).view(np.uint8)


def signature_rows(sigs: Signatures) -> Rows:
    if sigs.offsets is not None:
        return Rows.of_csr(sigs.data, sigs.offsets)
    return Rows.of_matrix(sigs.data)


def signatures_of(rows: Rows, copy: bool = True) -> Signatures:
    """The signatures stored as ``rows``: their own arrays, or (``copy=False``) read-only
    views of the rows' bytes where they can be."""
    take = np.array if copy else np.asarray
    if rows.width is None:
        return Signatures(take(rows.values()), rows.element_offsets())
    return Signatures(take(rows.matrix()))


def evidence_rows(ev: Evidence) -> Rows:
    if isinstance(ev, SetEvidence):
        return Rows.of_csr(ev.sets.fps, ev.sets.offsets)
    if isinstance(ev, RowEvidence):
        return Rows.of_matrix(ev.rows)
    raise TypeError(f"cannot store evidence of type {type(ev).__name__}")


def evidence_of(rows: Rows) -> Evidence:
    if rows.width is None:
        return SetEvidence(ShingleBatch(rows.values().astype(np.uint64), rows.element_offsets()))
    return RowEvidence(rows.matrix().astype(np.uint16))


@dataclass(frozen=True)
class Docs:
    """Signed documents (see the module docstring); ``absent``: the id field was missing."""

    key: IntArray
    recno: IntArray
    ids: Utf8Texts
    absent: npt.NDArray[np.bool_]
    start: IntArray
    end: IntArray
    first: npt.NDArray[np.uint8]
    canonical: npt.NDArray[np.uint64]
    length: IntArray
    sig: Rows
    ev: Rows

    def __len__(self) -> int:
        return int(self.key.shape[0])

    def take(self, rows: IntArray) -> Docs:
        rows = np.asarray(rows, dtype=np.int64)
        return Docs(
            self.key[rows], self.recno[rows], self.ids.take(rows), self.absent[rows],
            self.start[rows], self.end[rows], self.first[rows], self.canonical[rows],
            self.length[rows], self.sig.take(rows), self.ev.take(rows),
        )  # fmt: skip

    @staticmethod
    def concat(parts: list[Docs]) -> Docs:
        def cat(name: str) -> Any:
            return np.concatenate([getattr(p, name) for p in parts])

        return Docs(
            cat("key"), cat("recno"), Utf8Texts.concat([p.ids for p in parts]), cat("absent"),
            cat("start"), cat("end"), cat("first"), cat("canonical"), cat("length"),
            Rows.concat([p.sig for p in parts]), Rows.concat([p.ev for p in parts]),
        )  # fmt: skip

    def to_arrow(self) -> Any:
        import pyarrow as pa

        table = pa.table(
            {
                "key": self.key,
                "recno": self.recno,
                "id": binary_column(self.ids),
                "absent": self.absent,
                "start": self.start,
                "end": self.end,
                "first": self.first,
                "canonical": self.canonical,
                "length": self.length,
                "sig": binary_column(self.sig),
                "ev": binary_column(self.ev),
            }
        )
        meta = {
            b"sig_dtype": self.sig.dtype.encode(),
            b"sig_width": str(self.sig.width).encode(),
            b"ev_dtype": self.ev.dtype.encode(),
            b"ev_width": str(self.ev.width).encode(),
        }
        return table.replace_schema_metadata(meta)

    @staticmethod
    def from_arrow(table: Any) -> Docs:
        """The documents of a table; a signature or evidence column left out of it (a stage
        that never reads it) comes back as empty rows."""
        meta = table.schema.metadata or {}

        def rows(name: str, dtype: str, width: str) -> Rows:
            if name not in table.column_names:
                return Rows(
                    np.zeros(0, np.uint8), np.zeros(table.num_rows + 1, np.int64), dtype, None
                )
            col = table.column(name).combine_chunks()
            w = None if width == "None" else int(width)
            return Rows(*_row_bytes(col), dtype, w)

        def num(name: str, dtype: Any) -> np.ndarray:
            return np.asarray(table.column(name).to_numpy(), dtype=dtype)

        ids = rows("id", "|u1", "None")
        return Docs(
            num("key", np.int64), num("recno", np.int64), Utf8Texts(ids.data, ids.offsets),
            num("absent", np.bool_), num("start", np.int64), num("end", np.int64),
            num("first", np.uint8), num("canonical", np.uint64), num("length", np.int64),
            rows("sig", meta[b"sig_dtype"].decode(), meta[b"sig_width"].decode()),
            rows("ev", meta[b"ev_dtype"].decode(), meta[b"ev_width"].decode()),
        )  # fmt: skip


def _row_bytes(col: Any) -> tuple[npt.NDArray[np.uint8], IntArray]:
    """(bytes, byte offsets) of a binary or fixed-size binary Arrow array, over its buffers."""
    import pyarrow as pa

    bufs = col.buffers()
    if pa.types.is_fixed_size_binary(col.type):
        size = col.type.byte_width
        offsets = (np.arange(len(col) + 1, dtype=np.int64) + col.offset) * size
        return np.frombuffer(bufs[1], dtype=np.uint8), offsets
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[col.offset : col.offset + len(col) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets.copy()


def binary_column(rows: Rows | Utf8Texts) -> Any:
    """Rows of bytes (or texts' UTF-8) as an Arrow array over the same buffers: fixed-size
    binary when every row has one length (signatures, evidence: Parquet then stores no length
    a value and reads a 45 MB block twice as fast), else large binary."""
    import pyarrow as pa

    data, offsets = (
        (rows.buf, rows.offsets) if isinstance(rows, Utf8Texts) else (rows.data, rows.offsets)
    )
    lo = int(offsets[0])
    size = fixed_size(offsets) if isinstance(rows, Rows) and rows.width is not None else None
    if size is not None:
        return pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(size), len(offsets) - 1, [None, pa.py_buffer(data[lo : int(offsets[-1])])]
        )
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(offsets) - 1,
        [None, pa.py_buffer((offsets - lo).astype(np.int64)), pa.py_buffer(data[lo:])],
    )  # fmt: skip


def fixed_size(offsets: IntArray) -> int | None:
    """The byte length every row of ``offsets`` has, or None when they differ (or it is 0:
    Arrow has no fixed-size binary of width 0 in Parquet)."""
    steps = np.diff(offsets)
    if not len(steps) or steps[0] <= 0 or not (steps == steps[0]).all():
        return None
    return int(steps[0])


def write_ipc(sink: Any, table: Any) -> None:
    """An Arrow table as an IPC stream onto ``sink`` (what a shuffle bundle carries)."""
    import pyarrow as pa

    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def ipc_size(table: Any) -> int:
    """The bytes ``write_ipc`` writes for ``table``, counted without writing them."""
    import pyarrow as pa

    counter = pa.MockOutputStream()
    write_ipc(counter, table)
    return int(counter.size())


def from_ipc(buffer: Any) -> Any:
    """The table of an IPC stream in an Arrow buffer, read in place."""
    import pyarrow as pa

    return pa.ipc.open_stream(buffer).read_all()
