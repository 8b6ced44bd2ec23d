"""WARC files (.warc, .warc.gz; WET: .wet, .wet.gz) -> documents: each HTML response's main text,
or each conversion record's text, with its URL and crawl date.

Reader: fastwarc (resiliparse's WARC parser, C++; plain and gzip files told apart by content).
Only ``response``, ``resource`` and ``conversion`` records can be documents; the others
(warcinfo, request, metadata, revisit) are passed over without a word, as every crawl has them.

A response becomes a document when its HTTP status is 2xx and its Content-Type is HTML
(``text/html``, ``application/xhtml+xml``; a ``resource`` record's own Content-Type is used,
its charset too); its HTTP head is split here, lines ending in CRLF or a bare LF. Its text is
the page's main content (``_html.extract_text``). A ``conversion`` record (Common Crawl's WET
files: the text extracted from a page) of ``text/plain`` (or no Content-Type) is that text as it
is, UTF-8 unless its Content-Type names a charset; an HTML one is read as a page. Id = the
WARC-Record-ID (without ``<urn:uuid:...>`` brackets; without one, the record number as
``Fields.default_id`` names it), or the URL with ``--id-field url``; the URL (WARC-Target-URI)
and crawl date (WARC-Date) are kept as fields.

Records that are not pages are counted and skipped with their reason whatever ``--on-error``
says, since a crawl is full of them: ``not_html`` (images, scripts, JSON..., empty responses)
and ``http_status`` (redirects, errors). Broken records follow ``--on-error``: ``bad_record``
(the HTTP block is not HTTP, the file ends inside the record's block, its content encoding
cannot be undone, a page's block runs into the next record's header). Record numbers count
every record of the file from 1, so messages name the record a WARC tool would show.

Pass 2 writes the kept documents as JSON Lines: ``{"id", "url", "date", "text"}``.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from ._html import decode_html, extract_text, require_web
from ._report import TOO_LARGE, UNREADABLE, Entry, Problems, raise_changed, size_text, too_large

if TYPE_CHECKING:
    from .formats.base import Fields

#: File name endings read as WARC.
WARC_SUFFIXES = (".warc", ".warc.gz", ".wet", ".wet.gz")  # not ARC: fastwarc cannot read it

NOT_HTML = "not_html"  # a response that is not an HTML page (always skipped and counted)
HTTP_STATUS = "http_status"  # a response with a status other than 2xx (always skipped)
BAD_RECORD = "bad_record"  # a broken record (follows --on-error)

#: The record types that can be documents (WARC-Type values).
_DOC_RECORDS = ("response", "resource", "conversion")
_HTML_TYPES = ("text/html", "application/xhtml+xml")
#: The Content-Types of a conversion record whose block is the text itself (WET: text/plain).
_TEXT_TYPES = ("text/plain", "")
#: Bytes of a record's start kept to check where the file ends (WARC headers are shorter).
_HEAD = 1 << 20
_READ_ERRORS = (OSError, EOFError, zlib.error)
#: The empty line that ends an HTTP head (CRLF, or a bare LF as some servers and tools write).
_HEAD_END = re.compile(rb"\r?\n\r?\n")
#: A record's end and the next one's header inside a page's block: its Content-Length is too
#: large (the records after it are lost: the parser reads on from inside the next one).
_NEXT_RECORD = re.compile(rb"\r\n\r\nWARC/1\.[01]\r\n[!-9;-~]+:")


@dataclass(frozen=True)
class WarcDoc:
    """One page of a WARC file: record number, record id, URL, crawl date, text, block bytes."""

    recno: int
    record_id: str | None  # None: the record has no WARC-Record-ID (named as JSONL lines are)
    url: str | None
    date: str | None
    text: str
    nbytes: int

    def doc_id(self, id_field: str) -> str | None:
        """The document id: the URL when ``id_field`` is "url" (and the record has one), else
        the record id; None when neither is there (``Fields.default_id`` names it)."""
        if id_field == "url" and self.url:
            return self.url
        return self.record_id

    def field(self, name: str | None) -> object:
        """A field for ``--keep-field``: "date" or "url" (strings), else None."""
        return {"date": self.date, "url": self.url}.get(name or "")


@dataclass(frozen=True)
class WarcSkip:
    """A record that gives no document, and why."""

    recno: int
    kind: str
    problem: str
    fix: str


def _dechunk(data: bytes) -> bytes:
    """Undo HTTP chunked transfer coding; ValueError when the chunks are malformed."""
    out = bytearray()
    pos = 0
    while True:
        end = data.index(b"\r\n", pos)
        size = int(data[pos:end].split(b";")[0].strip() or b"x", 16)
        if size == 0:
            return bytes(out)
        out += data[end + 2 : end + 2 + size]
        if end + 2 + size > len(data):
            raise ValueError("chunk runs past the end of the record")
        pos = end + 2 + size + 2


class _NotWarc(OSError):
    """A file that is not WARC at all (an ARC file): what to do is to convert it, not repair it."""


class _TooLarge(ValueError):
    """A body that decodes to more than the record-size limit."""


def _inflate(body: bytes, wbits: int, limit: int) -> bytes:
    """zlib/gzip ``body`` decoded, never past ``limit + 1`` bytes (a bomb is cut short)."""
    out = zlib.decompressobj(wbits).decompress(body, limit + 1)
    if len(out) > limit:
        raise _TooLarge(f"the body decodes to more than {size_text(limit)}")
    return out


def _decode_body(body: bytes, headers: Mapping[str, str], limit: int) -> bytes:
    """Undo the HTTP transfer and content encodings (chunked; gzip, deflate, br), decoding no
    more than ``limit`` bytes; header names in any case."""
    named = {name.lower(): value for name, value in headers.items()}
    transfer = named.get("transfer-encoding", "").lower()
    encoding = named.get("content-encoding", "").lower().strip()
    if "chunked" in transfer:
        body = _dechunk(body)
    if encoding in ("gzip", "x-gzip"):
        body = _inflate(body, 16 + zlib.MAX_WBITS, limit)
    elif encoding == "deflate":
        try:
            body = _inflate(body, zlib.MAX_WBITS, limit)
        except zlib.error:
            body = _inflate(body, -zlib.MAX_WBITS, limit)
    elif encoding == "br":
        try:
            import brotli

            body = brotli.Decompressor().process(body, output_buffer_limit=limit + 1)
        except Exception as exc:  # brotli.error, or brotli not installed
            raise ValueError(f"brotli: {exc}") from None
        if len(body) > limit:
            raise _TooLarge(f"the body decodes to more than {size_text(limit)}")
    elif encoding not in ("", "identity"):
        raise ValueError(f"unknown content encoding {encoding!r}")
    return body


def _charset(ctype: str) -> str | None:
    """The charset a Content-Type value names (``text/html; charset=iso-8859-2``), or None: a
    record's own declaration is trusted before a guess from its bytes."""
    for param in ctype.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'") or None
    return None


