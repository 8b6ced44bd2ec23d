"""What a run says (issue 29): the summary names what it counts, advises where a setting fits
better, and the summary JSON is JSON all the way down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup.cli import main
from neardup.testing.synth import near_duplicate_corpus, random_documents


def _corpus(path: Path, words: tuple[int, int], n: int = 60) -> Path:
    base = random_documents(n // 2, seed=2, words=words)
    texts = near_duplicate_corpus(base, n, 0.5, seed=3).texts
    path.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    return path


def test_the_summary_tells_exact_from_near_duplicates_and_counts_clusters_of_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _corpus(tmp_path / "in.jsonl", (40, 80))
    summary = tmp_path / "s.json"
    assert (
        main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--summary-json", str(summary)])
        == 0
    )
    err = capsys.readouterr().err
    s = json.loads(summary.read_text())
    assert f"near duplicates      {s['removed'] - s['exact_duplicates']:>12,}" in err
    assert "clusters (2+ docs)" in err and "near-dup clusters" not in err
    assert isinstance(s["params"], dict) and s["params"]["threshold"] == 0.8
    assert s["params_fingerprint"].startswith("DedupParams{")


def test_short_texts_on_word_shingles_get_a_hint_for_character_shingles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _corpus(tmp_path / "titles.jsonl", (3, 8))
    out = str(tmp_path / "k.jsonl")
    assert main(["dedup", str(src), "-o", out]) == 0
    assert "--tokens char -w 5" in capsys.readouterr().err
    assert main(["dedup", str(src), "-o", out, "--tokens", "char", "-w", "5"]) == 0
    assert "hint" not in capsys.readouterr().err
    long = _corpus(tmp_path / "long.jsonl", (60, 90))
    assert main(["dedup", str(long), "-o", out]) == 0
    assert "hint" not in capsys.readouterr().err


def test_help_shows_the_clusters_schema_of_today(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["dedup", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert '{"id","cluster","kept","duplicate_of","score"}' in out


def test_skipped_counts_are_written_with_thousands_separators_as_the_summary_s_others() -> None:
    from neardup.io import skipped_line

    report = {"total": 12345, "counts": {"bad_json": 12000, "missing_text": 345}, "examples": ["x"]}
    assert skipped_line(report) == (
        "skipped 12,345 problems (bad_json 12,000, missing_text 345); first: x"
    )


def test_one_skipped_problem_is_said_as_one_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from neardup.cli.summary import dedup_index_summary
    from neardup.io import ErrorReport

    src = _corpus(tmp_path / "in.jsonl", (20, 40), n=10)
    src.write_text(src.read_text() + "not json\n")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--on-error", "skip"]) == 0
    assert "skipped 1 problem (bad_json 1); first: " in capsys.readouterr().err
    counts = dict.fromkeys(("documents", "duplicates_of_index", "duplicates_in_input", "kept"), 0)
    report = ErrorReport()
    for n in (1, 2):
        report.add("bad_json", f"line {n}: not JSON")
        said = f"skipped {n} {'problem' if n == 1 else 'problems'} (bad_json {n}); first: line 1"
        assert report.summary().startswith(said)
        printed = dedup_index_summary(counts | {"problems": report.as_dict()}, False)
        assert printed.splitlines()[1].startswith(said)
