"""Signed documents as Arrow tables: what the scan keeps in the work folder and the shuffles
carry comes back as it went, in Parquet and in IPC, whole or sliced."""

from __future__ import annotations

import io

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from neardup.dask.tables import Docs, Rows, from_ipc, write_ipc  # noqa: E402
from neardup.text import Utf8Texts  # noqa: E402


def _docs(n: int, seed: int) -> Docs:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 5, n)  # evidence sets of any size, empty ones too
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return Docs(
        key=np.arange(n, dtype=np.int64) + 7,
        recno=np.arange(n, dtype=np.int64),
        ids=Utf8Texts.from_strings([f"d{i}é" for i in range(n)]),
        absent=np.zeros(n, np.bool_),
        start=np.arange(n, dtype=np.int64) * 10,
        end=np.arange(n, dtype=np.int64) * 10 + 9,
        first=np.zeros(n, np.uint8),
        canonical=rng.integers(0, 2**63, n).astype(np.uint64),
        length=lengths.astype(np.int64),
        sig=Rows.of_matrix(rng.integers(0, 2**63, (n, 5)).astype(np.uint64)),
        ev=Rows.of_csr(rng.integers(0, 2**63, int(offsets[-1])).astype(np.uint64), offsets),
    )


def _same(a: Docs, b: Docs) -> None:
    for name in ("key", "recno", "absent", "start", "end", "first", "canonical", "length"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert list(a.ids) == list(b.ids)
    np.testing.assert_array_equal(a.sig.matrix(), b.sig.matrix())
    assert (a.sig.width, b.ev.width) == (b.sig.width, None)
    for i in range(len(a)):
        assert bytes(a.ev.data[a.ev.offsets[i] : a.ev.offsets[i + 1]]) == bytes(
            b.ev.data[b.ev.offsets[i] : b.ev.offsets[i + 1]]
        )


def test_rows_of_one_length_are_fixed_size_binary_and_others_large_binary() -> None:
    table = _docs(6, 1).to_arrow()
    assert table.schema.field("sig").type == pa.binary(40)  # 5 64-bit values a row
    assert table.schema.field("ev").type == pa.large_binary()  # sets of any size
    assert table.schema.field("id").type == pa.large_binary()


@pytest.mark.parametrize("n", [0, 1, 50])
def test_docs_come_back_from_parquet_as_they_went(n: int) -> None:
    docs = _docs(n, 2)
    sink = io.BytesIO()
    pq.write_table(docs.to_arrow(), sink, compression="none", use_dictionary=False)
    _same(docs, Docs.from_arrow(pq.read_table(io.BytesIO(sink.getvalue()))))


def test_a_slice_and_a_taken_subset_come_back_through_ipc() -> None:
    docs = _docs(40, 3)
    table = docs.to_arrow()
    sliced = table.slice(11, 17)  # a column that starts inside its buffers
    _same(docs.take(np.arange(11, 28)), Docs.from_arrow(sliced))
    rows = np.array([3, 3, 39, 0, 20])
    sink = pa.BufferOutputStream()
    write_ipc(sink, docs.take(rows).to_arrow())
    _same(docs.take(rows), Docs.from_arrow(from_ipc(sink.getvalue())))


def test_docs_kept_with_large_binary_signatures_still_read() -> None:
    docs = _docs(9, 4)
    table = docs.to_arrow()
    at = table.schema.get_field_index("sig")
    older = table.set_column(at, "sig", table.column("sig").cast(pa.large_binary()))
    older = older.replace_schema_metadata(table.schema.metadata)  # a work folder of before
    _same(docs, Docs.from_arrow(older))
