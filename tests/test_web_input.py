"""WARC and HTML input: pages become documents with URL and date; bad records are counted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from neardup.cli import main
from neardup.errors import InputError
from neardup.io import detect_format, open_source
from neardup.io._html import html_to_text
from neardup.testing.synth import edit, random_documents
from neardup.testing.web import boilerplate_words, random_pages, site_pages, write_warc


def _crawl(tmp_path: Path, gzip: bool = True, broken: int = 2) -> tuple[Path, list, dict]:
    """A crawl of 12 unrelated stories, 3 exact re-crawls and 3 lightly edited copies."""
    base = random_documents(12, seed=21, words=(200, 400))
    texts = [
        *base,
        base[0],
        base[1],
        base[2],
        edit(base[3], 0.005, 1, 0.0),
        edit(base[4], 0.005, 2, 0.0),
    ]
    texts.append(edit(base[5], 0.005, 3, 0.0))
    pages = site_pages(texts, seed=4)
    path = tmp_path / ("crawl.warc.gz" if gzip else "crawl.warc")
    write_warc(path, pages, gzip=gzip, extras=True, broken=broken)
    dups = {12: 0, 13: 1, 14: 2, 15: 3, 16: 4, 17: 5}  # page index -> the page it copies
    return path, pages, dups


@pytest.mark.parametrize("gzip", [True, False])
def test_warc_pages_dedupe_and_keep_url_and_date(
    tmp_path: Path, gzip: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    path, pages, dups = _crawl(tmp_path, gzip)
    out, clusters = tmp_path / "kept.jsonl", tmp_path / "clusters.jsonl"
    args = ["dedup", str(path), "-o", str(out), "--clusters", str(clusters), "--on-error", "skip"]
    assert main([*args, "--summary-json", str(tmp_path / "s.json")]) == 0
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    urls = [k["url"] for k in kept]
    assert urls == [p.url for i, p in enumerate(pages) if i not in dups]
    assert [k["date"] for k in kept] == [p.date for i, p in enumerate(pages) if i not in dups]
    assert all(k["id"].startswith("urn:uuid:") and k["text"] for k in kept)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["documents"] == len(pages)
    assert summary["skipped_records"] == 4  # 2 non-HTML responses + 2 broken records
    assert "not_html 2" in capsys.readouterr().err
    rows = [json.loads(line) for line in clusters.read_text().splitlines()]
    assert len(rows) == 2 * len(dups)


def test_extracted_text_is_the_article_without_the_site_boilerplate() -> None:
    page = random_pages(1, seed=8)[0]
    got = html_to_text(page.html.encode("utf-8"))
    assert page.text.split("\n\n")[0].strip() in got.text
    assert "cookie" not in got.text.lower() and "Related stories" not in got.text
    assert "Privacy policy" in boilerplate_words(8)
    assert got.url == page.url and got.date == page.date


def test_broken_record_stops_the_run_naming_the_record(tmp_path: Path) -> None:
    path, _, _ = _crawl(tmp_path, broken=1)
    with open_source(path) as src, pytest.raises(InputError, match=r"record \d+: the HTTP block"):
        list(src.batches(100))


def test_non_html_records_are_skipped_even_when_stopping_on_errors(tmp_path: Path) -> None:
    path, pages, _ = _crawl(tmp_path, broken=0)
    with open_source(path) as src:
        docs = [t for b in src.batches(7) for t in b.texts]
        assert len(docs) == len(pages) and src.errors.counts == {"not_html": 2}


def test_truncated_warc_counts_the_cut_record(tmp_path: Path) -> None:
    path, pages, _ = _crawl(tmp_path, gzip=False, broken=0)
    data = path.read_bytes()
    cut = data.index(pages[5].url.encode(), data.index(b"WARC-Type: response"))
    path.write_bytes(data[: cut + 3000])  # inside page 5's response
    with open_source(path, on_error="skip") as src:
        n = sum(len(b) for b in src.batches(100))
    assert n == 5 and src.errors.counts.get("bad_record") == 1


def test_url_as_id_and_date_as_keep_field(tmp_path: Path) -> None:
    path, pages, _ = _crawl(tmp_path, broken=0)
    with open_source(path, id_field="url", key_field="date", on_error="skip") as src:
        batch = next(src.batches(100))
    assert batch.ids[:3] == [p.url for p in pages[:3]]
    assert batch.keys is not None and batch.keys[:3] == [p.date for p in pages[:3]]


@pytest.mark.parametrize(
    ("kind", "option", "value", "said"),
    [
        ("warc", "--id-field", "foo", "WARC-Record-ID"),
        ("warc", "--text-field", "body", "main text"),
        ("html", "--id-field", "url", "its path"),
        ("html", "--text-field", "body", "main text"),
    ],
)
@pytest.mark.parametrize("command", ["dedup", "decontaminate", "index add"])
def test_a_field_web_input_cannot_honour_is_refused_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    option: str,
    value: str,
    said: str,
    command: str,
) -> None:
    if kind == "warc":
        path, _, _ = _crawl(tmp_path, broken=0)
    else:
        path = tmp_path / "site"
        path.mkdir()
        (path / "p0.html").write_text(random_pages(1, seed=5)[0].html, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = {
        "dedup": ["dedup", str(path), "-o", str(out)],
        "decontaminate": ["decontaminate", str(path), "--against", str(path), "-o", str(out)],
        "index add": ["index", "add", str(tmp_path / "i.db"), str(path)],
    }[command]
    if command == "index add":
        assert main(["index", "create", str(tmp_path / "i.db")]) == 0
        capsys.readouterr()
    assert main([*args, option, value]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{option} {value!r}" in err and said in err, err
    assert not out.exists()


def test_warc_still_takes_the_url_as_id(tmp_path: Path) -> None:
    path, pages, _ = _crawl(tmp_path, broken=0)
    out = tmp_path / "out.jsonl"
    assert main(["dedup", str(path), "-o", str(out), "--id-field", "url", "-q"]) == 0
    assert json.loads(out.read_text().splitlines()[0])["id"] == pages[0].url


def test_html_folder_is_read_as_pages(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    folder.mkdir()
    pages = random_pages(3, seed=5)
    for i, p in enumerate([*pages, pages[1]]):
        (folder / f"p{i}.html").write_text(p.html, encoding="utf-8")
    assert detect_format(folder / "p0.html") == "html" and detect_format("a.WARC.GZ") == "warc"
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(folder), "-o", str(out), "-q"]) == 0
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert [k["url"] for k in kept] == [p.url for p in pages]
    assert kept[0]["id"].endswith("p0.html")


def test_kept_mask_shape_is_checked_for_warc(tmp_path: Path) -> None:
    path, _, _ = _crawl(tmp_path, broken=0)
    with open_source(path) as src:
        list(src.batches(50))
        with pytest.raises(Exception, match="one flag per document"):
            src.write_kept(np.ones(3, dtype=bool), tmp_path / "k.jsonl")


def _response(
    writer, url: str, body: bytes, headers: list[tuple[str, str]], status: str = "200 OK"
):  # type: ignore[no-untyped-def]
    import io

    from warcio.statusandheaders import StatusAndHeaders

    http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
    return writer.create_warc_record(
        url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http
    )


def test_http_encodings_charsets_and_statuses(tmp_path: Path) -> None:
    import gzip
    import io

    from warcio.warcwriter import WARCWriter

    page = "<html><body><article><p>{}</p></article></body></html>"
    text = "Un café crème à la terrasse, près de la gare du Nord, coûte trois euros cinquante."
    latin = page.format(text).encode("latin-1")
    zipped = gzip.compress(page.format(text + " Zipped.").encode("utf-8"))
    chunked = (
        b"".join(
            b"%x\r\n%s\r\n" % (len(part), part)
            for part in (
                page.format(text + " Chunked.").encode("utf-8")[:40],
                page.format(text + " Chunked.").encode("utf-8")[40:],
            )
        )
        + b"0\r\n\r\n"
    )
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    html_type = ("Content-Type", "text/html")
    w.write_record(
        _response(w, "http://x/latin", latin, [("Content-Type", "text/html; charset=iso-8859-1")])
    )
    w.write_record(_response(w, "http://x/zip", zipped, [html_type, ("Content-Encoding", "gzip")]))
    w.write_record(
        _response(w, "http://x/chunk", chunked, [html_type, ("Transfer-Encoding", "chunked")])
    )
    w.write_record(_response(w, "http://x/moved", b"", [html_type], "301 Moved Permanently"))
    w.write_record(
        _response(
            w, "http://x/bad-zip", b"not gzip at all", [html_type, ("Content-Encoding", "gzip")]
        )
    )
    path = tmp_path / "enc.warc.gz"
    path.write_bytes(buf.getvalue())
    with open_source(path, id_field="url", on_error="skip") as src:
        batch = next(src.batches(10))
    assert batch.ids == ["http://x/latin", "http://x/zip", "http://x/chunk"]
    assert batch.texts[0].strip() == text
    assert batch.texts[1].strip().endswith("Zipped.") and "café crème" in batch.texts[1]
    assert batch.texts[2].strip().endswith("Chunked.")
    assert src.errors.counts == {"http_status": 1, "bad_record": 1}


def test_compare_reads_html_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = random_pages(1, seed=9)[0]
    (tmp_path / "a.html").write_text(page.html, encoding="utf-8")
    (tmp_path / "b.txt").write_text(page.text, encoding="utf-8")
    assert main(["compare", str(tmp_path / "a.html"), str(tmp_path / "b.txt"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["containment_b_in_a"] == 1.0 and out["resemblance"] > 0.9


def test_compare_reads_stdin_as_plain_text_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    page = random_pages(1, seed=9)[0]
    (tmp_path / "b.html").write_text(page.html, encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(page.html.encode())))
    assert main(["compare", "-", str(tmp_path / "b.html"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["resemblance"] < 1.0  # the markup is compared too: the page is not extracted
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "standard input: plain text" in " ".join(capsys.readouterr().out.split())
    tools = (Path(__file__).parents[1] / "docs" / "TOOLS.md").read_text(encoding="utf-8")
    assert "standard input (`-`) always, is read as plain UTF-8 text" in " ".join(tools.split())


def test_keep_field_date_keeps_the_latest_crawl(tmp_path: Path) -> None:
    path, pages, dups = _crawl(tmp_path, broken=0)
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(path), "-o", str(out), "--keep-field", "date", "-q"]) == 0
    urls = {json.loads(line)["url"] for line in out.read_text().splitlines()}
    assert pages[12].date > pages[0].date  # page 12 re-crawls page 0, later
    assert pages[12].url in urls and pages[0].url not in urls
    assert len(urls) == len(pages) - len(dups)


@pytest.mark.parametrize(
    "text",
    [
        "It\u2019s a sunny day in the city and everyone is walking in the park with the dogs.",
        "Our new manager is Jos\u00e9 Garcia, who joined the team last week from Madrid.",
        "\ufeffA page that opens with a byte-order mark \u2014 and says no charset at all.",
    ],
)
def test_a_utf8_page_without_a_declared_charset_reads_as_utf8(text: str) -> None:
    # mostly ASCII with a few non-ASCII letters: detected as cp1252 and read "JosÃ©"
    words = text.lstrip("\ufeff")  # a byte-order mark opens the page, not the paragraph
    body = f"<html><head><title>t</title></head><body><article><p>{words}</p></article></body>"
    page = text[: len(text) - len(words)] + body
    assert html_to_text(page.encode("utf-8")).text == words
    assert html_to_text(body.encode("cp1252")).text == words  # not UTF-8: still detected
