"""neardup report: shared passages equal a reference, clusters come largest first, and the page
renders in headless Chromium (DOM checked, screenshot taken), also with 100,000 clusters."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.errors import InputError
from neardup.params import ShingleParams
from neardup.report import (
    _script_json,
    _shingle_texts,
    read_clusters,
    shared_spans,
    write_report,
)
from neardup.testing.synth import edit, random_documents
from neardup.text import fold_char

from .strategies import tricky_text

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)"
)


def shared_reference(a: str, b: str, w: int) -> list[int]:
    """Words of a in a w-shingle that b also has, merged into passages, as UTF-16 (start, len)."""
    words_a = [
        (m.start(), m.end(), "".join(map(fold_char, m.group()))) for m in re.finditer(r"\w+", a)
    ]
    words_b = ["".join(map(fold_char, m)) for m in re.findall(r"\w+", b)]

    def shingles(tokens: list[str]) -> list[tuple[str, ...]]:
        if len(tokens) < w:
            return [tuple(tokens)] if tokens else []
        return [tuple(tokens[i : i + w]) for i in range(len(tokens) - w + 1)]

    theirs = set(shingles(words_b))
    tokens = [t for _, _, t in words_a]
    marked = [False] * len(tokens)
    for i, sh in enumerate(shingles(tokens)):
        if sh in theirs:
            for k in range(i, min(i + w, len(tokens))):
                marked[k] = True

    def u16(i: int) -> int:
        return len(a[:i].encode("utf-16-le", "surrogatepass")) // 2

    out: list[int] = []
    k = 0
    while k < len(tokens):
        if not marked[k]:
            k += 1
            continue
        first = k
        while k + 1 < len(tokens) and marked[k + 1]:
            k += 1
        start, end = u16(words_a[first][0]), u16(words_a[k][1])
        out += [start, end - start]
        k += 1
    return out


@settings(max_examples=200, deadline=None)
@given(a=tricky_text, b=tricky_text, w=st.integers(1, 4))
def test_shared_passages_equal_the_reference_on_unicode(a: str, b: str, w: int) -> None:
    sh = _shingle_texts([a, b], ShingleParams(w=w))
    assert shared_spans(sh, 0, 1, w) == shared_reference(a, b, w)
    assert shared_spans(sh, 1, 0, w) == shared_reference(b, a, w)


def _corpus(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """12 originals; doc 12 copies 0 exactly, 13-15 edit 1 lightly; a clusters file in the new
    shape: cluster 1 = {1, 13, 14, 15} (largest), cluster 0 = {0, 12}."""
    base = random_documents(12, seed=31, words=(80, 160))
    base[0] += " <!--<script>document.title = 'pwned'</script>--> & </script> <!--<script> end"
    texts = [*base, base[0], *(edit(base[1], 0.03, s, 0.0) for s in (1, 2, 3))]
    ids = [f"doc{i}" for i in range(len(texts))]
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in zip(ids, texts, strict=True))
    )
    rows = [
        {"id": "doc0", "cluster": 0, "kept": True, "duplicate_of": None, "score": None},
        {"id": "doc1", "cluster": 1, "kept": True, "duplicate_of": None, "score": None},
        {"id": "doc12", "cluster": 0, "kept": False, "duplicate_of": "doc0", "score": 1.0},
        {"id": "doc13", "cluster": 1, "kept": False, "duplicate_of": "doc1", "score": 0.81},
        {"id": "doc14", "cluster": 1, "kept": False, "duplicate_of": "doc13", "score": 0.9},
        {"id": "doc15", "cluster": 1, "kept": False, "duplicate_of": "doc1", "score": 0.85},
    ]
    clusters = tmp_path / "clusters.jsonl"
    clusters.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return src, clusters, texts


def _payload(html: str) -> dict:
    blob = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    assert blob is not None
    return json.loads(blob.group(1))


def test_report_pairs_each_removed_document_with_what_it_duplicates(tmp_path: Path) -> None:
    src, clusters, texts = _corpus(tmp_path)
    out = tmp_path / "r.html"
    stats = write_report(src, clusters, out)
    assert (stats.input_documents, stats.clusters, stats.removed, stats.pairs) == (16, 2, 4, 4)
    data = _payload(out.read_text(encoding="utf-8"))
    docs = [d[0] for d in data["docs"]]
    (label1, size1, kept1, pairs1), (label0, size0, _, pairs0) = data["clusters"]
    assert (label1, size1, label0, size0) == (1, 4, 0, 2)  # largest first
    assert [docs[k] for k in kept1] == ["doc1"]
    by_removed = {docs[p[0]]: (docs[p[1]], p[2]) for p in pairs1}
    assert by_removed == {"doc13": ("doc1", 0.81), "doc14": ("doc13", 0.9), "doc15": ("doc1", 0.85)}
    exact = pairs0[0]
    n = len(texts[0].encode("utf-16-le")) // 2
    spans = exact[3]
    assert spans[0] == 0 and sum(spans[1::2]) <= n and len(spans) == 2  # one passage: all of it
    assert all(p[3] and p[4] for p in pairs1)  # near copies share passages both ways


def test_shared_passages_are_cut_to_the_shown_text(tmp_path: Path) -> None:
    src, clusters, texts = _corpus(tmp_path)
    out = tmp_path / "r.html"
    write_report(src, clusters, out, max_chars=100)
    data = _payload(out.read_text(encoding="utf-8"))
    for label, _, _, pairs in data["clusters"]:
        for p in pairs:
            for doc, spans in ((p[0], p[3]), (p[1], p[4])):
                _, shown, more = data["docs"][doc]
                assert len(shown) == 100 and more == len(texts[int(data["docs"][doc][0][3:])]) - 100
                assert spans and all(
                    s + n <= len(shown) for s, n in zip(spans[::2], spans[1::2], strict=True)
                )
                assert (
                    spans[-2] + spans[-1] == len(shown) or label == 1
                )  # an exact copy: to the end


def test_clusters_file_without_scores_falls_back_to_the_kept_member(tmp_path: Path) -> None:
    src, clusters, _ = _corpus(tmp_path)
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(
            json.dumps({k: r[k] for k in ("id", "cluster", "kept")}) + "\n"
            for r in map(json.loads, clusters.read_text().splitlines())
        )
    )
    rows = read_clusters(old)
    assert all(r.duplicate_of is None and r.score is None for r in rows)
    out = tmp_path / "r.html"
    stats = write_report(src, old, out)
    assert stats.scores == 0
    data = _payload(out.read_text(encoding="utf-8"))
    docs = [d[0] for d in data["docs"]]
    assert {docs[p[1]] for p in data["clusters"][0][3]} == {"doc1"} and data["clusters"][0][3][0][
        2
    ] is None


def test_bad_clusters_line_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "c.jsonl"
    bad.write_text(
        '{"id": "a", "cluster": 0, "kept": true}\n{"id": "b", "cluster": "x", "kept": false}\n'
    )
    with pytest.raises(InputError, match=r"c.jsonl line 2: 'cluster'"):
        read_clusters(bad)


def test_ids_missing_from_the_input_are_an_error(tmp_path: Path) -> None:
    src, clusters, _ = _corpus(tmp_path)
    with clusters.open("a") as fh:
        fh.write(json.dumps({"id": "ghost", "cluster": 0, "kept": False}) + "\n")
    with pytest.raises(InputError, match="not in the input"):
        write_report(src, clusters, tmp_path / "r.html")


def _chromium(html: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--virtual-time-budget=10000",
        *extra,
        html.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


@needs_chromium
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    src, clusters, _ = _corpus(tmp_path)
    out = tmp_path / "report.html"
    assert main(["report", str(src), "--clusters", str(clusters), "-o", str(out)]) == 0
    dom = _chromium(out, tmp_path, "--dump-dom").stdout
    assert 'data-rendered="1"' in dom  # the script ran
    assert dom.count('<section class="cluster"') == 2
    assert dom.index('id="cluster-1"') < dom.index('id="cluster-0"')  # largest first
    assert dom.count("<mark>") >= 8 and "score 0.810" in dom and "page 1 of 1" in dom
    assert "pwned" not in dom.split("<body")[0]  # page text is shown, never run
    assert "&lt;!--&lt;script&gt;document.title = 'pwned'&lt;/script&gt;--&gt;" in dom
    assert 'src="data:image/png;base64,' in dom and "http" not in re.sub(
        r"https?://www\.w3\.org", "", dom
    )
    shot = tmp_path / "report.png"
    _chromium(out, tmp_path, f"--screenshot={shot}", "--window-size=1280,1600")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@needs_chromium
def test_report_of_100k_clusters_opens_on_its_first_page(tmp_path: Path) -> None:
    n = 100_000
    src = tmp_path / "in.jsonl"
    words = random_documents(50, seed=2, words=(30, 60))
    with src.open("w") as fh:
        for i in range(2 * n):
            fh.write(json.dumps({"id": f"d{i}", "text": words[(i // 2) % 50]}) + "\n")
    clusters = tmp_path / "clusters.jsonl"
    with clusters.open("w") as fh:
        for c in range(n):
            fh.write(
                f'{{"id": "d{2 * c}", "cluster": {2 * c}, "kept": true, "duplicate_of": null, "score": null}}\n'
            )
            fh.write(
                f'{{"id": "d{2 * c + 1}", "cluster": {2 * c}, "kept": false, "duplicate_of": "d{2 * c}", "score": 1.0}}\n'
            )
    out = tmp_path / "big.html"
    stats = write_report(src, clusters, out)
    assert stats.clusters == n and stats.clusters_with_text == 2000
    assert stats.bytes < 40_000_000
    dom = _chromium(out, tmp_path, "--dump-dom").stdout
    assert 'data-rendered="1"' in dom and "page 1 of 5,000" in dom.replace("5000", "5,000")
    assert dom.count('<section class="cluster"') == 20


def test_report_from_todays_dedup_clusters_and_pairs_files(tmp_path: Path) -> None:
    src, _, _ = _corpus(tmp_path)
    cl, pairs = tmp_path / "run-clusters.jsonl", tmp_path / "run-pairs.jsonl"
    run = ["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--clusters", str(cl)]
    assert main([*run, "--pairs", str(pairs), "--threshold", "0.5", "-q"]) == 0
    out = tmp_path / "r.html"
    report = ["report", str(src), "--clusters", str(cl), "--pairs", str(pairs), "-o", str(out)]
    assert main(report) == 0
    data = _payload(out.read_text(encoding="utf-8"))
    sizes = [c[1] for c in data["clusters"]]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == len(read_clusters(cl))
    docs = [d[0] for d in data["docs"]]
    accepted = {
        frozenset((r["id_a"], r["id_b"])): r["score"]
        for r in map(json.loads, pairs.read_text().splitlines())
    }
    shown = [p for c in data["clusters"] for p in c[3]]
    assert len(shown) == 4 and all(len(p) == 5 for p in shown)
    # each removed document sits beside a document it was paired with, with that pair's score
    assert all(accepted[frozenset((docs[p[0]], docs[p[1]]))] == p[2] for p in shown)


def test_a_named_pairs_or_summary_file_is_always_checked_before_the_input_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, clusters, _ = _corpus(tmp_path)  # its rows carry duplicate_of: pairs are not needed
    (tmp_path / "corrupt.jsonl").write_text("{not json\n")
    (tmp_path / "list.json").write_text("[1]\n")
    out = tmp_path / "r.html"
    base = ["report", str(tmp_path / "unread.jsonl"), "--clusters", str(clusters), "-o", str(out)]
    for extra, said in (
        (["--pairs", str(tmp_path / "missing.jsonl")], "--pairs"),
        (["--pairs", str(tmp_path / "corrupt.jsonl")], "--pairs takes the file"),
        (["--summary-json", str(tmp_path / "missing.json")], "--summary-json"),
        (["--summary-json", str(tmp_path / "list.json")], "not a run summary"),
    ):
        assert main([*base, *extra]) == 1  # the input does not exist: never reached
        err = capsys.readouterr().err
        assert said in err and len(err.splitlines()) == 1 and not out.exists()
    with pytest.raises(InputError, match="not a run summary"):
        write_report(src, clusters, out, run_summary=tmp_path / "list.json")


def test_options_of_the_other_kind_of_report_are_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, clusters, _ = _corpus(tmp_path)
    out = tmp_path / "r.html"
    dedup_page = ["report", str(src), "--clusters", str(clusters), "-o", str(out)]
    matches_page = [
        *["report", str(src), "--matches", str(clusters), "--against", str(src), "-o", str(out)]
    ]
    for args, said in (
        ([*dedup_page, "--sample", "5"], "--sample goes with --matches"),
        ([*matches_page, "--text-clusters", "3"], "--text-clusters goes with --clusters"),
        ([*matches_page, "-w", "4"], "-w goes with --clusters"),
    ):
        assert main(args) == 1
        err = capsys.readouterr().err
        assert said in err and len(err.splitlines()) == 1 and not out.exists()
    assert main([*dedup_page, "--text-clusters", "1", "-w", "4"]) == 0 and out.exists()


def _unit_pair(path: Path, kept: str, removed: str, unit: int) -> Path:
    """A paragraph run's clusters file of one cluster: paragraph (or line) ``unit`` of
    ``removed`` duplicates the same one of ``kept``."""
    rows = [
        {"id": kept, "paragraph": unit, "cluster": unit, "kept": True, "duplicate_of": None},
        {"id": removed, "paragraph": unit, "cluster": unit, "kept": False, "duplicate_of": kept},
    ]
    for row in rows:
        row |= {"duplicate_of_paragraph": unit if row["duplicate_of"] else None, "score": 1.0}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_paragraph_runs_report_counts_removed_paragraphs_or_lines_not_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, _, _ = _corpus(tmp_path)  # doc12 copies doc0: their paragraph 0 is the same
    clusters = _unit_pair(tmp_path / "units.jsonl", "doc0", "doc12", 0)
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"unit": "line", "seconds": 1.0}))
    out = tmp_path / "r.html"
    report = ["report", str(src), "--clusters", str(clusters), "-o", str(out)]
    assert main(report) == 0
    assert "1 removed paragraph," in capsys.readouterr().err
    assert main([*report, "--summary-json", str(summary)]) == 0
    assert "1 removed line," in capsys.readouterr().err
    assert "lines removed" in out.read_text(encoding="utf-8")


def test_a_line_runs_report_shows_the_lines_its_summary_names(tmp_path: Path) -> None:
    shared = "the shared line is here with many words in it"
    src = tmp_path / "in.jsonl"
    src.write_text(
        json.dumps({"id": "a", "text": f"first line of a alone\n{shared}\nlast of a"})
        + "\n"
        + json.dumps({"id": "b", "text": f"b opens differently here\n{shared}\nb ends"})
        + "\n"
    )
    clusters = _unit_pair(tmp_path / "lines.jsonl", "a", "b", 1)
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"unit": "line", "documents": 2, "paragraphs_removed": 1}))
    out = tmp_path / "r.html"
    with pytest.raises(InputError, match="for a --unit line run, give its --summary-json"):
        write_report(src, clusters, out)  # line 1 taken as paragraph 1: there is none
    stats = write_report(src, clusters, out, run_summary=summary)
    assert stats.unit == "line"
    docs = _payload(out.read_text(encoding="utf-8"))["docs"]
    assert docs == [["a \u00b61", shared, 0], ["b \u00b61", shared, 0]]


@pytest.mark.parametrize("score", ["NaN", "Infinity", "-Infinity", "1.5", "-0.1"])
def test_a_score_that_is_not_from_0_to_1_is_refused_naming_its_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], score: str
) -> None:
    src, clusters, _ = _corpus(tmp_path)
    out = tmp_path / "r.html"
    bad = tmp_path / "bad-clusters.jsonl"
    lines = clusters.read_text().splitlines()
    lines[2] = lines[2].replace('"score": 1.0', f'"score": {score}')
    bad.write_text("\n".join(lines) + "\n")
    assert main(["report", str(src), "--clusters", str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "bad-clusters.jsonl line 3: 'score' must be a number from 0 to 1" in err
    assert len(err.splitlines()) == 1 and not out.exists()
    old = tmp_path / "old.jsonl"  # no duplicate_of: the pairs file's scores are shown
    old.write_text(
        "".join(
            json.dumps({"id": d, "cluster": 0, "kept": d == "doc0"}) + "\n"
            for d in ("doc0", "doc12")
        )
    )
    pairs = tmp_path / "bad-pairs.jsonl"
    pairs.write_text(f'{{"id_a": "doc0", "id_b": "doc12", "score": {score}}}\n')
    report = ["report", str(src), "--clusters", str(old), "--pairs", str(pairs), "-o", str(out)]
    assert main(report) == 1
    err = capsys.readouterr().err
    assert "bad-pairs.jsonl line 1: 'score' must be a number from 0 to 1" in err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_the_pages_data_is_never_given_nan(tmp_path: Path) -> None:
    assert _script_json({"a": [1.0, None]}) == '{"a":[1.0,null]}'
    with pytest.raises(ValueError):
        _script_json({"a": float("nan")})


def test_a_lone_surrogate_in_a_text_or_id_is_escaped_in_the_page(tmp_path: Path) -> None:
    src, clusters, texts = _corpus(tmp_path)
    lines = src.read_text().splitlines()
    # doc12 (a copy of doc0) gets a lone surrogate in its text, doc13 in its id too
    lines[12] = json.dumps({"id": "doc12", "text": texts[12] + " \udfff"})
    lines[13] = json.dumps({"id": "doc13\ud800", "text": texts[13]})
    src.write_text("\n".join(lines) + "\n")
    clusters.write_text(clusters.read_text().replace('"doc13"', '"doc13\\ud800"'))
    out = tmp_path / "r.html"
    write_report(src, clusters, out)
    page = out.read_bytes().decode("utf-8")  # strict: the page is UTF-8
    docs = {d[0]: d[1] for d in _payload(page)["docs"]}
    assert docs["doc12"].endswith(" \udfff") and "doc13\ud800" in docs
    assert "\\udfff" in page and "\\ud800" in page


def test_a_part_of_a_clusters_file_is_refused_not_shown_as_self_duplicates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, clusters, _ = _corpus(tmp_path)
    lines = clusters.read_text().splitlines()
    removed = tmp_path / "removed.jsonl"  # grep '"kept": false'
    removed.write_text("".join(line + "\n" for line in lines if '"kept": false' in line))
    no_partner = tmp_path / "no-doc13.jsonl"  # doc14 duplicates doc13
    no_partner.write_text("".join(line + "\n" for line in lines if '"id": "doc13"' not in line))
    out = tmp_path / "r.html"
    for part, said in (
        (removed, "cluster 0 has no kept member"),
        (no_partner, "'doc14' duplicates 'doc13', which is not in it"),
    ):
        assert main(["report", str(src), "--clusters", str(part), "-o", str(out)]) == 1
        err = capsys.readouterr().err
        assert said in err and "the clusters file is incomplete" in err
        assert len(err.splitlines()) == 1 and not out.exists()


def test_a_clusters_file_of_kept_rows_only_is_refused_not_shown_as_nothing_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, clusters, _ = _corpus(tmp_path)
    lines = clusters.read_text().splitlines()
    kept = tmp_path / "kept-rows.jsonl"  # grep '"kept": true': every cluster alone
    kept.write_text("".join(line + "\n" for line in lines if '"kept": true' in line))
    no_doc12 = tmp_path / "no-doc12.jsonl"  # cluster 0 = {doc0, doc12} left with doc0 only
    no_doc12.write_text("".join(line + "\n" for line in lines if '"id": "doc12"' not in line))
    out = tmp_path / "r.html"
    for part in (kept, no_doc12):
        assert main(["report", str(src), "--clusters", str(part), "-o", str(out)]) == 1
        err = capsys.readouterr().err
        assert f"{part}: cluster 0 has only its kept member 'doc0'" in err
        assert "give the whole file neardup dedup --clusters wrote" in err
        assert len(err.splitlines()) == 1 and not out.exists()
    empty = tmp_path / "none.jsonl"  # a run without duplicates: an empty clusters file
    empty.write_text("")
    assert main(["report", str(src), "--clusters", str(empty), "-o", str(out)]) == 0


def test_a_summary_of_another_run_is_refused_naming_both_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, _, _ = _corpus(tmp_path)
    cl, summary = tmp_path / "run-clusters.jsonl", tmp_path / "run-summary.json"
    run = ["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--clusters", str(cl), "-q"]
    assert main([*run, "--threshold", "0.5", "--summary-json", str(summary)]) == 0
    out = tmp_path / "r.html"
    report = ["report", str(src), "--clusters", str(cl), "-o", str(out), "--summary-json"]
    assert main([*report, str(summary)]) == 0  # its own run's summary
    capsys.readouterr()
    figures = json.loads(summary.read_text())
    removed = sum(1 for r in read_clusters(cl) if not r.kept)
    assert (figures["documents"], figures["removed"]) == (16, removed)
    other = tmp_path / "other.json"
    for key, value, said in (
        ("documents", 20, "counts 20 documents where the input has 16"),
        ("removed", removed + 1, f"counts {removed + 1} removed documents where {cl} has"),
    ):
        other.write_text(json.dumps(figures | {key: value}))
        out.unlink(missing_ok=True)
        assert main([*report, str(other)]) == 1
        err = capsys.readouterr().err
        assert f"--summary-json {other} is another run's" in err and said in err
        assert len(err.splitlines()) == 1 and not out.exists()


def _pair_scores_row(page: Path) -> str:
    found = re.search(r"<th>pair scores</th><td>(.*?)</td>", page.read_text(encoding="utf-8"))
    assert found is not None
    return found.group(1)


def test_the_pair_scores_row_says_why_there_are_none(tmp_path: Path) -> None:
    src, _, _ = _corpus(tmp_path)
    old = tmp_path / "old.jsonl"  # an older run's rows: no duplicate_of, no score
    old.write_text(
        "".join(
            json.dumps({"id": d, "cluster": 0, "kept": d == "doc0"}) + "\n"
            for d in ("doc0", "doc12")
        )
    )
    empty, no_pairs = tmp_path / "empty.jsonl", tmp_path / "no-pairs.jsonl"
    empty.write_text("")
    no_pairs.write_text("")
    out = tmp_path / "r.html"
    write_report(src, old, out)
    assert _pair_scores_row(out) == "not in the clusters file (an older run; give --pairs)"
    write_report(src, old, out, pairs=no_pairs)
    assert _pair_scores_row(out) == "none: neither the clusters file nor the --pairs file has them"
    write_report(src, empty, out)
    assert _pair_scores_row(out) == "none: the clusters file has no removed document"


def test_a_report_size_option_out_of_range_is_named_as_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "max_chars must be ..." named the Python argument, not the option given
    src, clusters = tmp_path / "in.jsonl", tmp_path / "c.jsonl"
    src.write_text('{"id": "a", "text": "x y z"}\n')
    clusters.write_text('{"id": "a", "cluster": 0, "kept": true}\n')
    args = ["report", str(src), "--clusters", str(clusters), "-o", str(tmp_path / "r.html")]
    assert main([*args, "--max-chars", "0"]) == 1
    assert "max_chars (--max-chars) must be an integer of at least 1, got 0" in (
        capsys.readouterr().err
    )


def test_decontaminate_help_does_not_offer_nfkc_it_refuses() -> None:
    from neardup.cli.parser import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")  # the subcommands
    assert "--nfkc" not in sub.choices["decontaminate"].format_help()  # type: ignore[union-attr]
    assert "--nfkc" in sub.choices["dedup"].format_help()  # type: ignore[union-attr]
