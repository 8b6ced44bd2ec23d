"""A newcomer's first hour with the command: what the first run says while it compiles, progress
through every stage, an honest throughput, runs that would do nothing refused, and flags that
say what they mean (typos answered with the command's own usage)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from neardup.cli import main


def _corpus(path: Path, n: int = 60) -> Path:
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
    ]
    with path.open("w") as fh:
        for i in range(n):
            text = " ".join(words[(i * 7 + j) % len(words)] + str(j % 9) for j in range(60))
            fh.write(json.dumps({"id": f"d{i}", "text": text, "url": f"u{i}"}) + "\n")
    return path


# -- item 4: the first run, progress and throughput ---------------------------------------------


def test_kernels_without_cache_files_are_reported_as_uncompiled(tmp_path: Path) -> None:
    """An empty Numba cache (a first run): every kernel module asked about is uncompiled; once
    a run has filled the cache, the modules it compiled are not."""
    probe = (
        "from neardup._kernels import _jit; import json; "
        "print(json.dumps(_jit.uncached(['shingles', 'minhash', 'jsonl'])))"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NEARDUP_KERNELS": "numba"}
    cold = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert json.loads(cold.stdout) == ["shingles", "minhash", "jsonl"]

    src = _corpus(tmp_path / "in.jsonl")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "-q"]) == 0
    from neardup._kernels import _jit

    assert _jit.uncached(["shingles", "minhash"]) == []


def test_first_run_says_it_compiles_once_unless_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup._kernels import _jit

    src = _corpus(tmp_path / "in.jsonl")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k0.jsonl"), "-q"]) == 0
    assert main(["dedup", str(src), "-o", str(tmp_path / "k1.jsonl")]) == 0  # cached now
    assert "compiling" not in capsys.readouterr().err

    monkeypatch.setattr(
        _jit, "uncached", lambda modules, names=None: [m for m in modules if m != "buffers"]
    )
    assert main(["dedup", str(src), "-o", str(tmp_path / "k2.jsonl")]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert re.fullmatch(r"neardup: compiling kernels once \(about \d+ s; .*\) \.\.\.", first)
    assert main(["dedup", str(src), "-o", str(tmp_path / "k3.jsonl"), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_progress_names_every_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _corpus(tmp_path / "in.jsonl")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--progress"]) == 0
    err = capsys.readouterr().err
    stages = ["reading and signing", "candidates and verification", "writing"]
    assert all(stage in err for stage in stages)
    assert [err.index(stage) for stage in stages] == sorted(err.index(s) for s in stages)


@pytest.mark.parametrize(("n", "said"), [(1, "reading 1 text again"), (2, "reading 2 texts again")])
def test_the_verifying_stage_counts_texts_in_the_singular_and_plural(n: int, said: str) -> None:
    import numpy as np

    from neardup.run import ReadOptions, _texts_again

    class Bar:
        def __init__(self) -> None:
            self.stages: list[str] = []

        def stage(self, name: str) -> None:
            self.stages.append(name)

    class Source:
        def texts_at(self, docs: object, hint: object, jobs: int) -> list[str]:
            return ["t"] * n

    bar = Bar()
    fetch = _texts_again(Source(), ReadOptions(), 1, bar)  # type: ignore[arg-type]
    assert fetch(np.arange(n)) == ["t"] * n
    assert bar.stages[0] == f"verifying: {said}"


def test_summary_throughput_is_input_megabytes_over_wall_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _corpus(tmp_path / "in.jsonl", 200)
    summary = tmp_path / "s.json"
    args = ["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--summary-json", str(summary)]
    assert main(args) == 0
    line = next(x for x in capsys.readouterr().err.splitlines() if "throughput" in x)
    found = re.search(r"throughput +([\d.,]+) MB/s \(([\d.]+) MB of input in ([\d.]+) s\)", line)
    assert found, line
    rate, mb, seconds = (float(x.replace(",", "")) for x in found.groups())
    assert rate > 0  # never "0.0 MB/s" for a small input
    assert mb == pytest.approx(src.stat().st_size / 1e6, rel=0.1)
    wall = json.loads(summary.read_text())["seconds"]
    assert seconds == pytest.approx(wall, abs=0.01)
    # against the unrounded wall time (a run of 0.05 s printed with two decimals is 10% off);
    # the rate itself is printed to two significant digits, within 5%
    assert rate == pytest.approx(src.stat().st_size / 1e6 / wall, rel=0.06)


# -- item 6: runs that would do nothing ----------------------------------------------------------


def test_dedup_without_an_output_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dedup", str(tmp_path / "not-read.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "would write nothing" in err and "-o KEPT" in err and "--summary-json" in err
    assert "not-read" not in err  # refused before the input is looked at


def test_all_pairs_without_pairs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _corpus(tmp_path / "in.jsonl")
    out = tmp_path / "k.jsonl"
    assert main(["dedup", str(src), "-o", str(out), "--all-pairs"]) == 1
    err = capsys.readouterr().err
    assert "--all-pairs" in err and "--pairs FILE" in err
    assert not out.exists()


def test_wrong_text_field_names_the_fields_the_record_has_without_skip_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _corpus(tmp_path / "in.jsonl")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--text-field", "txt"]) == 1
    err = capsys.readouterr().err
    assert "field 'txt' is missing (the record has: id, text, url)" in err
    assert "--text-field" in err and "--on-error" not in err


def test_missing_input_file_gets_no_skip_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dedup", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "k.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "file not found" in err and "--on-error" not in err


def test_bad_json_still_offers_skipping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _corpus(tmp_path / "in.jsonl")
    src.write_text(src.read_text() + "{not json\n")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl")]) == 1
    assert "--on-error skip" in capsys.readouterr().err


def test_skipping_every_record_is_an_error_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _corpus(tmp_path / "in.jsonl")
    out = tmp_path / "k.jsonl"
    args = ["dedup", str(src), "-o", str(out), "--text-field", "txt", "--on-error", "skip"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "every record of the input was skipped" in err and "missing_text 60" in err
    assert "--text-field" in err
    assert not out.exists()


def test_skipping_some_records_still_succeeds(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "in.jsonl")
    src.write_text(src.read_text() + "{not json\n")
    out = tmp_path / "k.jsonl"
    assert main(["dedup", str(src), "-o", str(out), "--on-error", "skip", "-q"]) == 0
    assert len(out.read_text().splitlines()) >= 1


# -- item 8: flags -------------------------------------------------------------------------------


def test_mistyped_option_shows_the_commands_usage_and_the_closest_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["dedup", "in.jsonl", "--treshold", "0.8"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: neardup dedup ")
    assert "did you mean --threshold?" in err
    with pytest.raises(SystemExit):
        main(["index", "add", "x.db", "in.jsonl", "--txt-field", "a"])
    err = capsys.readouterr().err
    assert err.startswith("usage: neardup index add ") and "did you mean --text-field?" in err


@pytest.mark.parametrize(
    ("old", "new", "extra"),
    [
        (["--q", "3"], ["--qgram", "3"], ["--method", "simhash"]),
        (["--num-perm", "128"], ["--max-perm", "128"], []),
    ],
)
def test_renamed_options_still_work_for_a_release_with_a_note(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    old: list[str],
    new: list[str],
    extra: list[str],
) -> None:
    src = _corpus(tmp_path / "in.jsonl")
    outputs = []
    for i, flag in enumerate((new, old)):
        out = tmp_path / f"s{i}.json"
        assert main(["dedup", str(src), "--summary-json", str(out), *flag, *extra, "-q"]) == 0
        outputs.append(json.loads(out.read_text())["params"])
    assert outputs[0] == outputs[1]
    err = capsys.readouterr().err
    assert f"{old[0]} is now {new[0]}" in err and err.count("note") == 1


def test_help_shows_the_new_names_and_explains_features(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["dedup", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--max-perm" in text and "--qgram" in text
    assert "--num-perm" not in text and "--q " not in text
    assert "rows per band" in text and "share at least R" in text


def test_a_first_run_parses_small_jsonl_in_python_instead_of_compiling_the_parser(
    tmp_path: Path,
) -> None:
    """With nothing in Numba's cache, a small JSONL input is read by the Python parser (the
    same records) and the JSONL kernel, half of a first run's compiling, is never compiled."""
    src = _corpus(tmp_path / "in.jsonl")
    probe = (
        "import json, sys\n"
        "from neardup.io import open_source\n"
        "from neardup._kernels import jsonl as k\n"
        "with open_source(sys.argv[1]) as s:\n"
        "    texts = [t for b in s.batches(7) for t in b.texts]\n"
        "print(json.dumps({'texts': texts, 'compiled': len(k.parse_lines.overloads)}))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "NEARDUP_KERNELS": "numba"}
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(src)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    got = json.loads(proc.stdout)
    assert got["compiled"] == 0
    assert got["texts"] == [json.loads(x)["text"] for x in src.read_text().splitlines()]


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_missing_text_column_names_the_columns_without_skip_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pa.table({"id": ["a", "b"], "text": ["x y z", "x y w"], "url": ["u", "v"]})
    src = tmp_path / f"in.{suffix}"
    if suffix == "csv":
        pacsv.write_csv(table, src)
    else:
        pq.write_table(table, src)
    assert (
        main(["dedup", str(src), "-o", str(tmp_path / f"k.{suffix}"), "--text-field", "txt"]) == 1
    )
    err = capsys.readouterr().err
    assert "there is no column 'txt' (columns: id, text, url)" in err and "--on-error" not in err
