"""Plain text files: one file, one document (id = its path); kept files copied, unchanged, into
an output folder under their paths relative to the inputs' common folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ...errors import ParamError
from .._atomic import Output, atomic_dir
from .._edit import edit_text
from .._report import Entry, Problems
from .._text import copy_kept_text, scan_text
from .base import Fields, Part, Record, RecordFormat

if TYPE_CHECKING:
    from .._edit import Edit
    from .._sinks import OutFmt, Sink

#: Names read as one text document each; a file without a suffix is text too.
SUFFIXES = (".txt", ".text", ".md", ".rst")


class Text(RecordFormat):
    """UTF-8 files read whole; they have no fields, so no key."""

    name = "text"
    suffixes = SUFFIXES
    unit: str | None = None
    default_out: OutFmt = "folder"
    copies_as: OutFmt | None = "folder"
    has_fields: bool = False

    def detect(self, name: str) -> bool:
        return name.endswith(SUFFIXES) or "." not in name.lstrip(".")

    def records(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[Record]:
        return scan_text(entry, problems)

    def write_kept(
        self, entries: list[Entry], part: Part, out: Output, fields: Fields, memo: object
    ) -> None:
        """A copy of each kept file in the new (or empty) folder ``out``."""
        with atomic_dir(folder_of(out)) as folder:
            for entry in entries:
                copy_kept_text(entry, part(entry), folder)

    def convert_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], sink: Sink, fields: Fields
    ) -> None:
        """The file as ``{id: path, text: content}`` when kept."""
        if entry.n_docs and keep[0] and entry.path is not None:
            text = entry.path.read_bytes().decode("utf-8")
            sink.write([{fields.id: entry.name, fields.text: text}])

    def write_edited(
        self,
        entries: list[Entry],
        part: Part,
        changed: npt.NDArray[np.bool_],
        edit: Edit,
        out: Output,
        fields: Fields,
        memo: object,
    ) -> None:
        with atomic_dir(folder_of(out)) as folder:
            for entry in entries:
                edit_text(entry, part(entry), part(entry, changed), edit, folder)


def folder_of(out: Output) -> str | Path:
    """``out`` as a folder to copy kept files into; ParamError for a stream or ``-``."""
    if not isinstance(out, str | Path) or str(out) == "-":
        raise ParamError("text-file input writes kept files to a folder: name one")
    return out


TEXT = Text()
