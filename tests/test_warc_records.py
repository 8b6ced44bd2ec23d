"""WARC records: every record type that holds a page or its text, its declared charset, ids
that stay unique across files, and broken or cut records named as such."""

from __future__ import annotations

import io
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
