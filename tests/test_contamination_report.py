"""The HTML page of a decontamination run: documents per benchmark item, matched spans
highlighted beside the item, a sample spread over the items, bad files named in one line."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from neardup.cli import main
from neardup.contamination_report import highlighted, read_matches, write_contamination_report
from neardup.errors import InputError
from neardup.testing.synth import random_documents

ITEMS = random_documents(3, seed=41, words=(25, 40))


def _run(tmp: Path) -> tuple[Path, Path, Path, list[str]]:
    """A benchmark of three items; item 0 in three training documents (disguised), item 1 in
    one, item 2 in none; the training texts hold markup that must stay text."""
    docs = random_documents(12, seed=42, words=(20, 60))
    docs[1] = f"<b>intro</b> {ITEMS[0].upper()} & outro"
    docs[4] = f"{ITEMS[0]}\n\nlater <script>alert(1)</script>"
    docs[7] = f"start. {ITEMS[0].replace(' ', '  ')}"
    docs[9] = f"{ITEMS[1]} then more words"
    train, bench = tmp / "train.jsonl", tmp / "bench.jsonl"
    train.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )
    bench.write_text(
        "".join(json.dumps({"id": f"q{i}", "q": t}) + "\n" for i, t in enumerate(ITEMS))
    )
    matches = tmp / "matches.jsonl"
    args = ["decontaminate", str(train), "--against", str(bench), "--against-text-field", "q"]
    assert main([*args, "--matches", str(matches), "-q"]) == 0
    return train, bench, matches, docs


def _report(tmp: Path, train: Path, bench: Path, matches: Path, *extra: str) -> str:
    out = tmp / "r.html"
    args = ["report", str(train), "--matches", str(matches), "--against", str(bench)]
    assert main([*args, "--against-text-field", "q", "-o", str(out), *extra]) == 0
    return out.read_text(encoding="utf-8")


def test_the_page_counts_documents_per_item_and_highlights_the_matched_text(
    tmp_path: Path,
) -> None:
    train, bench, matches, docs = _run(tmp_path)
    page = _report(tmp_path, train, bench, matches)
    rows = re.findall(r'<tr class="(\w+)"><td>(q\d)</td><td class="n">(\d+)</td>', page)
    assert rows == [("found", "q0", "3"), ("found", "q1", "1"), ("clean", "q2", "0")]
    sections = re.findall(r'<section class="match">.*?</section>', page, re.S)
    shown = [re.search(r"training <code>(d\d+)</code>", s).group(1) for s in sections]  # type: ignore[union-attr]
    assert shown == ["d1", "d9", "d4", "d7"]  # item 0's first match, item 1's, then item 0's rest
    for doc, section in zip(shown, sections, strict=True):
        marked = [html.unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", section, re.S)]
        spans = next(r.spans for r in read_matches(matches) if r.id == doc)
        assert marked == [docs[int(doc[1:])][s:e] for s, e in spans]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>" not in page
    assert "&lt;b&gt;intro&lt;/b&gt;" in page
    assert re.search(r"<th>contaminated documents</th><td>4</td>", page)
    assert re.search(r"<th>training documents</th><td>12</td>", page)


def test_the_sample_shows_every_item_found_before_any_twice(tmp_path: Path) -> None:
    train, bench, matches, _ = _run(tmp_path)
    page = _report(tmp_path, train, bench, matches, "--sample", "2")
    assert re.findall(r"benchmark <code>(q\d)</code>", page) == ["q0", "q1"]
    assert re.search(r"<th>matches shown</th><td>2</td>", page)


def test_highlighting_escapes_text_and_cuts_far_context() -> None:
    text = "x" * 500 + "<a & b>" + "y" * 500
    out = highlighted(text, [(500, 507)], 3000)
    assert out.startswith("…") and out.endswith("…")
    assert "<mark>&lt;a &amp; b&gt;</mark>" in out
    assert out.count("x") == 200 and out.count("y") == 200


def test_a_report_of_a_cluster_run_s_matches_folder_equals_the_file_s(tmp_path: Path) -> None:
    train, bench, matches, _ = _run(tmp_path)
    want = _report(tmp_path, train, bench, matches)
    folder = tmp_path / "matches"
    folder.mkdir()
    (folder / "part-00000.jsonl").write_bytes(matches.read_bytes())
    manifest = {"format": 1, "parts": [{"file": "part-00000.jsonl", "records": 4}], "summary": {}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert _report(tmp_path, train, bench, folder) == want


def test_files_that_do_not_fit_the_run_are_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, bench, matches, _ = _run(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(matches.read_text() + '{"id": "d1", "benchmark_id": "q0"}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl line 5: 'containment' is missing"):
        write_contamination_report(
            train, bad, str(bench), tmp_path / "r.html", against_text_field="q"
        )
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "z", "q": "another"}) + "\n")
    with pytest.raises(InputError, match=r"benchmark items of .* are not in the benchmark"):
        write_contamination_report(
            train, matches, str(other), tmp_path / "r.html", against_text_field="q"
        )
    base = ["report", str(train), "-o", str(tmp_path / "r.html")]
    for extra, message in (
        (["--matches", str(matches)], "needs --against"),
        (["--matches", str(matches), "--clusters", str(matches)], "give --clusters"),
        (["--clusters", str(matches), "--against", str(bench)], "go with --matches"),
        (["--clusters", str(matches), "--against-id-field", ""], "go with --matches"),
        (
            ["--matches", str(matches), "--against", str(bench), "--against-text-field", ""],
            "--against-text-field must be a non-empty string",
        ),
        (
            ["--matches", str(matches), "--against", str(bench), "--pairs", str(matches)],
            "go with --clusters",
        ),
    ):
        assert main([*base, *extra]) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("value", ["1e999", "-1e999", "NaN", "1.5", "-0.1"])
def test_a_containment_outside_zero_to_one_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    train, bench, matches, _ = _run(tmp_path)
    bad = tmp_path / "bad.jsonl"
    row = json.dumps({"id": "d1", "benchmark_id": "q0", "containment": 0.5, "spans": [[0, 3]]})
    row = row.replace("0.5", value) + "\n"
    bad.write_text(matches.read_text() + row)
    out = tmp_path / "r.html"
    args = ["report", str(train), "--matches", str(bad), "--against", str(bench), "-o", str(out)]
    assert main([*args, "--against-text-field", "q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.jsonl line 5: 'containment'" in err, err
    assert "from 0 to 1" in err
    assert not out.exists()


def test_one_document_missing_from_the_input_is_said_in_the_singular(tmp_path: Path) -> None:
    train, bench, matches, _ = _run(tmp_path)
    bad = tmp_path / "bad.jsonl"
    row = '{"id": "nope", "benchmark_id": "q0", "containment": 1.0, "spans": [[0, 3]]}\n'
    bad.write_text(matches.read_text() + row)
    with pytest.raises(InputError, match=r"^1 document of the matches file .* is not in the"):
        write_contamination_report(
            train, bad, str(bench), tmp_path / "r.html", against_text_field="q"
        )
    bad.write_text(matches.read_text() + row + row.replace("nope", "nada"))
    with pytest.raises(InputError, match=r"^2 documents of the matches file .* are not in the"):
        write_contamination_report(
            train, bad, str(bench), tmp_path / "r.html", against_text_field="q"
        )


def test_the_report_line_counts_in_the_singular_and_the_plural(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "1 matches of 1 benchmark items in 1 documents"
    train, bench, matches, _ = _run(tmp_path)
    one = tmp_path / "one.jsonl"
    one.write_text(next(x for x in matches.read_text().splitlines() if '"q1"' in x) + "\n")
    capsys.readouterr()
    _report(tmp_path, train, bench, one)
    assert "report: 1 match of 1 benchmark item in 1 document, 1 shown" in capsys.readouterr().err
    _report(tmp_path, train, bench, matches)
    assert "report: 4 matches of 2 benchmark items in 4 documents" in capsys.readouterr().err
