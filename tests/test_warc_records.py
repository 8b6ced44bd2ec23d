"""WARC records: every record type that holds a page or its text, its declared charset, ids
that stay unique across files, and broken or cut records named as such."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from neardup.io import open_source

pytest.importorskip("fastwarc")
pytest.importorskip("warcio")

_POLISH = "Zażółć gęślą jaźń, pójdź w łódź, bo tam czeka zielona żaba."
_JAPANESE = "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。"


def _texts(path: Path, **options: object) -> tuple[list[str], list[str], dict[str, int]]:
    """(ids, texts, problem counts) of every document of ``path``."""
    with open_source(path, **options) as src:  # type: ignore[arg-type]
        batches = list(src.batches(100))
        counts = dict(src.errors.counts)
    return [i for b in batches for i in b.ids], [t for b in batches for t in b.texts], counts


def _page(text: str) -> str:
    return f"<html><body><article><p>{text}</p></article></body></html>"


def test_resource_record_is_decoded_by_its_own_declared_charset(tmp_path: Path) -> None:
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=False)
    for n, (text, charset) in enumerate(((_POLISH, "iso-8859-2"), (_JAPANESE, "shift_jis"))):
        body = _page(text).encode(charset)
        ctype = f"text/html; charset={charset}"
        record = w.create_warc_record(
            f"http://r/{n}", "resource", payload=io.BytesIO(body), warc_content_type=ctype
        )
        w.write_record(record)
    path = tmp_path / "res.warc"
    path.write_bytes(buf.getvalue())
    _, texts, counts = _texts(path)
    assert [t.strip() for t in texts] == [_POLISH, _JAPANESE] and counts == {}


def _wet(path: Path, texts: list[str]) -> None:
    """A WET file as Common Crawl writes it: a warcinfo record, then one ``conversion`` record
    (the page's extracted text, UTF-8 ``text/plain``) per page."""
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        w.write_record(w.create_warcinfo_record(path.name, {"software": "neardup tests"}))
        for n, text in enumerate(texts):
            payload = io.BytesIO(text.encode("utf-8"))
            w.write_record(
                w.create_warc_record(
                    f"http://w/{n}", "conversion", payload=payload, warc_content_type="text/plain"
                )
            )


def test_wet_conversion_records_are_plain_text_documents(tmp_path: Path) -> None:
    from neardup.cli import main
    from neardup.io import detect_format

    texts = [_POLISH, "the quick brown fox jumps over the lazy dog", _JAPANESE, _POLISH]
    path = tmp_path / "CC-MAIN-2024-10-00000.warc.wet.gz"
    _wet(path, texts)
    assert {detect_format(n) for n in (path.name, "a.wet.gz", "a.wet")} == {"warc"}
    ids, got, counts = _texts(path)
    assert got == texts and counts == {}
    assert all(i.startswith("urn:uuid:") for i in ids)
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(path), "-o", str(out), "-q"]) == 0
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [k["text"] for k in kept] == texts[:3]
    assert [k["url"] for k in kept] == ["http://w/0", "http://w/1", "http://w/2"]
    assert [k["id"] for k in kept] == ids[:3] and all(k["date"] for k in kept)
