"""neardup.io: every input format round-trips through the two passes; bad input is named or
counted; global positions never shift; output is atomic; batch size changes nothing."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.errors import InputError, ParamError
from neardup.io import (
    DocBatch,
    Source,
    atomic_dir,
    atomic_write,
    detect_format,
    key_ranks,
    open_source,
    write_clusters,
    write_pairs,
)


# ------------------------------------------------------------------------------------ helpers
def collect(source: Source, batch_size: int = 3) -> tuple[list[str], list[str], list[int]]:
    ids: list[str] = []
    texts: list[str] = []
    positions: list[int] = []
    for batch in source.batches(batch_size):
        assert isinstance(batch, DocBatch)
        assert len(batch.ids) == len(batch.texts) == batch.positions.size <= batch_size
        assert batch.positions.dtype == np.int64
        ids += batch.ids
        texts += batch.texts
        positions += batch.positions.tolist()
    return ids, texts, positions


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def record(**fields: object) -> bytes:
    return (json.dumps(fields, ensure_ascii=False) + "\n").encode()


def no_temp_files(folder: Path) -> bool:
    return not [p.name for p in folder.iterdir() if p.name.startswith(".")]


# --------------------------------------------------------------------------------------- JSONL
def test_jsonl_round_trip_copies_kept_lines_verbatim(tmp_path: Path) -> None:
    lines = [
        b'{"id": "a", "text": "first doc", "url": "http://x", "n": [1, 2]}\n',
        b'{"text":   "spacing kept",  "id":"b"}\r\n',
        record(id="c", text="unicode \u00e9\u4e2d \U0001f600", meta={"k": None}),
        b'{"id": "d", "text": ""}\n',
    ]
    src = write_lines(tmp_path / "corpus.jsonl", lines)
    source = open_source(src)
    ids, texts, positions = collect(source)
    assert ids == ["a", "b", "c", "d"]
    assert texts[0] == "first doc" and texts[3] == ""  # empty documents pass through
    assert positions == [0, 1, 2, 3]
    assert source.n_docs == 4 and source.errors.total == 0
    written = source.write_kept(np.array([True, True, False, True]), tmp_path / "out.jsonl")
    assert written == 3
    assert (tmp_path / "out.jsonl").read_bytes() == lines[0] + lines[1] + lines[3]


def test_missing_ids_default_to_line_numbers_counting_blank_lines(tmp_path: Path) -> None:
    src = write_lines(
        tmp_path / "c.jsonl",
        [record(text="x"), b"\n", b"   \n", record(text="y"), record(id=7, text="z")],
    )
    ids, _, positions = collect(open_source(src))
    assert ids == ["1", "4", "7"]  # integer ids become decimal strings
    assert positions == [0, 1, 2]


def test_several_files_make_line_ids_unique_with_the_file_name(tmp_path: Path) -> None:
    a = write_lines(tmp_path / "a.jsonl", [record(text="x"), record(text="y")])
    b = write_lines(tmp_path / "b.jsonl", [record(text="z")])
    ids, texts, positions = collect(open_source([a, b]))
    assert ids == [f"{a}:1", f"{a}:2", f"{b}:1"]
    assert texts == ["x", "y", "z"] and positions == [0, 1, 2]


def test_last_line_without_newline_gets_one_in_output(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_bytes(b'{"text": "a"}\n{"text": "b"}')
    source = open_source(src)
    collect(source)
    source.write_kept(np.array([True, True]), tmp_path / "o.jsonl")
    assert (tmp_path / "o.jsonl").read_bytes() == b'{"text": "a"}\n{"text": "b"}\n'


def test_utf8_bom_on_first_line_is_accepted(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [b"\xef\xbb\xbf" + record(text="bom")])
    assert collect(open_source(src))[1] == ["bom"]


def test_gzip_jsonl_is_read_and_gz_output_is_compressed(tmp_path: Path) -> None:
    lines = [record(id=str(i), text=f"doc {i}") for i in range(5)]
    src = tmp_path / "c.jsonl.gz"
    src.write_bytes(gzip.compress(b"".join(lines)))
    source = open_source(src)
    assert collect(source)[0] == ["0", "1", "2", "3", "4"]
    keep = np.array([False, True, False, True, True])
    source.write_kept(keep, tmp_path / "o.jsonl.gz")
    assert gzip.decompress((tmp_path / "o.jsonl.gz").read_bytes()) == b"".join(
        line for line, k in zip(lines, keep, strict=True) if k
    )
    source.write_kept(keep, tmp_path / "o.jsonl")  # plain output from gzip input
    assert (tmp_path / "o.jsonl").read_bytes().count(b"\n") == 3


def test_gzip_is_recognised_by_content_when_format_is_forced(tmp_path: Path) -> None:
    src = tmp_path / "data.bin"
    src.write_bytes(gzip.compress(record(text="hidden gzip")))
    with pytest.raises(ParamError, match="cannot tell the format from the name"):
        detect_format(src)  # an unknown name is never read as one text document
    assert collect(open_source(src, fmt="jsonl"))[1] == ["hidden gzip"]


def test_custom_text_and_id_fields(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(doc_id="q", body="b", text=1)])
    ids, texts, _ = collect(open_source(src, text_field="body", id_field="doc_id"))
    assert (ids, texts) == (["q"], ["b"])


# -------------------------------------------------------------------------------- bad input
BAD_LINES = [
    # (line, kind, words the message must contain)
    (b'{"text": "unterminated\n', "bad_json", ["not valid JSON"]),
    (b"[1, 2]\n", "not_object", ["an array", "not a JSON object"]),
    (b'"just a string"\n', "not_object", ["a string", "not a JSON object"]),
    (b'{"body": "x"}\n', "missing_text", ["field 'text' is missing", "--text-field"]),
    (b'{"text": 42}\n', "bad_text", ["field 'text' is a number", "not a string"]),
    (b'{"text": null}\n', "bad_text", ["field 'text' is null"]),
    (b'{"text": "x", "id": 1.5}\n', "bad_id", ["field 'id' is a number", "--id-field"]),
    (b'{"text": "caf\xe9"}\n', "invalid_utf8", ["invalid UTF-8", "re-encode"]),
]


@pytest.mark.parametrize(("bad", "kind", "words"), BAD_LINES, ids=[b[1] for b in BAD_LINES])
def test_bad_record_stops_with_file_line_problem_and_fix(
    tmp_path: Path, bad: bytes, kind: str, words: list[str]
) -> None:
    src = write_lines(tmp_path / "corpus.jsonl", [record(text="ok"), record(text="ok2"), bad])
    with pytest.raises(InputError) as info:
        collect(open_source(src))
    message = str(info.value)
    assert message.startswith(f"{src} line 3: ")
    for word in words:
        assert word in message
    # a missing text field is most often a mistyped --text-field: skipping is the wrong fix
    assert ("--on-error skip" in message) == (kind != "missing_text")


@pytest.mark.parametrize(("bad", "kind", "words"), BAD_LINES, ids=[b[1] for b in BAD_LINES])
def test_bad_record_is_skipped_and_counted_without_shifting_positions(
    tmp_path: Path, bad: bytes, kind: str, words: list[str]
) -> None:
    good = [record(id=str(i), text=f"t{i}") for i in range(4)]
    src = write_lines(tmp_path / "c.jsonl", [good[0], bad, good[1], bad, good[2], good[3]])
    source = open_source(src, on_error="skip")
    ids, _, positions = collect(source)
    assert ids == ["0", "1", "2", "3"] and positions == [0, 1, 2, 3]
    assert source.errors.counts == {kind: 2}
    assert source.errors.examples[0].startswith(f"{src} line 2: ")
    source.write_kept(np.array([False, True, False, True]), tmp_path / "o.jsonl")
    assert (tmp_path / "o.jsonl").read_bytes() == good[1] + good[3]


JSON_ERROR_LINES = [  # a bad line and the message's problem: said once, at Python's column
    ('{"id":"a","text":"tab\there"}', "Invalid control character at column 22"),
    ('{"id":"zz","text":"abc', "Unterminated string starting at column 19"),
    ('{"id":"zz","text":', "Expecting value at column 19"),
]


@pytest.mark.parametrize(("line", "said"), JSON_ERROR_LINES)
def test_bad_json_message_says_the_problem_once_at_the_column_json_gives(
    tmp_path: Path, line: str, said: str
) -> None:
    with pytest.raises(json.JSONDecodeError) as parsed:
        json.loads(line)
    assert f"at column {parsed.value.colno}" in said
    src = write_lines(tmp_path / "c.jsonl", [record(text="ok"), (line + "\n").encode()])
    with pytest.raises(InputError) as info:
        collect(open_source(src))
    assert f"line 2: not valid JSON ({said})" in str(info.value)
    assert " at at " not in str(info.value)


def test_duplicate_id_stops_naming_both_records(tmp_path: Path) -> None:
    src = write_lines(
        tmp_path / "c.jsonl",
        [record(id="x", text="a"), record(id="y", text="b"), record(id="x", text="c")],
    )
    with pytest.raises(
        InputError, match=r"c\.jsonl line 3: id 'x' is already used by .*c\.jsonl line 1"
    ):
        collect(open_source(src))


def test_duplicate_id_message_mentions_skipping_once(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(id="x", text="a"), record(id="x", text="b")])
    with pytest.raises(InputError) as info:
        collect(open_source(src))
    message = str(info.value)
    assert message.count("--on-error skip") == 1, message
    assert message.endswith(
        "make the ids unique, or use --on-error skip to keep the first record with each id and "
        "drop and count the later ones"
    )


def test_duplicate_id_in_skip_mode_keeps_the_first_record(tmp_path: Path) -> None:
    a = write_lines(tmp_path / "a.jsonl", [record(id="x", text="first"), record(id="y", text="b")])
    b = write_lines(tmp_path / "b.jsonl", [record(id="x", text="later"), record(id="z", text="c")])
    source = open_source([a, b], on_error="skip")
    ids, texts, _ = collect(source)
    assert ids == ["x", "y", "z"] and texts == ["first", "b", "c"]
    assert source.errors.counts == {"duplicate_id": 1}
    source.write_kept(np.array([True, True, True]), tmp_path / "o.jsonl")
    assert b'"later"' not in (tmp_path / "o.jsonl").read_bytes()


def test_line_number_id_colliding_with_explicit_id_is_a_duplicate(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(id="2", text="a"), record(text="b")])
    with pytest.raises(InputError, match="'2', which is already the id of"):
        collect(open_source(src))


@pytest.mark.parametrize("blocks", [True, False], ids=["blocks", "line by line"])
def test_duplicate_id_message_says_which_record_has_no_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blocks: bool
) -> None:
    """A record without an id is named by its line number, which an explicit id can equal:
    the message says which of the two has no id."""
    from neardup.io.formats.jsonl import Jsonl

    if not blocks:
        monkeypatch.setattr(Jsonl, "reads_blocks", lambda self, entry, fields: False)
    src = write_lines(tmp_path / "c.jsonl", [record(text="a"), record(id=1, text="b")])
    with pytest.raises(InputError) as info:
        collect(open_source(src))
    assert str(info.value).startswith(
        f"{src} line 2: id '1' is already used by {src} line 1 (which has no id and is named "
        "by its line number); make the ids unique"
    )
    src = write_lines(tmp_path / "d.jsonl", [record(id="2", text="a"), record(text="b")])
    with pytest.raises(InputError) as info:
        collect(open_source(src))
    assert str(info.value).startswith(
        f"{src} line 2: the record has no id and is named by its line number, '2', which is "
        f"already the id of {src} line 1; make the ids unique"
    )
    src = write_lines(tmp_path / "e.jsonl", [record(id="1", text="a"), record(id=1, text="b")])
    with pytest.raises(InputError, match=r"line 2: id '1' is already used by \S+ line 1; "):
        collect(open_source(src))  # both have ids: nothing said about numbers


def test_missing_file_stops_at_open_or_is_counted_in_skip_mode(tmp_path: Path) -> None:
    good = write_lines(tmp_path / "good.jsonl", [record(text="a")])
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InputError, match=r"nope\.jsonl: file not found; check the path"):
        open_source([good, missing])
    source = open_source([good, missing], on_error="skip")
    assert collect(source)[1] == ["a"]
    assert source.errors.counts == {"missing_file": 1}


def test_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        open_source(tmp_path / "no_such_folder")


def test_corrupt_gzip_stops_or_keeps_the_records_read_before_it(tmp_path: Path) -> None:
    lines = [record(id=str(i), text="x" * 50 + str(i)) for i in range(2000)]
    data = gzip.compress(b"".join(lines))
    src = tmp_path / "c.jsonl.gz"
    src.write_bytes(data[: len(data) // 2])  # truncated stream
    with pytest.raises(InputError, match="reading failed after line"):
        collect(open_source(src))
    source = open_source(src, on_error="skip")
    ids, _, _ = collect(source, 500)
    assert 0 < len(ids) < 2000 and source.errors.counts == {"unreadable": 1}
    source.write_kept(np.ones(len(ids), dtype=bool), tmp_path / "o.jsonl")
    assert (tmp_path / "o.jsonl").read_bytes() == b"".join(lines[: len(ids)])


def test_file_changed_between_passes_is_an_error_and_output_untouched(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(text="a"), record(text="b")])
    out = tmp_path / "o.jsonl"
    out.write_bytes(b"previous output\n")
    source = open_source(src)
    collect(source)
    write_lines(src, [record(text="a"), record(text="changed!")])
    with pytest.raises(InputError, match="changed between the two passes"):
        source.write_kept(np.array([True, True]), out)
    assert out.read_bytes() == b"previous output\n"
    assert no_temp_files(tmp_path)


def test_kept_mask_must_match_the_documents(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(text="a"), record(text="b")])
    source = open_source(src)
    collect(source)
    with pytest.raises(ParamError, match=r"shape \(2,\)"):
        source.write_kept(np.array([True]), tmp_path / "o.jsonl")
    with pytest.raises(ParamError, match="bool"):
        source.write_kept(np.array([1, 0]), tmp_path / "o.jsonl")
    assert not (tmp_path / "o.jsonl").exists()


def test_write_kept_runs_pass_one_itself_when_needed(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(text="a"), b"oops\n", record(text="b")])
    source = open_source(src, on_error="skip")
    assert source.write_kept(np.array([False, True]), tmp_path / "o.jsonl") == 1
    assert (tmp_path / "o.jsonl").read_bytes() == record(text="b")


def test_bad_arguments_are_param_errors(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(text="a")])
    with pytest.raises(ParamError, match="on_error"):
        open_source(src, on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="format"):
        open_source(src, fmt="xml")  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="batch_size"):
        open_source(src).batches(0)
    with pytest.raises(ParamError, match="no inputs"):
        open_source([])


def test_mixed_formats_are_refused_unless_forced(tmp_path: Path) -> None:
    a = write_lines(tmp_path / "a.jsonl", [record(text="a")])
    b = tmp_path / "b.txt"
    b.write_text("plain")
    with pytest.raises(ParamError, match="mix formats"):
        open_source([a, b])
    ids, texts, _ = collect(open_source([a, b], fmt="text"))
    assert ids == [str(a), str(b)] and texts[1] == "plain"


# ------------------------------------------------------------------------------------ stdin
def test_stream_input_is_spooled_for_pass_two_and_cleaned_up(tmp_path: Path) -> None:
    lines = [record(id="s1", text="one"), b"garbage\n", record(id="s2", text="two")]
    stream = io.BytesIO(b"".join(lines))
    with open_source(stream, on_error="skip") as source:
        assert source.input_bytes is None
        ids, _, _ = collect(source)
        assert ids == ["s1", "s2"] and source.errors.counts == {"bad_json": 1}
        assert collect(source)[0] == ids  # a second pass 1 reads the spool
        spool = Path(str(source._spool))
        assert spool.exists()
        source.write_kept(np.array([False, True]), tmp_path / "o.jsonl")
    assert not spool.exists()
    assert (tmp_path / "o.jsonl").read_bytes() == lines[2]


def test_partly_read_stream_cannot_be_read_again() -> None:
    stream = io.BytesIO(b"".join(record(text=str(i)) for i in range(10)))
    source = open_source(stream)
    batches = source.batches(2)
    next(batches)
    batches.close()
    with pytest.raises(InputError, match="only partly read"):
        collect(source)
    source.close()


def test_dash_reads_standard_input_in_a_subprocess(tmp_path: Path) -> None:
    program = (
        "import sys, numpy as np\n"
        "from neardup.io import open_source\n"
        "with open_source('-') as s:\n"
        "    ids = [i for b in s.batches(2) for i in b.ids]\n"
        "    s.write_kept(np.array([i != '2' for i in ids]), sys.argv[1])\n"
        "    print(','.join(ids))\n"
    )
    lines = [record(text="a"), record(text="b"), record(text="c")]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    result = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path / "o.jsonl")],
        input=b"".join(lines),
        capture_output=True,
        env=env,
        check=True,
        timeout=60,
    )
    assert result.stdout.decode().strip() == "1,2,3"
    assert (tmp_path / "o.jsonl").read_bytes() == lines[0] + lines[2]


def test_stdin_refuses_other_formats() -> None:
    with pytest.raises(ParamError, match="standard input is read as JSONL"):
        open_source("-", fmt="parquet")


# ---------------------------------------------------------------------------------- Parquet
def make_parquet(path: Path, row_group_size: int = 3, **columns: list[object]) -> Path:
    table = pa.table(columns).replace_schema_metadata({"origin": "test"})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def test_parquet_round_trip_preserves_every_column_and_the_schema(tmp_path: Path) -> None:
    src = make_parquet(
        tmp_path / "c.parquet",
        id=[10, 11, 12, 13, 14, 15, 16],
        text=["a", "b", "", "d", "e", "f", "g"],
        score=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
        tags=[["x"], [], ["y", "z"], None, ["w"], [], ["v"]],
    )
    source = open_source(src)
    ids, texts, positions = collect(source, 4)
    assert ids == ["10", "11", "12", "13", "14", "15", "16"]
    assert texts[2] == "" and positions == list(range(7))
    keep = np.array([True, False, True, False, False, True, True])
    assert source.write_kept(keep, tmp_path / "o.parquet") == 4
    out = pq.read_table(tmp_path / "o.parquet")
    original = pq.read_table(src)
    assert out.schema.equals(original.schema, check_metadata=True)
    assert out.to_pylist() == [r for r, k in zip(original.to_pylist(), keep, strict=True) if k]


def test_parquet_null_rows_are_named_by_row_or_skipped(tmp_path: Path) -> None:
    src = make_parquet(
        tmp_path / "c.parquet",
        text=["a", None, "c", "d", "e"],
        id=["r1", "r2", None, "r4", "r1"],
        extra=[1, 2, 3, 4, 5],
    )
    with pytest.raises(InputError, match=r"c\.parquet row 2: field 'text' is null"):
        collect(open_source(src))
    source = open_source(src, on_error="skip")
    ids, _, positions = collect(source, 2)
    assert ids == ["r1", "r4"] and positions == [0, 1]
    assert source.errors.counts == {"bad_text": 1, "bad_id": 1, "duplicate_id": 1}
    source.write_kept(np.array([False, True]), tmp_path / "o.parquet")
    assert pq.read_table(tmp_path / "o.parquet").column("extra").to_pylist() == [4]


def test_parquet_without_ids_uses_row_numbers(tmp_path: Path) -> None:
    src = make_parquet(tmp_path / "c.parquet", text=["a", "b", "c"])
    assert collect(open_source(src))[0] == ["1", "2", "3"]


def test_parquet_missing_text_column_names_the_columns(tmp_path: Path) -> None:
    src = make_parquet(tmp_path / "c.parquet", body=["a"], id=["x"])
    with pytest.raises(InputError, match=r"no column 'text' \(columns: body, id\).*--text-field"):
        collect(open_source(src))
    ok = make_parquet(tmp_path / "d.parquet", text=["fine"])
    source = open_source([src, ok], on_error="skip")
    assert collect(source)[1] == ["fine"]
    assert source.errors.counts == {"bad_schema": 1}


def test_parquet_non_string_text_column_is_refused(tmp_path: Path) -> None:
    src = make_parquet(tmp_path / "c.parquet", text=[1, 2])
    with pytest.raises(InputError, match="column 'text' has type int64, not string"):
        collect(open_source(src))


def test_parquet_files_with_other_schemas_are_refused(tmp_path: Path) -> None:
    a = make_parquet(tmp_path / "a.parquet", text=["a"], n=[1])
    b = make_parquet(tmp_path / "b.parquet", text=["b"], m=["x"])
    with pytest.raises(InputError, match=r"b\.parquet: its columns differ from those of"):
        collect(open_source([a, b]))


def test_parquet_folder_of_shards_is_one_source(tmp_path: Path) -> None:
    folder = tmp_path / "shards"
    folder.mkdir()
    make_parquet(folder / "part-0.parquet", text=["a", "b"], k=[1, 2])
    make_parquet(folder / "part-1.parquet", text=["c"], k=[3])
    source = open_source(folder)
    assert source.fmt == "parquet"
    assert collect(source)[1] == ["a", "b", "c"]
    source.write_kept(np.array([False, True, True]), tmp_path / "o.parquet")
    assert pq.read_table(tmp_path / "o.parquet").column("k").to_pylist() == [2, 3]


def test_corrupt_parquet_is_unreadable(tmp_path: Path) -> None:
    src = tmp_path / "c.parquet"
    src.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        collect(open_source(src))


# ------------------------------------------------------------------------------- text files
def test_text_folder_round_trip_copies_kept_files(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "b.txt").write_text("bee")
    (folder / "a.txt").write_text("ay \u00e9")
    (folder / "sub" / "c.md").write_text("")
    (folder / ".hidden").write_text("never read")
    source = open_source(folder)
    ids, texts, _ = collect(source)
    assert ids == [str(folder / "a.txt"), str(folder / "b.txt"), str(folder / "sub" / "c.md")]
    assert texts == ["ay \u00e9", "bee", ""]
    out = tmp_path / "kept"
    assert source.write_kept(np.array([True, False, True]), out) == 2
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "a.txt",
        os.path.join("sub", "c.md"),
    ]
    assert (out / "a.txt").read_text() == "ay \u00e9"
    assert no_temp_files(tmp_path)


def test_text_file_list_keeps_paths_relative_to_the_common_folder(tmp_path: Path) -> None:
    for name in ("x/one.txt", "y/two.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    files = [tmp_path / "x/one.txt", tmp_path / "y/two.txt"]
    source = open_source(files)
    collect(source)
    source.write_kept(np.array([False, True]), tmp_path / "out")
    assert (tmp_path / "out/y/two.txt").read_text() == "y/two.txt"
    assert not (tmp_path / "out/x").exists()


def test_text_file_with_invalid_utf8_is_named_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nstill fine\nbroken \xff here\n")
    good = tmp_path / "good.txt"
    good.write_text("good")
    with pytest.raises(InputError, match=r"bad\.txt: invalid UTF-8 at line 3, byte 8"):
        collect(open_source([bad, good]))
    source = open_source([bad, good], on_error="skip")
    assert collect(source)[0] == [str(good)]
    assert source.errors.counts == {"invalid_utf8": 1}
    source.write_kept(np.array([True]), tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["good.txt"]


def test_text_output_folder_must_be_new_or_empty(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    source = open_source(tmp_path / "a.txt")
    collect(source)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "old").write_text("keep me")
    with pytest.raises(ParamError, match="not an empty folder"):
        source.write_kept(np.array([True]), busy)
    assert (busy / "old").read_text() == "keep me"
    (tmp_path / "empty").mkdir()
    source.write_kept(np.array([True]), tmp_path / "empty")
    assert (tmp_path / "empty" / "a.txt").read_text() == "a"


# ------------------------------------------------------------------------------ atomic output
class Crash(Exception):
    pass


@pytest.mark.parametrize("mode", ["wb", "w"])
def test_crash_mid_write_leaves_old_file_and_no_temp_files(tmp_path: Path, mode: str) -> None:
    target = tmp_path / "result.jsonl"
    target.write_bytes(b"old content\n")
    with pytest.raises(Crash), atomic_write(target, mode) as handle:  # type: ignore[call-overload]
        handle.write(b"half of the new" if mode == "wb" else "half of the new")
        raise Crash
    assert target.read_bytes() == b"old content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.jsonl"]


def test_atomic_write_replaces_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "r.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    with atomic_write(target, "w") as handle:
        handle.write("new \u00e9")
        assert target.read_text() == "old"  # not visible before the block ends
    assert target.read_text(encoding="utf-8") == "new \u00e9"
    assert target.stat().st_mode & 0o777 == 0o640  # permissions of the replaced file kept
    assert no_temp_files(tmp_path)


def test_a_large_output_is_flushed_to_disk_while_it_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Background ``fdatasync`` every FLUSH_EVERY bytes, the final fsync after it; the bytes
    are exactly those written."""
    from neardup.io import _targets

    monkeypatch.setattr(_targets, "FLUSH_EVERY", 1000)
    synced: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd))[1])
    data = bytes(range(256)) * 40
    target = tmp_path / "big.bin"
    with atomic_write(target) as handle:
        for i in range(0, len(data), 700):
            handle.write(data[i : i + 700])
            handle.flush()
    assert target.read_bytes() == data
    assert synced  # at least one flush ran before the end
    assert no_temp_files(tmp_path)


