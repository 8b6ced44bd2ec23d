"""HTML files (``.html``, ``.htm``, ``.xhtml``): one page each, id its path, text its main
content, key its canonical URL or date."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from .._html import HTML_SUFFIXES, copy_kept_html, scan_html
from .._report import Entry, Problems
from .base import Fields, Record
from .web import Pages


class Html(Pages):
    """Saved web pages, one document per file."""

    name = "html"
    suffixes = HTML_SUFFIXES
    id_is = "its path"
    unit: str | None = None  # a file is one record: messages name the file alone

    def records(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[Record]:
        return scan_html(entry, problems, fields.key)

    def copy_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO, fields: Fields
    ) -> None:
        copy_kept_html(entry, keep, out)


HTML = Html()