def _strip_urn(record_id: str) -> str:
    rid = record_id.strip()
    if rid.startswith("<") and rid.endswith(">"):
        rid = rid[1:-1]
    return rid


class _Checked:
    """A WARC file's (decompressed) bytes for the parser, which keeps the first bytes of the
    latest record so that the end of the file can be checked: a file cut inside a record's
    header ends the parser's records without a word. Gzip goes through ``gzip.GzipFile``,
    which raises at a cut anywhere in a member (header, data or trailer)."""

    def __init__(self, raw: BinaryIO) -> None:
        magic = raw.read(2)
        raw.seek(0)
        self.stream: io.BufferedIOBase = (
            gzip.GzipFile(fileobj=raw, mode="rb")
            if magic == b"\x1f\x8b"
            else io.BufferedReader(cast(io.RawIOBase, raw))
            if not hasattr(raw, "read1")
            else cast(io.BufferedIOBase, raw)
        )
        self.total = 0  # bytes given to the parser
        self.recent: deque[tuple[int, bytes]] = deque()  # (offset, bytes) of the last reads
        self.start = 0  # where the latest record starts
        self.head = bytearray()  # its first bytes (up to _HEAD)
        self.last = b""  # the last bytes given
        #: The read error that ended the file early (the parser was told the file ended).
        self.error: Exception | None = None

    def read(self, size: int = -1) -> bytes:
        if self.error is not None:
            return b""
        try:  # read1: what one read gives, so bytes before a damaged end are not lost with it
            data = self.stream.read1(size)
        except _READ_ERRORS as exc:  # the parser sees the end; the caller raises this after
            self.error = exc
            return b""
        if data:
            if len(self.head) < _HEAD:
                at = max(0, self.start - self.total)
                self.head += data[at : at + _HEAD - len(self.head)]
            self.recent.append((self.total, data))
            self.total += len(data)
            while len(self.recent) > 1 and self.recent[1][0] <= self.total - _HEAD:
                self.recent.popleft()
            self.last = data[-4:] if len(data) >= 4 else (self.last + data)[-4:]
        return data

    def tell(self) -> int:
        return self.total

    def readable(self) -> bool:
        return True

    def record_at(self, pos: int) -> None:
        """A record starts at ``pos`` (the parser has read on past its header): keep its first
        bytes from now on."""
        self.start = pos
        self.head = bytearray()
        for at, data in self.recent:
            if at + len(data) > pos and len(self.head) < _HEAD:
                self.head += data[max(0, pos - at) :][: _HEAD - len(self.head)]

    def in_header(self) -> bool:
        """Whether the latest record's header is incomplete: the file ends inside it."""
        return self.head.startswith(b"WARC/") and b"\r\n\r\n" not in self.head

    def cut(self, content_length: int) -> str | None:
        """After the parser's last record (of ``content_length`` block bytes): what is missing
        when the file ends inside it, else None. Only for WARC (not ARC) content."""
        if not self.head.startswith(b"WARC/"):
            return None
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            return "inside its header"
        need = self.start + end + 4 + content_length + 4
        if self.total < need or self.last != b"\r\n\r\n":
            return f"after {self.total - self.start} of its {need - self.start} bytes"
        return None


