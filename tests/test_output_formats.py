"""Outputs in the format ``-o`` names (issue 29): converting keeps every field; an unknown name
is refused in one line before reading; CSV/TSV inputs; unknown input names never read as text."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup.cli import main
from neardup.errors import OutputError
from neardup.io._sinks import make_sink
from neardup.testing.synth import random_documents


def _records(n: int = 12) -> list[dict[str, object]]:
    texts = random_documents(n, seed=3, words=(20, 40))
    rows: list[dict[str, object]] = [
        {"id": f"d{i}", "text": t, "score": i, "tags": {"a": [i, i + 1]}, "note": 'é, "q"\nx'}
        for i, t in enumerate(texts)
    ]
    rows.append({**rows[0], "id": "copy"})  # an exact copy: removed
    return rows


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif path.suffix in (".csv", ".tsv"):
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(
                fh, list(rows[0]), delimiter="\t" if path.suffix == ".tsv" else ","
            )
            writer.writeheader()
            writer.writerows(
                {k: json.dumps(v) if isinstance(v, dict) else v for k, v in r.items()} for r in rows
            )
    else:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def _read(path: Path) -> list[dict[str, object]]:
    name = path.name
    if name.endswith(".parquet"):
        return pq.read_table(path).to_pylist()
    if name.endswith((".csv", ".tsv")):
        with open(path, newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh, delimiter="\t" if name.endswith(".tsv") else ","))
    data = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    return [json.loads(line) for line in data.decode().splitlines()]


def _as_text(value: object) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


@pytest.mark.parametrize("out_name", ["k.jsonl", "k.jsonl.gz", "k.parquet", "k.csv", "k.tsv"])
def test_jsonl_input_is_written_in_the_format_the_output_name_says(
    tmp_path: Path, out_name: str
) -> None:
    rows = _records()
    src = _write(tmp_path / "in.jsonl", rows)
    out = tmp_path / out_name
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 0
    got = _read(out)
    want = rows[:-1]
    if out_name.endswith((".csv", ".tsv")):
        assert got == [{k: _as_text(v) for k, v in r.items()} for r in want]
    else:
        assert got == want  # every field, its type and nesting included
    if out_name.endswith(".parquet"):
        assert out.read_bytes()[:4] == b"PAR1"


@pytest.mark.parametrize("src_name", ["in.parquet", "in.csv", "in.tsv"])
def test_table_inputs_convert_to_jsonl_with_every_column(tmp_path: Path, src_name: str) -> None:
    rows = _records()
    src = _write(tmp_path / src_name, rows)
    out = tmp_path / "k.jsonl"
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 0
    got = _read(out)
    if src_name.endswith(".parquet"):
        assert got == rows[:-1]
    else:  # CSV holds text: every column is read as written
        assert got == [
            {k: json.dumps(v) if isinstance(v, dict) else str(v) for k, v in r.items()}
            for r in rows[:-1]
        ]


def test_csv_round_trip_keeps_values_with_quotes_commas_and_newlines(tmp_path: Path) -> None:
    rows = _records()
    src = _write(tmp_path / "in.csv", rows)
    out = tmp_path / "k.csv"
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 0
    assert _read(out) == _read(src)[:-1]


def test_an_output_name_that_says_no_format_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(tmp_path / "in.jsonl", _records())
    for name in ("kept.weird", "kept", "folder/"):
        out = tmp_path / name
        assert main(["dedup", str(src), "-o", str(out)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and ".jsonl" in err[0] and ".parquet" in err[0], err
        assert not out.exists()


@pytest.mark.parametrize(
    ("command", "option", "name", "says"),
    [
        ("decontaminate", "--matches", "m.parquet", "the name says Parquet"),
        ("decontaminate", "--summary-json", "s.json.gz", "one plain JSON document"),
        ("dedup", "--summary-json", "s.gz", "one plain JSON document"),
        ("dedup", "--pairs", "p.csv", "the name says CSV/TSV"),
        ("dedup", "--clusters", "c.jsonl.zst", "compressed other than by gzip"),
    ],
)
def test_a_json_output_named_for_another_format_is_refused_before_reading(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    option: str,
    name: str,
    says: str,
) -> None:
    src = _write(tmp_path / "in.jsonl", _records())
    against = ["--against", str(src)] if command == "decontaminate" else []
    out = tmp_path / name
    assert main([command, str(src), *against, option, str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and option in err[0] and says in err[0], err
    assert not out.exists()


def test_a_cluster_runs_summary_named_for_gzip_is_refused(tmp_path: Path) -> None:
    from neardup.dask.folders import check_folders
    from neardup.errors import ParamError

    with pytest.raises(ParamError, match=r"--summary-json .* one plain JSON document"):
        check_folders({}, {"--summary-json": str(tmp_path / "s.json.gz")}, [], None, {})


def test_an_input_name_that_says_no_format_is_refused_not_read_as_one_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "t.xyz"
    src.write_text("some words here and there")
    assert main(["dedup", str(src), "-o", str(tmp_path / "y.csv")]) == 1
    err = capsys.readouterr().err
    assert "cannot tell the format" in err and "--format" in err
    assert not (tmp_path / "y.csv").exists()
    out = tmp_path / "y.jsonl"
    assert main(["dedup", str(src), "--format", "text", "-o", str(out), "-q"]) == 0
    assert _read(out) == [{"id": str(src), "text": "some words here and there"}]


def test_text_files_go_to_a_folder_or_become_records(tmp_path: Path) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    for i, text in enumerate(random_documents(3, seed=9, words=(20, 30))):
        (folder / f"n{i}.txt").write_text(text)
    assert main(["dedup", str(folder), "-o", str(tmp_path / "copies") + "/", "-q"]) == 0
    assert sorted(p.name for p in (tmp_path / "copies").iterdir()) == ["n0.txt", "n1.txt", "n2.txt"]
    assert main(["dedup", str(folder), "-o", str(tmp_path / "k.parquet"), "-q"]) == 0
    table = pq.read_table(tmp_path / "k.parquet")
    assert table.column_names == ["id", "text"] and table.num_rows == 3


def test_a_csv_row_with_the_wrong_number_of_columns_stops_or_is_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = [t.replace("\n", " ") for t in random_documents(3, seed=4, words=(10, 20))]
    src = tmp_path / "in.csv"
    src.write_text(f'id,text\na,"{texts[0]}"\nb,"{texts[1]}",extra\nc,"{texts[2]}"\n')
    out = tmp_path / "k.jsonl"
    assert main(["dedup", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 3" in err[0] and "3 columns" in err[0], err
    assert main(["dedup", str(src), "-o", str(out), "--on-error", "skip"]) == 0
    assert [r["id"] for r in _read(out)] == ["a", "c"]
    assert "bad_csv 1" in capsys.readouterr().err


def test_a_missing_csv_text_column_names_the_columns_there_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.csv"
    src.write_text("id,body\na,hello there\n")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.csv")]) == 1
    err = capsys.readouterr().err
    assert "no column 'text' (columns: id, body)" in err and "--text-field" in err
    jsonl = _write(tmp_path / "in.jsonl", _records(4))  # JSON Lines read as CSV: no header
    assert main(["dedup", str(jsonl), "--format", "csv", "-o", str(tmp_path / "k.csv")]) == 1
    err = capsys.readouterr().err
    assert "first line is JSON" in err and "leave out --format" in err and "columns:" not in err


def _repeated_names(path: Path, names: list[str]) -> Path:
    """A two-row file whose columns are ``names`` (some repeated), as CSV, TSV or Parquet."""
    texts = random_documents(2, seed=5, words=(10, 20))
    rows = [[texts[i] if name == "text" else f"{name}{i}" for name in names] for i in range(2)]
    if path.suffix == ".parquet":
        columns = [pa.array([row[j] for row in rows]) for j in range(len(names))]
        pq.write_table(pa.Table.from_arrays(columns, names=names), path)
    else:
        with open(path, "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, delimiter="\t" if path.suffix == ".tsv" else ",").writerows(
                [names, *rows]
            )
    return path


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (["id", "text", "text"], "2 columns are named 'text'"),
        (["id", "id", "text"], "2 columns are named 'id'"),
        (["id", "text", "x", "x", "y", "y"], "2 columns are named 'x', 2 columns are named 'y'"),
    ],
)
@pytest.mark.parametrize("src_name", ["in.csv", "in.tsv", "in.parquet"])
def test_table_inputs_with_a_repeated_column_name_are_refused_by_every_command(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    src_name: str,
    names: list[str],
    problem: str,
) -> None:
    src = _repeated_names(tmp_path / src_name, names)
    train = _write(tmp_path / "train.jsonl", _records(3))
    clusters = tmp_path / "clusters.jsonl"
    clusters.write_text(
        '{"id": "id0", "cluster": 0, "kept": true, "duplicate_of": null}\n'
        '{"id": "id1", "cluster": 0, "kept": false, "duplicate_of": "id0"}\n'
    )
    assert main(["index", "create", str(tmp_path / "ix.db")]) == 0
    outs = [tmp_path / name for name in ("k.jsonl", "k.csv", "clean.jsonl", "r.html")]
    for args in (
        ["dedup", str(src), "-o", str(outs[0])],
        ["dedup", str(src), "-o", str(outs[1])],
        ["index", "add", str(tmp_path / "ix.db"), str(src)],
        ["decontaminate", str(train), "--against", str(src), "-o", str(outs[2])],
        ["report", str(src), "--clusters", str(clusters), "-o", str(outs[3])],
    ):
        capsys.readouterr()
        assert main(args) == 1, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{src}: {problem}; rename them" in err[0], (args, err)
    assert not any(out.exists() for out in outs)


@pytest.mark.parametrize("batch", [8192, 1])  # types mixed in one batch, or across batches
@pytest.mark.parametrize("out_name", ["k.csv", "k.tsv"])
def test_csv_output_writes_fields_whose_values_differ_in_type_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out_name: str, batch: int
) -> None:
    monkeypatch.setattr("neardup.io._sinks.BATCH", batch)
    rows = _records(4)[:4]
    rows[0] = {**rows[0], "id": 7, "score": "high"}  # integer and string ids, as JSONL takes
    rows[2] = {**rows[2], "score": 2.5, "tags": "none"}
    src = _write(tmp_path / "in.jsonl", rows)
    out = tmp_path / out_name
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 0
    assert _read(out) == [{k: _as_text(v) for k, v in r.items()} for r in rows]


@pytest.mark.parametrize("out_name", ["k.parquet", "k.csv", "k.tsv"])
def test_a_field_the_first_record_lacks_is_kept(tmp_path: Path, out_name: str) -> None:
    rows = _records(4)[:4]
    rows[2] = {**rows[2], "extra": 3}  # Arrow's from_pylist reads the first record's fields
    src = _write(tmp_path / "in.jsonl", rows)
    out = tmp_path / out_name
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 0
    got = _read(out)
    if out_name == "k.parquet":
        assert got == [{**r, "extra": r.get("extra")} for r in rows]
    else:
        assert [g["extra"] for g in got] == ["", "", "3", ""]


def test_an_integer_beyond_64_bits_is_csv_digits_and_one_line_for_parquet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _records(2)[:2]
    rows[1] = {**rows[1], "n": 2**70}
    src = _write(tmp_path / "in.jsonl", rows)
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.csv"), "-q"]) == 0
    assert [r["n"] for r in _read(tmp_path / "k.csv")] == ["", str(2**70)]
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.parquet")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "beyond 64 bits" in err[0], err
    assert not (tmp_path / "k.parquet").exists()


def test_values_jsonl_cannot_put_in_one_parquet_column_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _records(4)[:4]
    rows[1] = {**rows[1], "score": "not a number"}
    src = _write(tmp_path / "in.jsonl", rows)
    out = tmp_path / "k.parquet"
    assert main(["dedup", str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "write JSONL instead" in err[0], err
    assert not out.exists()


def test_remote_paths_without_a_cluster_are_one_line_that_names_the_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(tmp_path / "in.jsonl", _records())
    for args in (
        ["dedup", "s3://bucket/crawl/part-0.jsonl.gz", "-o", str(tmp_path / "k.jsonl")],
        ["dedup", str(src), "-o", "s3://bucket/kept.jsonl"],
    ):
        assert main(args) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "remote path" in err[0] and "--dask" in err[0], err
    assert not (tmp_path / "k.jsonl").exists()


def test_a_field_of_two_types_is_named_when_parquet_cannot_hold_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _records(3)[:3]
    rows[0] = {**rows[0], "id": 7}  # ids 7 and "d1": one batch
    src = _write(tmp_path / "in.jsonl", rows)
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.parquet")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'id' holds values of different types" in err[0], err
    sink = make_sink("parquet", io.BytesIO(), ("id", "text"))  # each batch of one type
    sink.write([{"id": 1, "text": "a", "n": 1}])
    sink.write([{"id": 2, "text": "b", "n": "two"}])
    with pytest.raises(OutputError, match="field 'n' holds values of different types"):
        sink.close()


def test_a_conversion_that_fails_leaves_no_spill_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    rows = _records(3)[:3]
    rows[0] = {**rows[0], "id": 7}  # ids 7 and "d1": Parquet cannot hold them in one column
    src = _write(tmp_path / "in.jsonl", rows)
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.parquet")]) == 1
    assert not (tmp_path / "k.parquet").exists()
    assert not list(scratch.glob("neardup-convert-*"))


@pytest.mark.parametrize("out_name", ["k.csv", "k.tsv", "k.parquet"])
def test_text_that_is_not_unicode_is_refused_naming_the_record_and_field(
    tmp_path: Path, out_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON escapes a lone surrogate (ids and texts may hold one, and JSONL output keeps it
    escaped); UTF-8 tables cannot hold it: one line naming the record and the field."""
    rows = _records(3)[:3]
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows[:2])
        + json.dumps({**rows[2], "text": rows[2]["text"] + " \ud800"}) + "\n"
    )  # fmt: skip
    assert main(["dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / out_name)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert (
        f"field 'text' of the record with id \"{rows[2]['id']}\" holds text that is not Unicode"
        in err[0]
    )
    assert not (tmp_path / out_name).exists()
    assert main(["dedup", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "k.jsonl")]) == 0


