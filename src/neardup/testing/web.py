"""Seed -> synthetic web pages (a site's boilerplate around an article) and WARC files of them.

A page wraps its article text (paragraphs in ``<article>``) in what real sites add: a header
with a menu of links, a sidebar of "related" headlines, a cookie banner, a footer and scripts.
The boilerplate is shared by every page of a site, so an extractor that keeps it makes unrelated
pages of one site look alike; ``boilerplate_words`` lists it, to measure that.

``write_warc`` writes pages as WARC response records with warcio's writer (the ``test`` extra),
optionally with non-HTML responses, request and metadata records, and broken records.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .synth import pseudo_vocabulary, random_documents

__all__ = ["Page", "boilerplate_words", "site_pages", "write_warc"]


@dataclass(frozen=True)
class Page:
    """One generated page: URL, crawl date (ISO 8601, UTC), title, article text and full HTML."""

    url: str
    date: str
    title: str
    text: str
    html: str


def _headlines(rng: np.random.Generator, n: int, vocab: Sequence[str]) -> list[str]:
    return [
        " ".join(
            vocab[int(i)] for i in rng.integers(200, 4000, size=int(rng.integers(4, 8)))
        ).capitalize()
        for _ in range(n)
    ]


def _site_chrome(site_seed: int) -> tuple[str, str, str]:
    """(header+menu, sidebar+banner, footer+scripts) HTML shared by every page of a site."""
    rng = np.random.default_rng([site_seed, 71])
    vocab = pseudo_vocabulary(20000, 3)
    menu = "".join(
        f'<li><a href="/section/{i}">{html.escape(t)}</a></li>'
        for i, t in enumerate(_headlines(rng, 12, vocab))
    )
    related = "".join(
        f'<li><a href="/related/{i}">{html.escape(t)}</a></li>'
        for i, t in enumerate(_headlines(rng, 10, vocab))
    )
    header = (
        f'<header class="site-header"><div class="logo">{html.escape(vocab[5000].title())} '
        f'Daily</div><nav class="menu"><ul>{menu}</ul></nav></header>'
    )
    side = (
        '<aside class="sidebar"><h3>Related stories</h3><ul>'
        f"{related}</ul></aside>"
        '<div class="cookie-banner" id="cookies">We use cookies to improve your experience on '
        "our site. By continuing to browse you agree to our cookie policy. "
        "<button>Accept all cookies</button></div>"
    )
    footer = (
        '<footer class="site-footer"><p>Copyright 2024 Example Media Group. All rights '
        'reserved.</p><ul><li><a href="/about">About us</a></li><li><a href="/contact">Contact '
        'the newsroom</a></li><li><a href="/privacy">Privacy policy</a></li><li><a href="/terms">'
        "Terms of service</a></li></ul></footer>"
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)}"
        "</script>"
    )
    return header, side, footer


def boilerplate_words(site_seed: int = 0) -> str:
    """The visible text of a site's boilerplate (menu, sidebar, banner, footer), for measuring."""
    parts = _site_chrome(site_seed)
    text = re.sub(r"<script.*?</script>", " ", " ".join(parts), flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", text))


def page_html(text: str, title: str, url: str, date: str, site_seed: int = 0) -> str:
    """A complete HTML page with ``text`` (paragraphs split at blank lines) as its article."""
    header, side, footer = _site_chrome(site_seed)
    paras = "".join(f"<p>{html.escape(p.strip())}</p>" for p in text.split("\n\n") if p.strip())
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        f'<link rel="canonical" href="{html.escape(url)}">'
        f'<meta property="article:published_time" content="{date}">'
        "<style>body{font-family:sans-serif} .menu li{display:inline}</style></head><body>"
        f"{header}<main><article><h1>{html.escape(title)}</h1>{paras}</article></main>"
        f"{side}{footer}</body></html>\n"
    )