def iter_warc(stream: BinaryIO, limit: int) -> Iterator[WarcDoc | WarcSkip]:
    """Every response, resource and conversion record of a WARC stream as a WarcDoc or a
    WarcSkip, in order; a record whose block is over ``limit`` bytes is skipped unread
    (``too_large``), one whose header the file ends inside is not judged (the end is reported).

    Raises OSError (or EOFError, zlib.error) when the file cannot be read on, and OSError when
    it ends inside a record; the records before that point have been yielded.
    """
    require_web()
    from fastwarc.warc import ArchiveIterator

    checked = _Checked(stream)
    recno = 0
    length = 0
    records = iter(ArchiveIterator(cast(BinaryIO, checked), parse_http=False))
    while True:
        try:
            rec = next(records)
        except StopIteration:
            break
        except _READ_ERRORS as exc:
            if recno == 0 and checked.head.startswith(b"filedesc://"):
                raise _NotWarc("an ARC file, not WARC (ARC files are not read)") from None
            raise OSError(f"reading failed after record {recno} ({exc})") from None
        recno += 1
        checked.record_at(rec.stream_pos)
        length = rec.content_length
        if checked.in_header():  # the file ends inside this record's header: said below
            break
        kind = (rec.headers.get("WARC-Type") or "").strip().lower()
        if kind in _DOC_RECORDS:
            yield _page(rec, recno, limit, kind)
    problem = _end_problem(checked, recno, length)
    if problem is not None:
        raise OSError(problem)


def _end_problem(checked: _Checked, recno: int, length: int) -> str | None:
    """What is wrong with the end of the file after the parser's last record (number
    ``recno``, of ``length`` block bytes): a read error, or the file ending inside the record."""
    cut = checked.cut(length) if recno else None
    inside = f"the file ends inside record {recno}, {cut}"
    if checked.error is None:
        return inside if cut else None
    if cut:
        return f"{inside} ({checked.error})"
    return f"reading failed after record {recno} ({checked.error})"


def _page(rec: Any, recno: int, limit: int, kind: str) -> WarcDoc | WarcSkip:
    """One response, resource or conversion record (``kind``) -> its page or text, or why it
    gives none."""
    head = rec.headers
    url = head.get("WARC-Target-URI")
    date = head.get("WARC-Date")
    record_id = _strip_urn(head.get("WARC-Record-ID") or "") or None
    where = f" ({url})" if url else ""
    declared = rec.content_length
    if declared > limit:
        rec.reader.consume()
        return WarcSkip(recno, *too_large(declared, limit))
    response = kind == "response"
    block = _block(rec, recno, response, where)
    if isinstance(block, WarcSkip):
        return block
    body, ctype, charset, code, http = block
    if not 200 <= code < 300:
        return WarcSkip(recno, HTTP_STATUS, f"HTTP status {code}{where}", "not a page")
    media = ctype.split(";")[0].strip()
    plain = kind == "conversion" and media in _TEXT_TYPES
    if not plain and media not in _HTML_TYPES:
        return WarcSkip(
            recno, NOT_HTML, f"not HTML ({media or 'no Content-Type'}){where}", "not a page"
        )
    if _NEXT_RECORD.search(body):
        return WarcSkip(
            recno,
            BAD_RECORD,
            f"its block runs into the next record's header (its Content-Length, {declared}, is "
            f"larger than its block){where}",
            "repair the record's Content-Length",
        )
    try:
        if response:
            body = _decode_body(body, http, limit)
    except _TooLarge as exc:
        return WarcSkip(recno, TOO_LARGE, f"{exc}{where}", too_large(None, limit)[2])
    except (ValueError, zlib.error) as exc:
        return WarcSkip(
            recno, BAD_RECORD, f"cannot decode the HTTP body ({exc}){where}", "repair it"
        )
    text = decode_html(body, charset or "utf-8") if plain else _main_text(body, charset)
    return WarcDoc(recno, record_id, url, date, text, max(declared, len(body)))


