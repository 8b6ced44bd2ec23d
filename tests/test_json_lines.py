"""Kept Parquet or CSV records written as JSON Lines by kernels: the bytes ``json.dumps`` writes
row by row, for any text, null, integer and boolean; other column types go row by row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.io._json_lines import json_lines
from tests.reference import json_literal

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

#: Text with every kind of character that JSON escapes or keeps: controls, quotes, backslashes,
#: DEL, non-ASCII, astral (no lone surrogates: Arrow strings are UTF-8).
TEXT = st.text(
    st.one_of(
        st.characters(max_codepoint=0x7F),
        st.characters(codec="utf-8"),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(TEXT, max_size=20))
def test_quoted_strings_are_json_dumps_literals(texts: list[str]) -> None:
    from neardup._kernels.json_out import quote_strings

    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    out, at = quote_strings(buf, offsets)
    got = [out[at[i] : at[i + 1]].tobytes() for i in range(len(texts))]
    assert got == [json_literal(t) for t in texts]


def _rows(batch: pa.RecordBatch) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch.to_pylist()).encode()


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.one_of(st.none(), TEXT), st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
                  st.one_of(st.none(), st.booleans()), TEXT),
        max_size=15,
    ),
    name=TEXT,
    cut=st.integers(0, 5),
)  # fmt: skip
def test_a_batch_of_strings_integers_and_booleans_is_written_as_json_dumps_writes_it(
    rows: list[tuple[str | None, int | None, bool | None, str]], name: str, cut: int
) -> None:
    names = ["text", "n", "flag", name if name not in ("text", "n", "flag") else name + "_"]
    columns = [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * 4
    types = [pa.string(), pa.int64(), pa.bool_(), pa.large_string()]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(c, type=t) for c, t in zip(columns, types, strict=True)], names=names
    )
    assert json_lines(batch) == _rows(batch)
    part = batch.slice(min(cut, batch.num_rows))  # a slice: offsets that do not start at 0
    assert json_lines(part) == _rows(part)
    coded = pa.RecordBatch.from_arrays(
        [pa.array(columns[0], type=pa.string()).dictionary_encode()], names=["text"]
    )
    assert json_lines(coded) == _rows(coded)


def test_other_column_types_are_left_to_the_row_by_row_writer() -> None:
    for column in (pa.array([1.5, None]), pa.array([[1], [2]]), pa.array([b"x", b"y"])):
        assert json_lines(pa.RecordBatch.from_arrays([column], names=["v"])) is None
    twice = pa.RecordBatch.from_arrays([pa.array(["a"]), pa.array(["b"])], names=["x", "x"])
    assert json_lines(twice) is None


def test_parquet_kept_as_json_lines_keeps_every_field_as_before(tmp_path: Path) -> None:
    """The same lines as the row-by-row writer, floats and all (mixed batches fall back)."""
    texts = ['a "quoted"\ttext\n', "naïve café 😀", "plain", "x\\y\x01", "plain"]
    table = pa.table({"id": [f"d{i}" for i in range(5)], "text": texts,
                      "n": [1, None, 3, 4, 5], "ok": [True, False, None, True, True]})  # fmt: skip
    pq.write_table(table, tmp_path / "in.parquet")
    pq.write_table(table.append_column("score", pa.array([0.5] * 5)), tmp_path / "f.parquet")
    for name in ("in.parquet", "f.parquet"):
        out = tmp_path / f"{name}.jsonl"
        assert main(["dedup", str(tmp_path / name), "-o", str(out), "-q"]) == 0
        kept = pq.read_table(tmp_path / name).slice(0, 4)  # the fifth repeats the third
        expected = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept.to_pylist())
        assert out.read_text(encoding="utf-8") == expected
