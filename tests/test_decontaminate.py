"""Benchmark decontamination: exact pairs against brute force on a planted corpus, the spans of
the planted text, and the command as a user runs it (outputs, refusals, determinism, docs)."""

from __future__ import annotations

import itertools
import json
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from neardup import DecontaminateParams, Decontaminator, DedupParams, ShingleParams
from neardup.cli import main
from neardup.errors import ParamError
from neardup.testing.synth import random_documents
from neardup.text import canonical_tokens

ROOT = Path(__file__).resolve().parent.parent
C = 0.5
SEPARATORS = [" ", "  ", "\n", ", ", ". ", " - ", "; ", "\n\n", "! "]


def _disguise(words: list[str], rng: random.Random) -> str:
    """The words re-wrapped, re-cased and re-punctuated: the same canonical tokens."""
    styles = [str.lower, str.upper, str.title, str]
    out = []
    for word in words:
        out.append(rng.choice(styles)(word) if word.isascii() else word)
        out.append(rng.choice(SEPARATORS))
    return "".join(out[:-1])


def planted_corpus(seed: int = 3) -> tuple[list[str], list[str], list[tuple[int, int, int, int]]]:
    """(benchmark, training texts, planted (doc, item, start, end)): items of one source put
    whole or in part (60-100% of their words, contiguous) into documents of another, disguised;
    natural overlaps come from items made of halves of two others and from documents of the
    benchmark's own source (ten of them items themselves)."""
    rng = random.Random(seed)
    source = random_documents(50, seed=11, words=(40, 90))
    halves = [re.findall(r"\w+", t) for t in source[:11]]
    mixed = [" ".join(a[: len(a) // 2] + b[len(b) // 2 :]) for a, b in itertools.pairwise(halves)]
    bench = source + mixed  # the mixed items share about half of two others
    natural = source[40:] + random_documents(200, seed=11, words=(40, 400))[140:]
    docs = random_documents(240, seed=12, words=(30, 400)) + natural
    planted = []
    for d in range(0, len(docs), 3):
        item = rng.randrange(len(bench))
        words = re.findall(r"\w+", bench[item])
        keep = len(words) if d % 2 else max(1, int(len(words) * rng.uniform(0.6, 1.0)))
        first = rng.randrange(len(words) - keep + 1)
        part = _disguise(words[first : first + keep], rng)
        assert canonical_tokens(part) == canonical_tokens(" ".join(words[first : first + keep]))
        text = docs[d]
        cuts = [m.start() for m in re.finditer(r"\s", text)] or [len(text)]
        at = rng.choice(cuts)
        docs[d] = text[:at] + " " + part + " " + text[at:]
        planted.append((d, item, at + 1, at + 1 + len(part)))
    return bench, docs, planted


def _shingle_set(text: str, w: int = 5) -> set[tuple[str, ...]]:
    tokens = canonical_tokens(text)
    if 0 < len(tokens) < w:
        return {tuple(tokens)}
    return {tuple(tokens[i : i + w]) for i in range(len(tokens) - w + 1)}


def brute_force(bench: list[str], docs: list[str], c: float) -> dict[tuple[int, int], float]:
    """Containment of every item in every document from the canonical token strings."""
    items = [_shingle_set(b) for b in bench]
    truth = {}
    for d, doc in enumerate(docs):
        held = _shingle_set(doc)
        for b, s in enumerate(items):
            if s and len(s & held) / len(s) >= c:
                truth[(d, b)] = len(s & held) / len(s)
    return truth


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], list[str], list[tuple[int, int, int, int]]]:
    return planted_corpus()


def test_pairs_equal_brute_force_containment(
    corpus: tuple[list[str], list[str], list[tuple[int, int, int, int]]],
) -> None:
    bench, docs, planted = corpus
    found = Decontaminator(bench, DecontaminateParams(C)).contains(docs)
    got = {(d, m.item): m.containment for d, row in enumerate(found) for m in row}
    truth = brute_force(bench, docs, C)
    assert {(d, b) for d, b, _, _ in planted} <= truth.keys()  # every planted copy counts
    assert len(truth) > len(planted)  # natural overlaps too
    precision = len(got.keys() & truth.keys()) / len(got)
    recall = len(got.keys() & truth.keys()) / len(truth)
    assert precision == recall == 1.0
    assert got == pytest.approx(truth)


def test_spans_cover_the_planted_text(
    corpus: tuple[list[str], list[str], list[tuple[int, int, int, int]]],
) -> None:
    bench, docs, planted = corpus
    found = Decontaminator(bench, DecontaminateParams(C)).contains(docs)
    for d, item, start, end in planted:
        spans = next(m.spans for m in found[d] if m.item == item)
        for token in re.finditer(r"\w+", docs[d][start:end]):
            lo, hi = start + token.start(), start + token.end()
            assert any(s <= lo and hi <= e for s, e in spans), (d, item, lo, hi, spans)
        for s, e in spans:  # each span starts and ends on a token
            assert re.fullmatch(r"\w.*\w|\w", docs[d][s:e], re.S)


def test_lower_containment_finds_a_superset(
    corpus: tuple[list[str], list[str], list[tuple[int, int, int, int]]],
) -> None:
    bench, docs, _ = corpus
    at = {
        c: {
            (d, m.item)
            for d, row in enumerate(Decontaminator(bench, p).contains(docs))
            for m in row
        }
        for c, p in ((0.3, DecontaminateParams(0.3)), (0.8, DecontaminateParams(0.8)))
    }
    assert at[0.8] < at[0.3]
    assert at[0.3] == brute_force(bench, docs, 0.3).keys()


def test_batches_change_nothing(
    corpus: tuple[list[str], list[str], list[tuple[int, int, int, int]]],
) -> None:
    bench, docs, _ = corpus
    finder = Decontaminator(bench, DecontaminateParams(C, ShingleParams(w=4)))
    whole = finder.contains(docs)
    parts = [m for i in range(0, len(docs), 7) for m in finder.contains(docs[i : i + 7])]
    assert parts == whole


# -- the command ---------------------------------------------------------------------------


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


@pytest.fixture
def files(
    tmp_path: Path, corpus: tuple[list[str], list[str], list[tuple[int, int, int, int]]]
) -> tuple[Path, Path, set[int]]:
    bench, docs, _ = corpus
    train, against = tmp_path / "train.jsonl", tmp_path / "bench.jsonl"
    _write(train, [{"id": f"doc{i}", "text": t, "meta": {"n": i}} for i, t in enumerate(docs)])
    _write(against, [{"id": f"q{i}", "question": t} for i, t in enumerate(bench)])
    dirty = {d for d, _ in brute_force(bench, docs, C)}
    return train, against, dirty


def test_command_writes_the_clean_records_and_the_matches(
    files: tuple[Path, Path, set[int]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, against, dirty = files
    clean, matches = tmp_path / "clean.jsonl", tmp_path / "matches.jsonl"
    args = ["decontaminate", str(train), "--against", str(against), "-o", str(clean)]
    code = main([*args, "--matches", str(matches), "--against-text-field", "question"])
    assert code == 0
    assert "contaminated" in capsys.readouterr().err
    lines = train.read_text().splitlines(keepends=True)
    assert clean.read_text() == "".join(x for i, x in enumerate(lines) if i not in dirty)
    texts = {f"doc{i}": json.loads(x)["text"] for i, x in enumerate(lines)}
    rows = [json.loads(x) for x in matches.read_text().splitlines()]
    assert {int(r["id"][3:]) for r in rows} == dirty
    for r in rows:
        assert list(r) == ["id", "benchmark_id", "containment", "spans"]
        assert r["benchmark_id"].startswith("q") and C <= r["containment"] <= 1.0
        assert r["spans"] and all(0 <= s < e <= len(texts[r["id"]]) for s, e in r["spans"])
    order = [(int(r["id"][3:]), int(r["benchmark_id"][1:])) for r in rows]
    assert order == sorted(order)  # input order, then benchmark order


def test_command_output_is_the_same_for_any_jobs_and_batch_size(
    files: tuple[Path, Path, set[int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train, against, _ = files
    outputs = set()
    runs = (("1", "5000", 0), ("2", "7", 0), ("2", "64", 0), ("1", "5000", 1), ("2", "64", 3))
    for run, (jobs, batch, max_pairs) in enumerate(runs):
        if max_pairs:  # a batch's matches made and written in pieces
            monkeypatch.setattr("neardup.decontaminate.MAX_PAIRS", max_pairs)
        clean, matches = tmp_path / f"c{run}.jsonl", tmp_path / f"m{run}.jsonl"
        code = main(
            ["decontaminate", str(train), "--against", str(against), "-o", str(clean), "-q",
             "--matches", str(matches), "--against-text-field", "question", "--jobs", jobs,
             "--batch-size", batch]
        )  # fmt: skip
        assert code == 0
        outputs.add((clean.read_bytes(), matches.read_bytes()))
    assert len(outputs) == 1


@pytest.mark.parametrize("role", ["-o", "--matches", "--summary-json"])
@pytest.mark.parametrize("victim", ["train", "bench"])
def test_command_refuses_an_output_that_is_an_input(
    files: tuple[Path, Path, set[int]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    role: str,
    victim: str,
) -> None:
    train, against, _ = files
    target = train if victim == "train" else against
    before = target.read_bytes()
    other = [] if role == "-o" else ["-o", str(tmp_path / "clean.jsonl")]
    code = main(["decontaminate", str(train), "--against", str(against), role, str(target), *other])
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "same file as the input" in err
    assert target.read_bytes() == before
    assert not (tmp_path / "clean.jsonl").exists()


def test_command_reports_bad_input_in_one_line(
    files: tuple[Path, Path, set[int]], tmp_path: Path
) -> None:
    train, against, _ = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": \n')
    for inputs, field in (([str(bad), "--against", str(against)], "question"), ([str(train), "--against", str(against)], "text")):  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "neardup.cli", "decontaminate", *inputs,
             "--against-text-field", field, "-o", str(tmp_path / "out.jsonl")],
            capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 1
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith("neardup: error: ")
        assert ("bad.jsonl line 2" if field == "question" else "bench.jsonl line 1") in proc.stderr
        assert not (tmp_path / "out.jsonl").exists()
        if field == "text":  # the benchmark's field is missing: its own option is named
            assert "--against-text-field" in proc.stderr, proc.stderr


def test_command_says_what_it_skipped_in_the_data_and_in_the_benchmark_apart(
    files: tuple[Path, Path, set[int]], tmp_path: Path
) -> None:
    train, against, _ = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text(train.read_text() + '{"id": "x", "text": \n')
    bench = tmp_path / "b.jsonl"
    bench.write_text(against.read_text() + '{"id": "q9"}\nnot json\n')
    summary = tmp_path / "s.json"
    proc = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "decontaminate", str(bad), "--against", str(bench),
         "--against-text-field", "question", "--on-error", "skip", "-o", str(tmp_path / "o.jsonl"),
         "--summary-json", str(summary)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert "  skipped records                 1" in lines
    assert "  skipped in benchmark            2" in lines
    assert any(x.startswith("skipped 1 problem (bad_json 1); first: ") for x in lines)
    said = [x for x in lines if x.startswith("benchmark: skipped 2 problems")]
    assert len(said) == 1 and "(bad_json 1, missing_text 1)" in said[0]
    assert "--against-text-field" in said[0]  # the benchmark's own option is named
    got = json.loads(summary.read_text())
    assert got["problems"]["counts"] == {"bad_json": 1}
    assert got["benchmark_problems"]["counts"] == {"bad_json": 1, "missing_text": 1}


def test_command_keeps_parquet_columns_and_text_files(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    bench = tmp_path / "bench.jsonl"
    _write(bench, [{"id": "q", "text": "alpha beta gamma delta epsilon zeta eta theta"}])
    texts = ["Alpha, BETA gamma delta -- epsilon zeta eta theta.", "something else entirely here"]
    table = pa.table({"text": texts, "id": ["x", "y"], "score": [0.5, 1.5]})
    pq.write_table(table, tmp_path / "train.parquet")
    out = tmp_path / "clean.parquet"
    args = [str(tmp_path / "train.parquet"), "--against", str(bench), "-o", str(out), "-q"]
    assert main(["decontaminate", *args]) == 0
    assert pq.read_table(out).to_pylist() == [{"text": texts[1], "id": "y", "score": 1.5}]
    folder = tmp_path / "pages"
    folder.mkdir()
    for i, text in enumerate(texts):
        (folder / f"{i}.txt").write_text(text)
    clean = tmp_path / "clean"
    assert (
        main(["decontaminate", str(folder), "--against", str(bench), "-o", str(clean), "-q"]) == 0
    )
    assert sorted(p.name for p in clean.iterdir()) == ["1.txt"]


def test_command_copies_no_byte_order_mark_into_the_clean_records(tmp_path: Path) -> None:
    bench = tmp_path / "bench.jsonl"
    _write(bench, [{"id": "q", "text": "alpha beta gamma delta epsilon zeta eta theta"}])
    lines = [json.dumps({"id": i, "text": f"clean text number {i} of several words"}) for i in "ab"]
    train = tmp_path / "b.jsonl"
    train.write_text("\ufeff" + "\n".join(lines) + "\n")  # the mark opens the file
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "z", "text": "one more clean text"}) + "\n")
    out = tmp_path / "clean.jsonl"
    args = [str(tmp_path / "a.jsonl"), str(train), "--against", str(bench), "-o", str(out), "-q"]
    assert main(["decontaminate", *args]) == 0
    assert out.read_text() == (tmp_path / "a.jsonl").read_text() + "\n".join(lines) + "\n"


@pytest.mark.parametrize("option", ["--against-text-field", "--against-id-field"])
def test_command_refuses_an_empty_benchmark_field(
    files: tuple[Path, Path, set[int]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
) -> None:
    train, against, _ = files
    out = tmp_path / "clean.jsonl"
    args = ["decontaminate", str(train), "--against", str(against), "-o", str(out), option, ""]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{option} must be a non-empty string" in err, err
    assert not out.exists()


def test_command_needs_an_output(files: tuple[Path, Path, set[int]]) -> None:
    train, against, _ = files
    assert main(["decontaminate", str(train), "--against", str(against)]) == 1


# -- the documentation -----------------------------------------------------------------------

DOC = (ROOT / "docs" / "DECONTAMINATE.md").read_text()


def test_doc_commands_run_when_pasted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    commands = [
        line
        for block in re.findall(r"```bash\n(.*?)```", DOC, re.S)
        for line in block.splitlines()
        if line.startswith("neardup ")
    ]
    assert commands
    for line in commands:
        args = shlex.split(line.split("#")[0])[1:]
        args = [str(ROOT / a) if a.startswith("examples/") else a for a in args]
        assert main(args) == 0, line
    matches = [json.loads(x) for x in (tmp_path / "matches.jsonl").read_text().splitlines()]
    assert {m["benchmark_id"] for m in matches} == {"quiz-1", "quiz-2"}


@pytest.mark.parametrize("block", re.findall(r"```python\n(.*?)```", DOC, re.S))
def test_doc_python_examples_run(
    block: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(block, "DECONTAMINATE.md", "exec"), {})
    assert capsys.readouterr().out


def test_params_of_another_kind_are_refused_as_a_parameter_error() -> None:
    # a TypeError from the check where Deduplicator and every other class raise ParamError
    for wrong in ("x", {"containment": 0.5}, DedupParams()):
        with pytest.raises(ParamError, match=r"params must be a DecontaminateParams, got \w+"):
            Decontaminator(["a b c d e f g"], params=wrong)  # type: ignore[arg-type]


def test_a_benchmark_whose_name_says_no_format_is_read_with_against_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the refusal told to use --format, which is the training data's: following it changed
    # nothing; and every benchmark refusal ended with a note on fields, whatever it was about
    train, bench = tmp_path / "train.jsonl", tmp_path / "bench.dat"
    text = "the quick brown fox jumps over the lazy dog"
    train.write_text(json.dumps({"id": "d1", "text": text}) + "\n")
    bench.write_text(json.dumps({"id": "q1", "text": text}) + "\n")
    matches = tmp_path / "m.jsonl"
    args = ["decontaminate", str(train), "--against", str(bench), "--matches", str(matches), "-q"]
    assert main([*args, "--format", "jsonl"]) == 1
    err = capsys.readouterr().err
    assert "cannot tell the format from the name; use --against-format jsonl|" in err
    assert "fields" not in err
    assert main([*args, "--against-format", "jsonl"]) == 0
    assert json.loads(matches.read_text())["benchmark_id"] == "q1"
    report = ["report", str(train), "--matches", str(matches), "--against", str(bench)]
    assert main([*report, "-o", str(tmp_path / "r.html"), "--against-format", "jsonl"]) == 0
    twice = ["decontaminate", str(train), "--against", str(bench), str(bench), "--matches"]
    assert main([*twice, str(matches), "--against-format", "jsonl"]) == 1
    err = capsys.readouterr().err
    assert "is given twice; give each input once\n" in err


#: Each wrong argument of decontaminate_source and the start of the ParamError it gets.
WRONG_JOB_ARGUMENTS: dict[str, tuple[object, str]] = {
    "params": (DedupParams(), "params must be a DecontaminateParams, got DedupParams"),
    "outputs": (None, "outputs must be a DecontaminateOutputs, got NoneType"),
    "against": (None, "against must be a path, '-' or a list of paths, got None"),
    "inputs": (3, "inputs must be a path, '-' or a list of paths, got 3"),
    "read": ("jsonl", "read must be a ReadOptions, got str"),
    "against_read": ({}, "against_read must be a ReadOptions, got dict"),
}


@pytest.mark.parametrize("wrong", list(WRONG_JOB_ARGUMENTS))
def test_decontaminate_source_names_a_wrong_argument_before_reading_any_input(
    tmp_path: Path, wrong: str
) -> None:
    # AttributeError or TypeError from inside; files that do not exist show nothing was read
    from neardup.decontaminate_run import DecontaminateOutputs, decontaminate_source

    value, said = WRONG_JOB_ARGUMENTS[wrong]
    args: dict[str, object] = {
        "inputs": str(tmp_path / "missing-train.jsonl"),
        "against": str(tmp_path / "missing-bench.jsonl"),
        "params": DecontaminateParams(),
        "outputs": DecontaminateOutputs(matches=str(tmp_path / "m.jsonl")),
    }
    with pytest.raises(ParamError, match=f"^{re.escape(said)}"):
        decontaminate_source(**{**args, wrong: value})  # type: ignore[arg-type]


def test_decontaminate_source_takes_params_none_as_the_defaults(tmp_path: Path) -> None:
    # as Decontaminator(texts, None) does; the whole job ran, then its summary failed
    from neardup.decontaminate_run import DecontaminateOutputs, decontaminate_source

    _write(tmp_path / "b.jsonl", [{"id": "q1", "text": "the quick brown fox jumps over the dog"}])
    _write(
        tmp_path / "t.jsonl",
        [{"id": "d1", "text": "Intro. The quick brown fox jumps over the dog!"}],
    )
    train, bench = str(tmp_path / "t.jsonl"), str(tmp_path / "b.jsonl")
    summary = decontaminate_source(train, bench, None, DecontaminateOutputs())
    assert summary["contaminated"] == 1
    assert summary["params"] == DecontaminateParams().fingerprint()
