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


def _record(
    block: bytes, rid: str | None = None, uri: str = "http://x/", length: int = -1
) -> bytes:
    """A WARC response record written by hand (warcio always adds a WARC-Record-ID and fixes
    the Content-Length): ``rid`` None leaves the id out, ``length`` overrides the length."""
    idl = f"WARC-Record-ID: <urn:uuid:{rid}>\r\n" if rid else ""
    size = len(block) if length < 0 else length
    head = (
        f"WARC/1.0\r\nWARC-Type: response\r\n{idl}WARC-Date: 2024-01-01T00:00:00Z\r\n"
        f"WARC-Target-URI: {uri}\r\nContent-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {size}\r\n\r\n"
    )
    return head.encode() + block + b"\r\n\r\n"


def _http(text: str, eol: bytes = b"\r\n") -> bytes:
    return (
        eol.join([b"HTTP/1.1 200 OK", b"Content-Type: text/html", b""])
        + eol
        + (_page(text).encode())
    )


def test_records_without_an_id_are_named_by_file_and_record_across_files(
    tmp_path: Path,
) -> None:
    from neardup.cli import main

    paths = []
    for name in ("n1", "n2"):
        path = tmp_path / f"{name}.warc"
        words = [f"page {name} {i} with words of its own {name * 3} {i * 7}" for i in range(2)]
        path.write_bytes(b"".join(_record(_http(w), uri=f"http://{name}/") for w in words))
        paths.append(path)
    ids, _, counts = _texts(paths[0])
    assert ids == ["1", "2"] and counts == {}
    ids, _, counts = _texts(paths)
    assert ids == [f"{p}:{n}" for p in paths for n in (1, 2)] and counts == {}
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", *map(str, paths), "-o", str(out), "-q"]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ids


def test_a_duplicate_warc_id_is_reported_by_record_not_line(tmp_path: Path) -> None:
    from neardup.errors import InputError

    path = tmp_path / "dup.warc"
    path.write_bytes(_record(_http("one two three"), "same") + _record(_http("four five"), "same"))
    with pytest.raises(InputError, match=r"dup\.warc record 2: id .* used by .*dup\.warc record 1"):
        _texts(path)


def test_arc_files_are_not_claimed_and_forced_ones_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import gzip

    from neardup.cli import main
    from neardup.errors import ParamError
    from neardup.io import detect_format

    head = b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
    info = f"filedesc://x.arc 0.0.0.0 20240101000000 text/plain {len(head)}\n".encode()
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>an archived page</p>"
    page = f"http://x/0 1.2.3.4 20240101000000 text/html {len(http)}\n".encode()
    path = tmp_path / "x.arc.gz"
    path.write_bytes(gzip.compress(info + head + b"\n") + gzip.compress(page + http + b"\n"))
    with pytest.raises(ParamError, match="cannot tell the format"):
        detect_format(path)
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(path), "--format", "warc", "-o", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "x.arc.gz: an ARC file, not WARC" in err and "warcio recompress" in err


def test_bare_lf_http_heads_are_read_and_empty_responses_are_skipped_not_broken(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lf.warc"
    words = ["a page whose HTTP head ends lines with LF only", "a page after an empty response"]
    path.write_bytes(
        _record(_http(words[0], eol=b"\n"), "lf")
        + _record(b"", "empty")
        + _record(_http(words[1]), "after")
    )
    ids, texts, counts = _texts(path)  # stop mode: the empty response does not stop the run
    assert ids == ["urn:uuid:lf", "urn:uuid:after"] and [t.strip() for t in texts] == words
    assert counts == {"not_html": 1}


def test_a_cut_inside_a_record_says_the_file_ends_inside_that_record(tmp_path: Path) -> None:
    import gzip

    from neardup.errors import InputError

    records = [_record(_http(f"page {i} " * 40), f"r{i}") for i in range(3)]
    plain = b"".join(records)
    path = tmp_path / "cut_header.warc"
    path.write_bytes(plain[: plain.rindex(b"WARC/1.0") + 30])  # inside record 3's header
    with pytest.raises(
        InputError, match=r"cut_header\.warc: the file ends inside record 3, inside"
    ):
        _texts(path)
    ids, _, counts = _texts(path, on_error="skip")
    assert ids == ["urn:uuid:r0", "urn:uuid:r1"] and counts == {"unreadable": 1}
    members = b"".join(gzip.compress(r) for r in records)
    path = tmp_path / "cut_member.warc.gz"
    path.write_bytes(members[:-40])  # inside the last member's compressed data
    with pytest.raises(InputError, match="record 3: the file ends inside this record"):
        _texts(path)


def test_a_block_running_into_the_next_record_is_a_bad_record_not_a_page(tmp_path: Path) -> None:
    from neardup.errors import InputError

    blocks = [_http(f"page {i} with enough words of its own") for i in range(5)]
    path = tmp_path / "long.warc"
    path.write_bytes(
        b"".join(
            _record(b, f"r{i}", length=len(b) + 300 if i == 2 else -1) for i, b in enumerate(blocks)
        )
    )
    with pytest.raises(InputError, match="record 3: its block runs into the next record"):
        _texts(path)
    ids, texts, counts = _texts(path, on_error="skip")
    assert ids == ["urn:uuid:r0", "urn:uuid:r1"] and not any("WARC" in t for t in texts)
    assert counts == {"bad_record": 1, "unreadable": 1}  # the records after it are lost
