"""HTML bytes -> (main text, canonical URL, publication date); HTML files in folders -> documents.

Extractor: resiliparse's ``extract_plain_text(main_content=True)``. Chosen over trafilatura by
measurement on generated news pages (``benchmarks/bench_warc.py``: a site's menu, sidebar,
cookie banner and footer around an article): both keep the whole article and drop all the
boilerplate (word 3-shingle recall and precision 1.000 for both), but resiliparse extracts
5,100 pages/s against trafilatura's 560 (9x faster), and it parses the tree once for the
text, the URL and the date. Without main-content detection precision falls to 0.65: the
boilerplate would make unrelated pages of one site resemble each other, which is why it
matters for deduplication. ``extract_text(..., extractor="trafilatura")``
remains available for comparison (``pip install trafilatura``).

Encoding: the HTTP or caller's charset if given, else detected from the bytes (BOM, meta tag,
statistics) by resiliparse; undecodable bytes never raise (they are replaced).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np
import numpy.typing as npt

from ..errors import InputError, NeardupError
from ._report import Entry, Problems
from ._text import read_bounded

Extractor = Literal["resiliparse", "trafilatura"]

#: File name endings read as HTML by ``neardup dedup`` (see ``detect_format``).
HTML_SUFFIXES = (".html", ".htm", ".xhtml")


@dataclass(frozen=True)
class Extracted:
    """What a page yields: its main text, and its canonical URL and date when the HTML says."""

    text: str
    url: str | None
    date: str | None


def require_web() -> None:
    """Raise a NeardupError saying how to install the web extra when it is missing."""
    try:
        import fastwarc  # noqa: F401
        import resiliparse  # noqa: F401
    except ImportError:
        raise NeardupError(
            "WARC and HTML input need resiliparse and fastwarc; install them with: "
            "pip install 'neardup[web]'"
        ) from None


def decode_html(data: bytes, charset: str | None = None) -> str:
    """Bytes of a page -> str, by ``charset`` when given and known, else as UTF-8 when they are
    valid UTF-8, else by detection: a page mostly ASCII with a few accented letters ("José",
    "It’s") and no declared charset was detected as cp1252 and read "JosÃ©"."""
    require_web()
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    if not charset:
        try:
            return data.decode("utf-8-sig")  # a byte-order mark is no text
        except UnicodeDecodeError:
            pass
    encoding = charset or detect_encoding(data) or "utf-8"
    try:
        return bytes_to_str(data, encoding, errors="replace")
    except (LookupError, ValueError):  # an unknown charset name: detect instead
        return bytes_to_str(data, detect_encoding(data) or "utf-8", errors="replace")


def _meta(tree: object, selector: str, attr: str) -> str | None:
    head = getattr(tree, "head", None)
    node = head.query_selector(selector) if head is not None else None
    value = node.getattr(attr) if node is not None else None
    return value.strip() or None if isinstance(value, str) else None


def extract_text(html: str, extractor: Extractor = "resiliparse") -> Extracted:
    """Main text of a page (boilerplate removed), its canonical URL and publication date.

    URL: ``<link rel="canonical">`` or ``og:url``; date: ``article:published_time``,
    ``og:updated_time`` or ``<meta name="date">``; None when absent.
    """
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    url = _meta(tree, 'link[rel="canonical"]', "href") or _meta(
        tree, 'meta[property="og:url"]', "content"
    )
    date = (
        _meta(tree, 'meta[property="article:published_time"]', "content")
        or _meta(tree, 'meta[property="og:updated_time"]', "content")
        or _meta(tree, 'meta[name="date"]', "content")
    )
    if extractor == "trafilatura":
        try:
            import trafilatura
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise NeardupError(
                "the trafilatura extractor needs trafilatura: pip install trafilatura"
            ) from exc
        text = trafilatura.extract(html, include_comments=False, fast=True) or ""
    else:
        text = extract_plain_text(tree, main_content=True, alt_texts=False)
    return Extracted(text, url, date)


def html_to_text(data: bytes, charset: str | None = None) -> Extracted:
    """HTML bytes -> Extracted (decode, then ``extract_text`` with resiliparse)."""
    return extract_text(decode_html(data, charset))


def scan_html(
    entry: Entry, problems: Problems, key_field: str | None = None
) -> Iterator[tuple[int, str | None, str, int, object]]:
    """Pass 1 for one HTML file: yield (1, path, main text, bytes, key): the key is the page's
    "url" or "date" when ``key_field`` names one, else None."""
    if entry.path is None:  # pragma: no cover - HTML entries always have a path
        raise RuntimeError(f"{entry.name} has no file to open")
    data = read_bounded(entry, problems)
    if data is None:
        return
    page = html_to_text(data)
    yield (
        1,
        entry.name,
        page.text,
        len(data),
        {"url": page.url, "date": page.date}.get(key_field or ""),
    )


def copy_kept_html(entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO) -> None:
    """Pass 2: write ``{"id", "url", "date", "text"}`` for the file's page if it is kept."""
    if entry.n_docs == 0 or not keep[0] or entry.path is None:
        return
    page = html_to_text(entry.path.read_bytes())
    row = {"id": entry.name, "url": page.url, "date": page.date, "text": page.text}
    out.write(json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n")


def read_document(path: str) -> str:
    """The text of one input for ``neardup compare``: an ``.html`` file is extracted, anything
    else and ``-`` (standard input, never sniffed for HTML) is read as UTF-8 text."""
    if path == "-":
        return sys.stdin.read()
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: file not found; check the path") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if path.lower().endswith(HTML_SUFFIXES):
        return html_to_text(data).text
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: invalid UTF-8 at byte {exc.start + 1}; re-encode the file as UTF-8"
        ) from None
