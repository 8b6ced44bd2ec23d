"""Paragraph and line deduplication: whole runs against the exact truth over every paragraph
pair, the rewritten documents, determinism, the command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neardup.cli import main
from neardup.errors import ParamError
from neardup.paragraph_run import UnitOptions, dedup_paragraphs
from neardup.paragraphs import split_reference
from neardup.params import DedupParams
from neardup.run import DedupOutputs, ReadOptions
from neardup.testing.measures import residual_duplicates, unjustified_removals
from neardup.testing.paragraphs import paragraph_corpus, unit_truth

from .test_paragraph_split import _rewrite_reference


def _write_jsonl(path: Path, docs: list[str]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(docs):
            fh.write(json.dumps({"id": f"d{i}", "text": text, "n": i}) + "\n")


def _run(tmp: Path, src: Path, tag: str, **kw: object) -> dict[str, object]:
    out = DedupOutputs(
        kept=str(tmp / f"{tag}.jsonl"),
        clusters=str(tmp / f"{tag}.clusters"),
        pairs=str(tmp / f"{tag}.pairs"),
        summary_json=str(tmp / f"{tag}.json"),
    )
    read = ReadOptions(batch_size=int(kw.pop("batch_size", 5000)))  # type: ignore[call-overload]
    result = dedup_paragraphs(str(src), DedupParams(threshold=0.8), out, UnitOptions(), read, **kw)  # type: ignore[arg-type]
    return result.summary


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("para")
    docs = paragraph_corpus(400, seed=3)
    _write_jsonl(tmp / "in.jsonl", docs)
    return tmp, docs


@pytest.fixture(scope="module")
def first_run(corpus: tuple[Path, list[str]]) -> dict[str, object]:
    tmp, _ = corpus
    return _run(tmp, tmp / "in.jsonl", "one", jobs=1)


def _removed_units(tmp: Path, tag: str) -> set[tuple[str, int]]:
    rows = [json.loads(x) for x in (tmp / f"{tag}.clusters").read_text().splitlines()]
    return {(r["id"], r["paragraph"]) for r in rows if not r["kept"]}


def test_every_removed_paragraph_has_an_earlier_kept_one_at_the_threshold(
    corpus: tuple[Path, list[str]], first_run: dict[str, object]
) -> None:
    tmp, docs = corpus
    truth = unit_truth(docs, 0.8)
    index = {(f"d{d}", p): i for i, (d, p) in enumerate(zip(truth.doc, truth.part, strict=True))}
    removed = _removed_units(tmp, "one")
    assert removed and len(removed) == first_run["paragraphs_removed"]
    engine = first_run["engine"]
    assert first_run["removed_near"] and engine["exact_checks"]  # type: ignore[index]
    kept = np.ones(len(truth.doc), dtype=bool)
    kept[[index[u] for u in removed]] = False
    assert len(unjustified_removals(kept, truth.a, truth.b)) == 0
    # ... and earlier: the pair that justifies it has the kept unit first
    justified = {int(b) for a, b in zip(truth.a, truth.b, strict=True) if kept[a] and not kept[b]}
    assert justified == {index[u] for u in removed}
    residual = residual_duplicates(kept, truth.a, truth.b)
    print(f"residual copies: {len(residual[0])} of {len(truth.doc)} paragraphs")
    assert len(residual[0]) <= 0.01 * len(truth.doc)


def test_short_paragraphs_are_never_removed_and_documents_keep_their_separators(
    corpus: tuple[Path, list[str]], first_run: dict[str, object]
) -> None:
    tmp, docs = corpus
    removed = _removed_units(tmp, "one")
    out = {r["id"]: r for r in map(json.loads, (tmp / "one.jsonl").read_text().splitlines())}
    dropped = rewritten = 0
    for i, text in enumerate(docs):
        units = split_reference(text)
        flags = [(f"d{i}", p) in removed for p in range(len(units))]
        assert not any(f and k < 5 for f, (_, _, k) in zip(flags, units, strict=True))
        if units and all(flags):
            assert f"d{i}" not in out
            dropped += 1
            continue
        assert out[f"d{i}"]["text"] == _rewrite_reference(text, flags)
        assert out[f"d{i}"]["n"] == i  # the other fields are kept
        rewritten += any(flags)
    assert dropped and first_run["documents_dropped"] == dropped
    assert first_run["documents_rewritten"] == rewritten
    assert first_run["written"] == len(docs) - dropped


def test_the_outputs_are_the_same_for_any_jobs_batch_size_and_memory_limit(
    corpus: tuple[Path, list[str]], first_run: dict[str, object]
) -> None:
    tmp, _ = corpus
    _run(tmp, tmp / "in.jsonl", "two", jobs=2, batch_size=37)
    _run(tmp, tmp / "in.jsonl", "spilled", jobs=2, batch_size=100, memory_limit=0)
    for tag in ("two", "spilled"):
        for ext in ("jsonl", "clusters", "pairs"):
            assert (tmp / f"one.{ext}").read_bytes() == (tmp / f"{tag}.{ext}").read_bytes()


def test_the_command_line_removes_lines_and_writes_parquet_and_text_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "Jane Roe, Head of Widgets, Example Corporation Limited"
    sig = f"-- \n{name}"
    docs = [
        f"First message about apples and their many uses.\n\n{sig}\n",
        f"A second message, about pears this time, nothing else.\n\n{sig}",
        sig,
        name,
        "ok",
    ]
    _write_jsonl(tmp_path / "in.jsonl", docs)
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--unit", "line", "-o", str(tmp_path / "o.jsonl"),
                 "--min-paragraph-tokens", "4", "--pairs", str(tmp_path / "p.jsonl")]) == 0  # fmt: skip
    summary = capsys.readouterr().err
    assert re.search(r"documents dropped +1\n", summary)
    out = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    # "-- " is short: left alone, so only the document of the name alone is left empty
    assert [r["text"] for r in out] == [docs[0], docs[1].removesuffix("\n" + name), "-- ", "ok"]
    pairs = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert {(p["id_b"], p["paragraph_b"]) for p in pairs} == {("d1", 2), ("d2", 1), ("d3", 0)}

    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(
        pa.table({"id": ["a", "b"], "text": docs[:2], "n": [1, 2]}), tmp_path / "in.parquet"
    )
    assert main(["dedup", str(tmp_path / "in.parquet"), "--unit", "paragraph", "-q",
                 "-o", str(tmp_path / "o.parquet")]) == 0  # fmt: skip
    table = pq.read_table(tmp_path / "o.parquet").to_pylist()
    assert table == [
        {"id": "a", "text": docs[0], "n": 1},
        {"id": "b", "text": docs[1].split("\n\n")[0], "n": 2},
    ]

    folder = tmp_path / "texts"
    folder.mkdir()
    for i, text in enumerate(docs[:3]):
        (folder / f"{i}.txt").write_text(text)
    assert (
        main(["dedup", str(folder), "--unit", "paragraph", "-q", "-o", str(tmp_path / "kept")]) == 0
    )
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["0.txt", "1.txt"]
    assert (tmp_path / "kept" / "1.txt").read_text() == docs[1].split("\n\n")[0]


@pytest.mark.parametrize(
    "extra",
    [["--dask", "local:1"], ["--index", "x.db"], ["--work-dir", "w"]],
)
def test_options_a_paragraph_run_cannot_honour_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    _write_jsonl(tmp_path / "in.jsonl", ["some text"])
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--unit", "paragraph", *extra]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and extra[0] in err


@pytest.mark.parametrize("name", ["in.csv", "in.tsv"])
def test_csv_input_is_told_to_write_its_rows_as_jsonl_or_parquet_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (tmp_path / name).write_text(
        "id,text\na,some text\n".replace(",", "\t" if "tsv" in name else ",")
    )
    assert (
        main(["dedup", str(tmp_path / name), "--unit", "paragraph", "-o", str(tmp_path / "x.csv")])
        == 1
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "-o NAME.jsonl or -o NAME.parquet" in err, err
    assert "pages" not in err


def test_min_paragraph_tokens_needs_a_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_jsonl(tmp_path / "in.jsonl", ["some text"])
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--min-paragraph-tokens", "3"]) == 1
    assert "--unit" in capsys.readouterr().err


def test_the_report_of_a_paragraph_run_shows_the_paragraphs(
    corpus: tuple[Path, list[str]], first_run: dict[str, object], tmp_path: Path
) -> None:
    tmp, docs = corpus
    page = tmp_path / "report.html"
    assert main(["report", str(tmp / "in.jsonl"), "--clusters", str(tmp / "one.clusters"),
                 "-o", str(page)]) == 0  # fmt: skip
    html = page.read_text()
    data = json.loads(
        re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S)[1]
    )  # type: ignore[index]
    assert "paragraphs removed" in html and data["docs"]
    for name, text, _ in data["docs"]:
        doc, part = name.rsplit(" \u00b6", 1)
        a, b, _ = split_reference(docs[int(doc[1:])])[int(part)]
        assert text == docs[int(doc[1:])][a:b][:3000]


def test_standard_input_is_rewritten_through_the_console_entry_point(tmp_path: Path) -> None:
    sig = "-- \nJane Roe, Head of Widgets, Example Corporation Limited"
    lines = [
        json.dumps({"id": "a", "text": f"First message about apples and their uses.\n\n{sig}"}),
        json.dumps({"id": "b", "text": f"Second message about pears, nothing else.\n \n{sig}\n"}),
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")}
    proc = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "dedup", "-", "--unit", "paragraph", "-o", "-", "-q"],
        input="\n".join(lines).encode(),
        capture_output=True,
        env=env,
        check=True,
    )
    out = [json.loads(x) for x in proc.stdout.decode().splitlines()]
    assert out == [
        json.loads(lines[0]),
        {"id": "b", "text": "Second message about pears, nothing else.\n"},
    ]


def test_keep_field_keeps_the_paragraph_of_the_preferred_document(tmp_path: Path) -> None:
    shared = "Shared paragraph of boilerplate words that repeats in both documents"
    records = [
        {"id": "old", "date": 1, "text": f"The first document, unique text.\n\n{shared}"},
        {"id": "new", "date": 5, "text": f"The second document, also unique.\n\n{shared}"},
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--unit", "paragraph", "-q",
                 "--keep-field", "date", "-o", str(out)]) == 0  # fmt: skip
    texts = [json.loads(x)["text"] for x in out.read_text().splitlines()]
    assert texts == ["The first document, unique text.", records[1]["text"]]


def test_a_byte_order_mark_is_copied_into_no_record_kept_or_rewritten(tmp_path: Path) -> None:
    shared = "Shared paragraph of boilerplate words that repeats in both documents"
    records = [
        {"id": "a", "text": f"The first document, unique text.\n\n{shared}"},
        {"id": "b", "text": f"The second document, also unique.\n\n{shared}"},
    ]
    bom = b"\xef\xbb\xbf"
    lines = [bom + json.dumps(r).encode() + b"\n" for r in records]  # each line opens with one
    (tmp_path / "in.jsonl").write_bytes(b"".join(lines))
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--unit", "paragraph", "-q",
                 "-o", str(out)]) == 0  # fmt: skip
    kept = out.read_bytes().splitlines(keepends=True)
    assert kept[0] == lines[0].removeprefix(bom)  # unchanged: copied, without the mark
    assert json.loads(kept[1].decode()) == {"id": "b", "text": "The second document, also unique."}


@pytest.mark.parametrize("unit", ["paragraph", "line"])
def test_windows_line_endings_leave_no_stray_carriage_return(tmp_path: Path, unit: str) -> None:
    shared = "Shared paragraph of boilerplate words that repeats in both documents"
    intro = "intro line here with words enough to count"
    docs = [f"The first document, unique text.\r\n\r\n{shared}", f"{intro}\r\n\r\n{shared}"]
    _write_jsonl(tmp_path / "in.jsonl", docs)
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--unit", unit, "-q", "-o", str(out)]) == 0
    assert [json.loads(x)["text"] for x in out.read_text().splitlines()] == [docs[0], intro]


def test_a_rewritten_record_keeps_every_other_byte_and_writes_only_json(tmp_path: Path) -> None:
    shared = "Shared paragraph of boilerplate words that repeats in both documents"
    first = json.dumps({"id": "a", "text": f"The first document, unique text.\n\n{shared}"})
    head = '{ "id":"b", "score" : 1e400, "low":-1E400, "n":1.50, "big":123456789012345678901234,'
    tail = ' "meta": {"text": "not this one"}, "caf\\u00e9": "\\u00e9" }'
    second = f'{head} "text":"The second document, also unique.\\n\\n{shared}",{tail}'
    (tmp_path / "in.jsonl").write_text(f"{first}\n{second}\n")
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(tmp_path / "in.jsonl"), "--unit", "paragraph", "-q",
                 "-o", str(out)]) == 0  # fmt: skip
    kept = out.read_text().splitlines()
    assert kept[1] == f'{head} "text":"The second document, also unique.",{tail}'

    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    for line in kept:  # 1e400 stays 1e400: never Infinity, which is not JSON
        json.loads(line, parse_constant=refuse)


#: Each wrong argument of dedup_paragraphs and the start of the ParamError it gets, as
#: dedup_source refuses them (None is no default for params or outputs there either).
WRONG_JOB_ARGUMENTS: dict[str, tuple[object, str]] = {
    "inputs": (None, "inputs must be a path, '-' or a list of paths, got None"),
    "params": (None, "params must be a DedupParams, got NoneType"),
    "outputs": (None, "outputs must be a DedupOutputs, got NoneType"),
    "units": ("line", "units must be a UnitOptions, got str; pass UnitOptions(unit='line'"),
    "read": ({}, "read must be a ReadOptions, got dict"),
}


@pytest.mark.parametrize("wrong", list(WRONG_JOB_ARGUMENTS))
def test_dedup_paragraphs_names_a_wrong_argument_before_reading_any_input(
    tmp_path: Path, wrong: str
) -> None:
    # AttributeError or TypeError from inside; a file that does not exist shows nothing was read
    value, said = WRONG_JOB_ARGUMENTS[wrong]
    args: dict[str, object] = {
        "inputs": str(tmp_path / "missing.jsonl"),
        "params": DedupParams(),
        "outputs": DedupOutputs(),
    }
    with pytest.raises(ParamError, match=f"^{re.escape(said)}"):
        dedup_paragraphs(**{**args, wrong: value})  # type: ignore[arg-type]