def _main_text(body: bytes, charset: str | None) -> str:
    """An HTML page's main text (its boilerplate removed)."""
    return extract_text(decode_html(body, charset)).text


_Block = tuple[bytes, str, str | None, int, dict[str, str]]


def _block(rec: Any, recno: int, response: bool, where: str) -> _Block | WarcSkip:
    """A record's block as (body, Content-Type, charset, HTTP status, HTTP headers), or a
    WarcSkip when it is cut short, an empty response, or its HTTP head is broken."""
    expected = rec.content_length
    try:
        data = rec.reader.read()
    except _READ_ERRORS as exc:
        return WarcSkip(recno, BAD_RECORD, f"cannot parse it ({exc}){where}", "repair it")
    if len(data) < expected:
        return WarcSkip(
            recno,
            BAD_RECORD,
            f"the file ends inside this record, after {len(data)} of its {expected} bytes{where}",
            "re-download or repair the WARC file",
        )
    if not response:
        ctype = (rec.headers.get("Content-Type") or "").lower()
        return data, ctype, _charset(ctype), 200, {}
    if not data.strip():  # nothing was received: no page, but nothing broken either
        return WarcSkip(recno, NOT_HTML, f"not HTML (an empty response){where}", "not a page")
    return _http(data, recno, where)


def _http(data: bytes, recno: int, where: str) -> _Block | WarcSkip:
    """An HTTP response split into head and body; head lines may end in CRLF or a bare LF."""
    end = _HEAD_END.search(data)
    head, body = (data[: end.start()], data[end.end() :]) if end else (data, b"")
    lines = head.decode("latin-1").split("\n")
    parts = lines[0].split()
    if not lines[0].startswith("HTTP/") or len(parts) < 2 or not parts[1].isdigit():
        return WarcSkip(
            recno,
            BAD_RECORD,
            f"the HTTP block does not start with a status line{where}",
            "repair the record or skip it",
        )
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers.setdefault(name.strip().lower(), value.strip())
    ctype = headers.get("content-type", "").lower()
    return body, ctype, _charset(ctype), int(parts[1]), headers


def _open(entry: Entry) -> BinaryIO:
    if entry.path is None:  # pragma: no cover - WARC entries always have a path
        raise RuntimeError(f"{entry.name} has no file to open")
    return open(entry.path, "rb")


def scan_warc(
    entry: Entry, id_field: str, problems: Problems, key_field: str | None = None
) -> Iterator[tuple[int, str | None, str, int, object]]:
    """Pass 1: yield (record number, id, text, record bytes, key) for each HTML page."""
    handle = problems.opened(entry, lambda: _open(entry))
    if handle is None:
        return
    with handle:
        try:
            for item in iter_warc(handle, entry.max_record):
                if isinstance(item, WarcSkip):
                    _skip(problems, entry, item)
                    continue
                yield (
                    item.recno,
                    item.doc_id(id_field),
                    item.text,
                    item.nbytes,
                    item.field(key_field),
                )
        except _NotWarc as exc:
            fix = "convert it to WARC first, e.g. warcio recompress IN.arc.gz OUT.warc.gz"
            problems.file(entry, UNREADABLE, str(exc), fix)
        except _READ_ERRORS as exc:
            problems.file(entry, UNREADABLE, str(exc), "re-download or repair the file")


def _skip(problems: Problems, entry: Entry, item: WarcSkip) -> None:
    """Count a record that gives no document; broken ones stop the run in "stop" mode."""
    message = f"{entry.where(item.recno)}: {item.problem}; {item.fix}"
    if item.kind in (BAD_RECORD, TOO_LARGE) and problems.on_error == "stop":
        raise InputError(f"{message}, or use --on-error skip to skip and count such records")
    problems.report.add(item.kind, message)
    entry.skipped.add(item.recno)


def copy_kept_warc(
    entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO, fields: Fields
) -> None:
    """Pass 2: write ``{"id", "url", "date", "text"}`` for each kept page of the file."""
    remaining = entry.n_docs
    if remaining == 0:
        return
    flags: list[bool] = keep.tolist()
    i = 0
    with _open(entry) as handle:
        for item in iter_warc(handle, entry.max_record):
            if isinstance(item, WarcSkip) or item.recno in entry.skipped:
                continue
            if flags[i]:
                row = {
                    "id": item.doc_id(fields.id) or fields.default_id(entry.name, item.recno),
                    "url": item.url,
                    "date": item.date,
                    "text": item.text,
                }
                out.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")
            i += 1
            if i == remaining:
                return
    raise_changed(entry)
