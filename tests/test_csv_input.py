"""CSV and TSV inputs read row by row: a byte that is not UTF-8 costs its row, not the file; a
quote left open to the end of the file is a bad row, not the rest of the file read as one
value; legitimate quoting (line breaks, doubled quotes, empty values) is read as written."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest

from neardup.cli import main
from neardup.errors import InputError
from neardup.io import _csv, open_source
from neardup.testing.synth import random_documents


def _texts(n: int, seed: int = 5) -> list[str]:
    """``n`` one-line texts with no delimiter or quote in them."""
    docs = random_documents(n, seed=seed, words=(8, 16))
    return [" ".join(t.replace(",", " ").replace('"', " ").split()) for t in docs]


def _rows_bytes(n: int, sep: str, bad: int | None = None, field: str = "text") -> bytes:
    """A header (id, title, text) and ``n`` rows; row ``bad`` (1-based) holds a Latin-1 byte
    in ``field``."""
    lines = [sep.join(("id", "title", "text")).encode()]
    for i, text in enumerate(_texts(n), start=1):
        title, body = f"title {i}".encode(), text.encode()
        if i == bad:
            title, body = (
                (title + b" caf\xe9", body) if field == "title" else (title, b"\xe9" + body)
            )
        lines.append(sep.encode().join((f"r{i}".encode(), title, body)))
    return b"\n".join(lines) + b"\n"


def _ids(path: Path) -> list[str]:
    if path.suffix == ".jsonl":
        return [json.loads(line)["id"] for line in path.read_text().splitlines()]
    with open(path, newline="", encoding="utf-8") as fh:
        return [
            r["id"] for r in csv.DictReader(fh, delimiter="\t" if path.suffix == ".tsv" else ",")
        ]


@pytest.mark.parametrize(
    ("name", "field", "keep_field", "out_name"),
    [
        ("in.csv", "text", None, "k.csv"),
        ("in.tsv", "title", None, "k.jsonl"),
        ("in.csv.gz", "title", "id", "k.csv"),
    ],
)
def test_a_byte_that_is_not_utf8_costs_its_row_and_is_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    field: str,
    keep_field: str | None,
    out_name: str,
) -> None:
    data = _rows_bytes(30, "\t" if ".tsv" in name else ",", bad=17, field=field)
    src = tmp_path / name
    src.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    out = tmp_path / out_name
    args = ["dedup", str(src), "-o", str(out), "-q"]
    args += ["--keep-field", keep_field] if keep_field else []
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{name} row 17: field '{field}' is not UTF-8" in err[0], err
    assert "byte 0xe9" in err[0] and "--on-error skip" in err[0]
    assert main([*args, "--on-error", "skip"]) == 0
    assert _ids(out) == [f"r{i}" for i in range(1, 31) if i != 17]


def test_rows_over_many_batches_keep_their_numbers_and_skip_only_bad_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_csv, "_BLOCK", 2048)  # many record batches
    src = tmp_path / "in.csv"
    data = _rows_bytes(400, ",", bad=250)
    src.write_bytes(data + b'r401,t,"the last value never closes\nr402,t,swallowed\n')
    with open_source(src, on_error="skip") as source:
        ids = [i for batch in source.batches(64) for i in batch.ids]
        assert ids == [f"r{i}" for i in range(1, 401) if i != 250]
        kinds = source.errors.counts
        assert kinds == {"invalid_utf8": 1, "bad_csv": 1}, kinds
        assert "in.csv row 401: field 'text' opens a quote" in source.errors.examples[1]
        out = tmp_path / "k.csv"
        keep = [i % 3 != 0 for i in range(len(ids))]
        assert source.write_kept(keep, out) == sum(keep)
    assert _ids(out) == [i for i, k in zip(ids, keep, strict=True) if k]


@pytest.mark.parametrize("name", ["in.csv", "in.tsv"])
def test_a_quote_left_open_to_the_end_stops_or_costs_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    sep = "\t" if name.endswith(".tsv") else ","
    rows = [f"{i}{sep}row {i} {t}" for i, t in enumerate(_texts(40), start=1)]
    rows[4] = f'5{sep}"quoted start never closed'
    src = tmp_path / name
    src.write_text(f"id{sep}text\n" + "\n".join(rows) + "\n")
    out = tmp_path / "k.jsonl"
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and f"{name} row 5: field 'text' opens a quote that is never closed" in (err[0])
    ), err
    assert "35 more lines" in err[0]
    assert main(["dedup", str(src), "-o", str(out), "-q", "--on-error", "skip"]) == 0
    assert _ids(out) == ["1", "2", "3", "4"]


@pytest.mark.parametrize(
    "last",
    [
        '"two\nlines"\n',  # a quoted value holding a line break
        '"two\nlines"',  # ... and no line break at the end of the file
        '""\n',  # an empty quoted value
        '""',
        '"ends in a quote """\n',  # a doubled quote at the end of the value
        '"x"\n\n\n',  # blank lines after the last row
        '5" screen\n',  # a quote inside an unquoted value
        '"\n"',  # a quoted line break
        "plain",
    ],
)
def test_legitimate_quoting_at_the_end_is_read_as_written(tmp_path: Path, last: str) -> None:
    src = tmp_path / "in.csv"
    src.write_text(f'id,text\na,"first, row"\nb,{last}')
    with open_source(src) as source:
        texts = [t for batch in source.batches(10) for t in batch.texts]
    expected = next(csv.reader(io.StringIO(f"b,{last}"), strict=True))[1]
    assert texts == ["first, row", expected]