def test_a_failed_background_flush_fails_the_output_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel reports a write-back error once: the background flush's error must fail
    the output (named, one line), not vanish because the final fsync no longer sees it."""
    import errno

    from neardup.errors import OutputError
    from neardup.io import _targets

    monkeypatch.setattr(_targets, "FLUSH_EVERY", 1000)

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    target = tmp_path / "out.jsonl"
    with pytest.raises(OutputError, match=r"out\.jsonl"), atomic_write(target) as handle:
        for _ in range(10):
            handle.write(b"x" * 500)
            handle.flush()
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_into_missing_folder_is_a_param_error(tmp_path: Path) -> None:
    with pytest.raises(ParamError, match="does not exist"), atomic_write(tmp_path / "no" / "f"):
        pass


def test_crash_while_filling_an_output_folder_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(Crash), atomic_dir(tmp_path / "out") as folder:
        (folder / "a.txt").write_text("partial")
        raise Crash
    assert list(tmp_path.iterdir()) == []


def test_write_kept_failing_mid_write_keeps_previous_output(tmp_path: Path) -> None:
    lines = [record(text=f"doc {i}") for i in range(6)]
    src = write_lines(tmp_path / "c.jsonl", lines)
    out = tmp_path / "o.jsonl"
    out.write_bytes(b"old\n")
    source = open_source(src)
    collect(source)
    # Blank out the last record without changing size or mtime: the stamp check passes, and
    # pass 2 fails only after it has written the first five lines.
    stat = src.stat()
    write_lines(src, [*lines[:5], b" " * (len(lines[5]) - 1) + b"\n"])
    os.utime(src, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(InputError, match="changed between the two passes"):
        source.write_kept(np.ones(6, dtype=bool), out)
    assert out.read_bytes() == b"old\n"
    assert no_temp_files(tmp_path)


# --------------------------------------------------------------------------- result writers
def test_write_clusters_and_pairs_round_trip_awkward_ids(tmp_path: Path) -> None:
    ids = ["plain", 'quote " and \\ back', "new\nline", "\u4e2d\u6587 \U0001f600"]
    cluster = np.array([0, 0, 2, 2], dtype=np.int64)
    kept = np.array([True, False, True, False])
    assert write_clusters(tmp_path / "c.jsonl", ids, cluster, kept) == 4
    rows = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text("utf-8").splitlines()]
    assert rows == [
        {"id": i, "cluster": int(c), "kept": bool(k)}
        for i, c, k in zip(ids, cluster, kept, strict=True)
    ]
    assert write_clusters(tmp_path / "s.jsonl", ids, cluster, kept, rows=np.array([3, 1])) == 2
    assert [
        json.loads(x)["id"] for x in (tmp_path / "s.jsonl").read_text("utf-8").splitlines()
    ] == [ids[3], ids[1]]

    a, b = np.array([0, 2]), np.array([1, 3])
    score = np.array([0.8333333333333334, 1.0])
    assert write_pairs(tmp_path / "p.jsonl.gz", ids, a, b, score) == 2
    pairs = [
        json.loads(x) for x in gzip.decompress((tmp_path / "p.jsonl.gz").read_bytes()).splitlines()
    ]
    assert pairs == [
        {"id_a": ids[0], "id_b": ids[1], "score": 0.8333333333333334},
        {"id_a": ids[2], "id_b": ids[3], "score": 1.0},
    ]


def test_result_writers_check_their_arrays(tmp_path: Path) -> None:
    with pytest.raises(ParamError, match="outside"):
        write_pairs(tmp_path / "p.jsonl", ["a"], [0], [1], [0.5])
    with pytest.raises(ParamError, match="NaN"):
        write_pairs(tmp_path / "p.jsonl", ["a", "b"], [0], [1], [float("nan")])
    with pytest.raises(ParamError, match="one label per id"):
        write_clusters(tmp_path / "c.jsonl", ["a", "b"], [0], [True, True])
    assert list(tmp_path.iterdir()) == []


def test_result_writer_streams_many_rows(tmp_path: Path) -> None:
    n = 150_000  # more than two chunks
    ids = [f"d{i}" for i in range(n)]
    a = np.arange(n - 1)
    write_pairs(tmp_path / "p.jsonl", ids, a, a + 1, np.full(n - 1, 0.5))
    text = (tmp_path / "p.jsonl").read_text()
    assert text.count("\n") == n - 1
    assert text.splitlines()[-1] == f'{{"id_a": "d{n - 2}", "id_b": "d{n - 1}", "score": 0.5}}'


# ------------------------------------------------------------------------------- invariants
GOOD = st.builds(
    lambda i, t, has_id: record(id=f"k{i}", text=t) if has_id else record(text=t),
    st.integers(0, 30),
    st.text(max_size=12),
    st.booleans(),
)
BAD = st.sampled_from([b[0] for b in BAD_LINES] + [b"\n", b"  \t \n"])


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.one_of(GOOD, BAD), max_size=30),
    sizes=st.lists(st.integers(1, 9), min_size=2, max_size=2),
    seed=st.integers(0, 2**32 - 1),
)
def test_batch_size_never_changes_documents_and_pass_two_matches_pass_one(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], sizes: list[int], seed: int
) -> None:
    folder = tmp_path_factory.mktemp("prop")
    src = write_lines(folder / "c.jsonl", lines)
    runs = [collect(open_source(src, on_error="skip"), size) for size in sizes]
    assert runs[0] == runs[1]
    ids, texts, positions = runs[0]
    assert positions == list(range(len(ids)))

    source = open_source(src, on_error="skip")
    collect(source, sizes[0])
    keep = np.random.default_rng(seed).random(len(ids)) < 0.5
    source.write_kept(keep, folder / "o.jsonl")
    out = open_source(folder / "o.jsonl")  # kept lines read back give exactly the kept docs
    kept_ids, kept_texts, _ = collect(out, 4)
    expected = [(i, t) for i, t, k in zip(ids, texts, keep, strict=True) if k]
    # documents without an id field get line-number ids, which change in the output file
    got = list(zip(kept_ids, kept_texts, strict=True))
    assert [t for _, t in got] == [t for _, t in expected]
    assert [i for i, _ in got if i.startswith("k")] == [i for i, _ in expected if i.startswith("k")]


def test_parquet_batches_do_not_depend_on_batch_size(tmp_path: Path) -> None:
    n = 70_000  # more than one reader batch
    src = make_parquet(
        tmp_path / "c.parquet", row_group_size=30_000, text=[f"t{i % 97}" for i in range(n)]
    )
    small = collect(open_source(src), 999)
    large = collect(open_source(src), 50_000)
    assert small == large and len(small[0]) == n


def test_parquet_dictionary_and_large_string_text_columns(tmp_path: Path) -> None:
    table = pa.table(
        {
            "text": pa.array(["a", "b", "a"]).dictionary_encode(),
            "id": pa.array(["x", "y", "z"], type=pa.large_string()),
        }
    )
    pq.write_table(table, tmp_path / "c.parquet")
    source = open_source(tmp_path / "c.parquet")
    assert collect(source)[:2] == (["x", "y", "z"], ["a", "b", "a"])
    source.write_kept(np.array([True, False, True]), tmp_path / "o.parquet")
    out = pq.read_table(tmp_path / "o.parquet")
    assert out.column("id").to_pylist() == ["x", "z"]
    assert out.schema.equals(pq.read_table(tmp_path / "c.parquet").schema)


def test_write_kept_to_a_binary_stream(tmp_path: Path) -> None:
    lines = [record(text="a"), record(text="b")]
    source = open_source(write_lines(tmp_path / "c.jsonl", lines))
    sink = io.BytesIO()
    source.write_kept(np.array([False, True]), sink)
    assert sink.getvalue() == lines[1]


def test_empty_folder_gives_no_documents_and_an_empty_output_folder(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    source = open_source(tmp_path / "in")
    assert source.fmt == "text" and collect(source)[0] == [] and source.n_docs == 0
    assert source.write_kept(np.zeros(0, dtype=bool), tmp_path / "out") == 0
    assert list((tmp_path / "out").iterdir()) == []


# ------------------------------------------------------------------------ keys (--keep-field)
def collect_keys(source: Source, batch_size: int = 3) -> tuple[list[str], list[object]]:
    ids: list[str] = []
    keys: list[object] = []
    for batch in source.batches(batch_size):
        assert batch.keys is not None and len(batch.keys) == len(batch.ids)
        ids += batch.ids
        keys += batch.keys
    return ids, keys


def test_no_key_field_gives_batches_without_keys(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(id="a", text="x", score=1)])
    (batch,) = open_source(src).batches()
    assert batch.keys is None


def test_jsonl_keys_are_field_values_aligned_with_ids_and_missing_is_none(tmp_path: Path) -> None:
    lines = [
        record(id="a", text="x", score=3),
        record(id="b", text="y"),  # absent
        record(id="c", text="z", score=None),  # null
        record(id="d", text="w", score=2.5),
        b'{"id": "e", "text": "v", "score": NaN}\n',  # json's NaN: no value
        record(id="f", text="u", score=-7),
    ]
    source = open_source(write_lines(tmp_path / "c.jsonl", lines), key_field="score")
    ids, keys = collect_keys(source, 4)
    assert ids == ["a", "b", "c", "d", "e", "f"]
    assert keys == [3, None, None, 2.5, None, -7]
    assert source.missing_keys == 3 and source.errors.total == 0


def test_gzip_jsonl_and_stream_inputs_carry_string_keys(tmp_path: Path) -> None:
    lines = [record(text="x", date="2024-01-02"), record(text="y", date="2023-12-31")]
    src = tmp_path / "c.jsonl.gz"
    src.write_bytes(gzip.compress(b"".join(lines)))
    assert collect_keys(open_source(src, key_field="date"))[1] == ["2024-01-02", "2023-12-31"]
    stream = io.BytesIO(b"".join(lines))
    with open_source(stream, key_field="date") as source:
        assert collect_keys(source)[1] == ["2024-01-02", "2023-12-31"]
        source.write_kept(np.array([False, True]), tmp_path / "o.jsonl")
    assert (tmp_path / "o.jsonl").read_bytes() == lines[1]


def test_key_of_another_kind_stops_naming_file_line_and_the_first_key(tmp_path: Path) -> None:
    lines = [record(text="a", q=None), record(text="b", q=0.5), record(text="c", q="high")]
    src = write_lines(tmp_path / "c.jsonl", lines)
    with pytest.raises(InputError) as info:
        collect_keys(open_source(src, key_field="q"))
    message = str(info.value)
    assert message.startswith(f"{src} line 3: field 'q' is a string")
    assert f"the first key ({src} line 2) is a number" in message
    assert "--keep-field" in message and "--on-error skip" in message


@pytest.mark.parametrize(
    ("value", "words"),
    [([1, 2], "is an array, which has no order"), ({"a": 1}, "is an object, which has no order")],
)
def test_array_or_object_key_is_a_bad_record(tmp_path: Path, value: object, words: str) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(text="a", q=value)])
    with pytest.raises(InputError, match=f"line 1: field 'q' {words}"):
        collect_keys(open_source(src, key_field="q"))


def test_bad_keys_are_skipped_and_counted_and_do_not_fix_the_kind(tmp_path: Path) -> None:
    lines = [
        record(id="0", text="a", q=[1]),  # unorderable: skipped, fixes nothing
        record(id="1", text="b"),  # missing: None, fixes nothing
        record(id="2", text="c", q="m"),  # the first key: strings from here on
        record(id="3", text="d", q=7),  # a number: skipped
        record(id="4", text="e", q=True),  # a boolean: skipped
        record(id="5", text="f", q="a"),
    ]
    src = write_lines(tmp_path / "c.jsonl", lines)
    source = open_source(src, on_error="skip", key_field="q")
    ids, keys = collect_keys(source, 2)
    assert ids == ["1", "2", "5"] and keys == [None, "m", "a"]
    assert source.errors.counts == {"bad_key": 3}
    assert source.errors.examples[1].startswith(f"{src} line 4: field 'q' is a number, but")
    source.write_kept(np.array([False, True, True]), tmp_path / "o.jsonl")
    assert (tmp_path / "o.jsonl").read_bytes() == lines[2] + lines[5]


def test_booleans_are_not_numbers(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(text="a", q=1), record(text="b", q=False)])
    with pytest.raises(InputError, match="line 2: field 'q' is a boolean, but"):
        collect_keys(open_source(src, key_field="q"))
    keys = collect_keys(open_source(src, key_field="q", on_error="skip"))[1]
    assert keys == [1] and type(keys[0]) is int


def test_key_field_may_be_the_id_or_text_field(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "c.jsonl", [record(id=5, text="b"), record(id=3, text="a")])
    assert collect_keys(open_source(src, key_field="id"))[1] == [5, 3]
    assert collect_keys(open_source(src, key_field="text"))[1] == ["b", "a"]


def test_text_inputs_refuse_a_key_field(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("hello")
    with pytest.raises(ParamError, match=r"text-file inputs have no fields.*--keep-field"):
        open_source(tmp_path / "d", key_field="mtime")
    with pytest.raises(ParamError, match="text-file inputs have no fields"):
        open_source(tmp_path / "d" / "a.txt", "text", key_field="score")
    with pytest.raises(ParamError, match="key field must be a non-empty string"):
        open_source(tmp_path / "d", key_field="")


def test_parquet_keys_of_every_orderable_column_type(tmp_path: Path) -> None:
    utc = pa.timestamp("ns", tz="UTC")
    table = pa.table(
        {
            "text": ["a", "b", "c"],
            "n": pa.array([3, None, -1], pa.int32()),
            "f": pa.array([0.5, float("nan"), None], pa.float32()),
            "dec": pa.array([None, 12, 3], pa.decimal128(5, 1)),
            "s": pa.array(["x", None, "x"]).dictionary_encode(),
            "b": pa.array([True, False, None]),
            "ts": pa.array([1_700_000_000_000_000_001, None, 5], utc),
            "day": pa.array([19_000, 1, None], pa.date32()),
        }
    )
    pq.write_table(table, tmp_path / "c.parquet", row_group_size=2)

    def keys(name: str) -> list[object]:
        return collect_keys(open_source(tmp_path / "c.parquet", key_field=name), 2)[1]

    assert keys("n") == [3, None, -1]
    assert keys("f") == [0.5, None, None]
    assert keys("dec") == [None, 12.0, 3.0]
    assert keys("s") == ["x", None, "x"]
    assert keys("b") == [True, False, None]
    assert keys("ts") == [
        np.datetime64(1_700_000_000_000_000_001, "ns"),
        None,
        np.datetime64(5, "ns"),
    ]
    assert keys("day") == [np.datetime64("2022-01-08"), np.datetime64("1970-01-02"), None]


def test_parquet_key_column_absent_or_unordered_makes_the_file_bad(tmp_path: Path) -> None:
    src = make_parquet(tmp_path / "c.parquet", text=["a", "b"], tags=[[1], [2]])
    with pytest.raises(InputError, match=r"there is no column 'score'.*--keep-field"):
        collect_keys(open_source(src, key_field="score"))
    with pytest.raises(InputError, match=r"column 'tags' has type list<.*>, which has no order"):
        collect_keys(open_source(src, key_field="tags"))
    source = open_source(src, key_field="tags", on_error="skip")
    assert collect_keys(source) == ([], []) and source.errors.counts == {"bad_schema": 1}


def test_parquet_pass_two_is_unchanged_by_a_key_field(tmp_path: Path) -> None:
    src = make_parquet(
        tmp_path / "c.parquet", id=[1, 2, 3, 4], text=["a", None, "c", "d"], q=[1.0, 2.0, None, 4.0]
    )
    source = open_source(src, key_field="q", on_error="skip")
    assert collect_keys(source) == (["1", "3", "4"], [1.0, None, 4.0])
    source.write_kept(np.array([True, False, True]), tmp_path / "o.parquet")
    assert pq.read_table(tmp_path / "o.parquet").column("id").to_pylist() == [1, 4]


KEYED = st.builds(
    lambda i, key: (
        record(id=f"k{i}", text=json.dumps(key))
        if key == "<absent>"
        else record(id=f"k{i}", text=json.dumps(key), q=key)
    ),
    st.integers(0, 30),
    st.one_of(
        st.just("<absent>"),
        st.none(),
        st.integers(-5, 5),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=3),
        st.booleans(),
        st.lists(st.integers(), max_size=1),
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.one_of(KEYED, BAD), max_size=30),
    sizes=st.lists(st.integers(1, 9), min_size=2, max_size=2),
)
def test_keys_do_not_depend_on_batch_size_and_stay_one_kind(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], sizes: list[int]
) -> None:
    src = write_lines(tmp_path_factory.mktemp("keys") / "c.jsonl", lines)
    runs = []
    for size in sizes:
        source = open_source(src, on_error="skip", key_field="q")
        texts = [t for batch in source.batches(size) for t in batch.texts]
        runs.append((collect_keys(source, size), texts))
    assert runs[0] == runs[1]
    (ids, keys), texts = runs[0]
    # each document's text is its key's JSON: keys stay aligned with their documents
    for key, text in zip(keys, texts, strict=True):
        expected = json.loads(text)
        assert key == (None if expected == "<absent>" else expected)
        assert type(key) is type(None if expected == "<absent>" else expected)
    kinds = {
        type(k) if not isinstance(k, int | float) or isinstance(k, bool) else float
        for k in keys
        if k is not None
    }
    assert len(kinds) <= 1
    assert len(set(ids)) == len(ids)


# ----------------------------------------------------------------------------------- key_ranks
def test_key_ranks_put_missing_keys_at_the_least_preferred_end() -> None:
    keys = [3, None, 1.5, 3, float("nan"), -2]
    assert key_ranks(keys, "max").tolist() == [3, 0, 2, 3, 0, 1]
    assert key_ranks(keys, "min").tolist() == [3, 4, 2, 3, 4, 1]
    assert key_ranks(["b", None, "a", "é"]).tolist() == [2, 0, 1, 3]
    assert key_ranks(["\ud800", "a", "\ud800"]).tolist() == [2, 1, 2]  # not UTF-8: slow path
    assert key_ranks([True, False, None], "min").tolist() == [2, 1, 3]
    days = [np.datetime64("2020-01-02"), None, np.datetime64("2019-05-01")]
    assert key_ranks(days).tolist() == [2, 0, 1]
    assert key_ranks([2**70, 1, 2**70 + 1]).tolist() == [2, 1, 3]  # exact beyond int64 too
    assert key_ranks([10**400, 1, 10**400 + 1]).tolist() == [2, 1, 3]  # exact beyond float64
    assert key_ranks([None, None], "min").tolist() == [1, 1]
    assert key_ranks([]).tolist() == []


def test_key_ranks_refuse_mixed_kinds_and_bad_prefer() -> None:
    with pytest.raises(ParamError, match="one kind"):
        key_ranks([1, "a"])
    with pytest.raises(ParamError, match="one kind"):
        key_ranks([1, True])
    with pytest.raises(ParamError, match="prefer"):
        key_ranks([1], "largest")  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(
    keys=st.one_of(
        st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), max_size=20),
        st.lists(st.one_of(st.none(), st.floats(allow_nan=False)), max_size=20),
        st.lists(st.one_of(st.none(), st.text(max_size=4)), max_size=20),
    ),
    prefer=st.sampled_from(["max", "min"]),
)
def test_key_ranks_order_equals_python_order(keys: list[object], prefer: str) -> None:
    ranks = key_ranks(keys, prefer)  # type: ignore[arg-type]
    for i, a in enumerate(keys):
        for j, b in enumerate(keys):
            if a is None or b is None:
                continue
            assert (ranks[i] < ranks[j]) == (a < b)  # type: ignore[operator]
            assert (ranks[i] == ranks[j]) == (a == b)
        if a is None:  # missing keys are never preferred over present ones
            present = [r for k, r in zip(keys, ranks, strict=True) if k is not None]
            assert all((ranks[i] < r) if prefer == "max" else (ranks[i] > r) for r in present)


def test_key_ranks_choose_the_preferred_cluster_member_end_to_end(tmp_path: Path) -> None:
    from neardup.clusters import choose_representatives

    lines = [
        record(text="a", q=1),
        record(text="b", q=9),
        record(text="c"),
        record(text="d", q=4),
        record(text="e", q=None),
    ]
    source = open_source(write_lines(tmp_path / "c.jsonl", lines), key_field="q")
    keys = collect_keys(source)[1]
    labels = np.array([0, 0, 0, 3, 3])
    best = choose_representatives(labels, "field", key=key_ranks(keys, "max"), prefer="max")
    least = choose_representatives(labels, "field", key=key_ranks(keys, "min"), prefer="min")
    assert best.tolist() == [False, True, False, True, False]
    assert least.tolist() == [True, False, False, True, False]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_ids_are_quoted_as_json_dumps_quotes_them(value: str) -> None:
    from neardup.io._writers import _quote

    assert _quote(value) == json.dumps(value, ensure_ascii=False)