def site_pages(
    texts: Sequence[str], seed: int = 0, site: str = "https://news.example.com"
) -> list[Page]:
    """One page per text, all from one site (shared boilerplate), deterministic in ``seed``;
    a page's headline is its text's first words, so equal texts give equal pages."""
    rng = np.random.default_rng([seed, 72])
    vocab = pseudo_vocabulary(20000, 3)
    pages = []
    for i, text in enumerate(texts):
        words = re.findall(r"\w+", text)[:7] or [vocab[int(rng.integers(100, 3000))]]
        title = " ".join(words).capitalize()
        url = f"{site}/story/{i:06d}.html"
        date = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z"
        pages.append(Page(url, date, title, text, page_html(text, title, url, date, seed)))
    return pages


def random_pages(n: int, seed: int = 0, words: tuple[int, int] = (150, 600)) -> list[Page]:
    """``n`` pages with unrelated articles (``random_documents``) from one site."""
    return site_pages(random_documents(n, seed, words), seed)


def _write_request(writer: Any, page: Page) -> None:
    """A request record for ``page`` (as a crawler writes before the response)."""
    from warcio.statusandheaders import StatusAndHeaders

    req = StatusAndHeaders("GET / HTTP/1.1", [("Host", "news.example.com")], is_http_request=True)
    writer.write_record(
        writer.create_warc_record(
            page.url,
            "request",
            http_headers=req,
            warc_headers_dict={"WARC-Date": page.date},
        )
    )


def _write_response(
    writer: Any, url: str, date: str, ctype: str, body: bytes, *, sized: bool
) -> None:
    """A response record of ``body`` (an HTTP 200 of type ``ctype``; ``sized``: with a
    Content-Length header)."""
    from warcio.statusandheaders import StatusAndHeaders

    fields = [("Content-Type", ctype)]
    if sized:
        fields.append(("Content-Length", str(len(body))))
    headers = StatusAndHeaders("200 OK", fields, protocol="HTTP/1.1")
    writer.write_record(
        writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=headers,
            warc_headers_dict={"WARC-Date": date},
        )
    )


def write_warc(
    path: str | Path,
    pages: Sequence[Page],
    *,
    gzip: bool = True,
    extras: bool = False,
    broken: int = 0,
) -> None:
    """Write ``pages`` as WARC response records (``text/html; charset=utf-8``) to ``path``.

    ``extras`` adds a warcinfo record, a request record before each page, and a non-HTML
    (image/png) and a JSON response; ``broken`` appends that many response records whose HTTP
    header block is garbage. Needs warcio.
    """
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=gzip)
    if extras:
        writer.write_record(
            writer.create_warcinfo_record("crawl.warc", {"software": "neardup tests"})
        )
    for page in pages:
        if extras:
            _write_request(writer, page)
        _write_response(
            writer,
            page.url,
            page.date,
            "text/html; charset=utf-8",
            page.html.encode("utf-8"),
            sized=True,
        )
    if extras:
        for url, ctype, body in (
            ("https://news.example.com/logo.png", "image/png", b"\x89PNG\r\n\x1a\n" + bytes(64)),
            ("https://news.example.com/api.json", "application/json", b'{"a": 1}'),
        ):
            _write_response(writer, url, "2024-06-01T00:00:00Z", ctype, body, sized=False)
    for i in range(broken):
        buf.write(_broken_record(i, gzip))
    Path(path).write_bytes(buf.getvalue())


def _broken_record(i: int, gzip: bool) -> bytes:
    """A response record whose HTTP block is not HTTP (warcio's writer refuses to make one)."""
    import gzip as gz

    payload = b"this is not an HTTP response\x00\xff\r\n\r\n<html>broken</html>"
    head = (
        "WARC/1.0\r\nWARC-Type: response\r\n"
        f"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-{i:012d}>\r\n"
        "WARC-Date: 2024-06-01T00:00:00Z\r\n"
        f"WARC-Target-URI: https://news.example.com/broken/{i}\r\n"
        "Content-Type: application/http; msgtype=response\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    record = head + payload + b"\r\n\r\n"
    return gz.compress(record, mtime=0) if gzip else record
