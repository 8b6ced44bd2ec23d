"""What the web formats (WARC archives, HTML files) share: kept pages are written as JSON Lines
``{"id", "url", "date", "text"}``, their text extracted again from the page."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, BinaryIO, cast

import numpy as np
import numpy.typing as npt

from ...errors import ParamError
from .._atomic import Output, open_output
from .._report import Entry
from .._sinks import LineRecords
from .base import Fields, Part, RecordFormat

if TYPE_CHECKING:
    from .._sinks import Sink


#: The one text field pages have (``--text-field``'s default): their main text.
PAGE_TEXT = "text"


class Pages(RecordFormat, ABC):
    """Pages whose main text is extracted; the kept ones become JSON Lines."""

    #: What a document's id is, for the message refusing another --id-field.
    id_is: str
    #: The --id-field values the format honours ("id": its own id).
    id_fields: tuple[str, ...] = ("id",)

    def check_fields(self, text: str, id: str) -> None:
        """Pages have no fields to choose from: the text is the page's main text, the id is
        the format's own (``id_fields``); another --text-field or --id-field is refused."""
        if text != PAGE_TEXT:
            raise ParamError(
                f"--text-field {text!r}: {self.name} input has no text field to choose, a "
                "document's text is its page's main text; drop --text-field"
            )
        if id not in self.id_fields:
            raise ParamError(
                f"--id-field {id!r}: {self.name} input has no id field to choose, a document's "
                f"id is {self.id_is}; drop --id-field"
            )

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