@pytest.mark.parametrize("out_name", ["k.parquet", "k.csv"])
def test_a_table_output_whose_temporary_parts_cannot_be_written_is_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    out_name: str,
) -> None:
    import errno

    import pyarrow.feather as feather

    def too_large(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(feather, "write_feather", too_large)  # as under `ulimit -f`
    src = _write(tmp_path / "in.jsonl", _records())
    out = tmp_path / out_name
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"neardup: error: cannot write the records converted for {out} (")
    assert "TMPDIR chooses its folder): the file is too large for this file system" in err


def _strict(line: str) -> dict[str, object]:
    """A JSON line as a strict reader (JavaScript, Go, serde) reads it: no NaN, no Infinity."""

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not JSON")

    return dict(json.loads(line, parse_constant=refuse))


def test_parquet_nan_and_infinity_become_null_in_json_lines_and_bytes_plain_text_in_csv(
    tmp_path: Path,
) -> None:
    # json.dumps wrote a bare NaN, which strict JSON readers refuse; CSV cells of bytes held
    # JSON's quotes ("AP8=" with the quotes inside the cell)
    src = tmp_path / "in.parquet"
    table = pa.table({
        "id": ["a", "b", "c"], "text": ["x y z w", "p q r s", "u v"],
        "f": [1.0, float("nan"), float("-inf")], "l": [[1.0], [float("nan")], None],
        "bin": [b"\x00\xff", b"ok", None],
    })  # fmt: skip
    pq.write_table(table, src)
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "-q"]) == 0
    rows = [_strict(x) for x in (tmp_path / "k.jsonl").read_text().splitlines()]
    assert [(r["f"], r["l"], r["bin"]) for r in rows] == [
        (1.0, [1.0], "AP8="), (None, [None], "ok"), (None, None, None),
    ]  # fmt: skip
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.csv"), "-q"]) == 0
    cells = list(csv.DictReader(io.StringIO((tmp_path / "k.csv").read_text())))
    assert [(c["l"], c["bin"]) for c in cells] == [("[1.0]", "AP8="), ("[null]", "ok"), ("", "")]


@pytest.mark.parametrize(
    ("option", "name", "says"),
    [
        ("--clusters", "cdir/", "ends in '/', which names a folder"),
        ("--pairs", "p/", "ends in '/', which names a folder"),
        ("--summary-json", "s/", "ends in '/', which names a folder"),
        ("--clusters", "c.parquet.gz", "the name says Parquet"),
        ("--pairs", "p.tab.gz", "the name says CSV/TSV"),
    ],
)
def test_a_file_output_named_as_a_folder_or_a_gzipped_other_format_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, name: str, says: str
) -> None:
    # --clusters cdir/ wrote a file named cdir; c.parquet.gz held gzipped JSON lines
    src = _write(tmp_path / "in.jsonl", _records())
    out = f"{tmp_path}/{name}"
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), option, out, "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and option in err[0] and says in err[0], err
    assert not Path(out.rstrip("/")).exists()
