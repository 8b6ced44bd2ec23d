"""WARC archives (``.warc``, ``.warc.gz``; WET: ``.wet``, ``.wet.gz``): each HTML
response and each conversion record's text is a document, id its WARC-Record-ID (or its URL),
key its URL or date."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from .._report import Entry, Problems
from .._warc import WARC_SUFFIXES, copy_kept_warc, scan_warc
from .base import Fields, Record
from .web import Pages


class Warc(Pages):
    """Web archives, read record by record with fastwarc."""

    name = "warc"
    unit = "record"
    suffixes = WARC_SUFFIXES
    id_is = "its WARC-Record-ID, or its URL with --id-field url"
    id_fields = ("id", "url")

    def records(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[Record]:
        return scan_warc(entry, fields.id, problems, fields.key)

    def copy_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO, fields: Fields
    ) -> None:
        copy_kept_warc(entry, keep, out, fields)


WARC = Warc()
