"""What the web formats (WARC archives, HTML files) share: kept pages are written as JSON Lines
``{"id", "url", "date", "text"}``, their text extracted again from the page."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, BinaryIO, cast

import numpy as np
import numpy.typing as npt

from .._atomic import Output, open_output
from .._report import Entry
from .._sinks import LineRecords
from .base import Fields, Part, RecordFormat

if TYPE_CHECKING:
    from .._sinks import Sink


class Pages(RecordFormat, ABC):
    """Pages whose main text is extracted; the kept ones become JSON Lines."""

    @abstractmethod
    def copy_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO, fields: Fields
    ) -> None:
        """One input's kept pages as JSON Lines into ``out``."""

    def write_kept(
        self, entries: list[Entry], part: Part, out: Output, fields: Fields, memo: object
    ) -> None:
        with open_output(out) as handle:
            for entry in entries:
                self.copy_kept(entry, part(entry), handle, fields)

    def convert_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], sink: Sink, fields: Fields
    ) -> None:
        lines = LineRecords(sink.write)
        self.copy_kept(entry, keep, cast(BinaryIO, lines), fields)
        lines.close()