def test_a_long_quoted_value_left_open_is_found_by_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_csv, "TAIL", 64)  # the value is longer than the bytes kept
    src = tmp_path / "in.csv"
    body = "\n".join(f"{i},row {i} words" for i in range(2, 30))
    src.write_text(f'id,text\n1,"opens here\n{body}\n')
    with open_source(src, on_error="skip") as source:
        assert [i for batch in source.batches(10) for i in batch.ids] == []
        assert source.errors.counts == {"bad_csv": 1}
    long_line = "x" * 200  # an unquoted last value longer than the bytes kept: read as it is
    src.write_text(f"id,text\n1,{long_line}")
    with open_source(src) as source:
        assert [t for batch in source.batches(10) for t in batch.texts] == [long_line]


@pytest.mark.parametrize(("row", "has"), [("only", "1 column"), ("a,b,c", "3 columns")])
def test_a_row_of_the_wrong_width_is_counted_in_singular_or_plural(
    tmp_path: Path, row: str, has: str
) -> None:
    src = tmp_path / "in.csv"
    src.write_text(f"id,text\nr1,fine\n{row}\n")
    match = rf"line 3: the row has {has}, the header 2 "
    with pytest.raises(InputError, match=match), open_source(src) as source:
        list(source.batches(10))


@pytest.mark.parametrize("content", [b"", b"\n\n", b"id,text\n"], ids=["empty", "blank", "header"])
@pytest.mark.parametrize("name", ["in.csv", "in.tsv", "in.csv.gz"])
def test_a_csv_file_without_rows_is_zero_records_as_an_empty_jsonl_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes
) -> None:
    src = tmp_path / name
    content = content.replace(b",", b"\t") if name.endswith(".tsv") else content
    src.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
    with open_source(src) as source:
        assert [t for batch in source.batches(10) for t in batch.texts] == []
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"text": "one two three four five six"}) + "\n")
    for args in (
        ["dedup", str(src), "-o", str(tmp_path / "k.jsonl")],
        ["decontaminate", str(src), "--against", str(bench), "-o", str(tmp_path / "c.jsonl")],
    ):
        assert main([*args, "-q", "--summary-json", str(tmp_path / "s.json")]) == 0, args
        assert json.loads((tmp_path / "s.json").read_text())["documents"] == 0
        assert (tmp_path / args[-1]).read_bytes() == b""
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("keep", [[], ["--keep-field", "score"]])
def test_empty_id_cells_are_no_ids_and_rows_are_named_by_their_number(
    tmp_path: Path, keep: list[str]
) -> None:
    # an empty cell was the id '': two rows without one were refused as a repeated id
    text = "hello world foo bar baz qux quux"
    src = tmp_path / "in.csv"
    src.write_text(f"id,text,score\n,{text},1\n,other words entirely here now,2\nb,{text},0\n")
    clusters = tmp_path / "c.jsonl"
    args = ["dedup", str(src), "-o", str(tmp_path / "k.csv"), "--clusters", str(clusters), "-q"]
    assert main([*args, *keep]) == 0
    lines = [json.loads(x) for x in clusters.read_text().splitlines()]
    assert [(x["id"], x["duplicate_of"]) for x in lines] == [("1", None), ("b", "1")]


@pytest.mark.parametrize("row", ['"unterminated', '"un,terminated\n3,more\n4,x'])
def test_a_quote_never_closed_before_the_last_column_is_said_so(tmp_path: Path, row: str) -> None:
    # it was "the row has 1 column, the header 2 ...; quote values that hold the delimiter"
    src = tmp_path / "in.csv"
    src.write_text(f"id,text\nr1,fine\n{row}\n")
    match = r"line 3: the row opens a quote that is never closed, so the rest of the file"
    with pytest.raises(InputError, match=match), open_source(src) as source:
        list(source.batches(10))
