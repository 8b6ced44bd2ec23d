"""The web formats' hook into ``Source``: name -> "warc" | "html"; their pass-1 scan and pass-2
writer (kept pages as JSON Lines ``{"id", "url", "date", "text"}``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from ._html import HTML_SUFFIXES, copy_kept_html, scan_html
from ._report import Entry, Problems
from ._warc import WARC_SUFFIXES, copy_kept_warc, scan_warc

WEB_FORMATS = ("warc", "html")


def web_format(name: str) -> str | None:
    """ "warc" or "html" for a file name with such an ending (lower case), else None."""
    if name.endswith(WARC_SUFFIXES):
        return "warc"
    if name.endswith(HTML_SUFFIXES):
        return "html"
    return None


def web_scan(
    fmt: str, entry: Entry, id_field: str, problems: Problems, key_field: str | None
) -> Iterator[tuple[int, str | None, str, int, object]]:
    """Pass 1 of one WARC or HTML file (see ``scan_warc`` and ``scan_html``)."""
    if fmt == "warc":
        return scan_warc(entry, id_field, problems, key_field)
    return scan_html(entry, problems, key_field)


def web_write_kept(
    fmt: str, entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO, id_field: str
) -> None:
    """Pass 2 of one WARC or HTML file: its kept pages as JSON Lines."""
    if fmt == "warc":
        copy_kept_warc(entry, keep, out, id_field)
    else:
        copy_kept_html(entry, keep, out)
