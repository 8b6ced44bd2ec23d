"""The ``Format`` protocol every input format implements, and what its methods share.

A format knows its file names, how to read one input in pass 1 (records, or blocks of records
for a reader that parses many at once), and how to write the kept records of its inputs in
pass 2, as they were or into a sink of another format. ``Source`` and the cluster backend only
call these methods; none of them asks for a format by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ...errors import ParamError
from .._atomic import Output
from .._report import Entry, Problems

if TYPE_CHECKING:
    from .._edit import Edit
    from .._jsonl_blocks import LineBlock
    from .._sinks import OutFmt, Sink

#: One record of pass 1: (record number, id or None, text, input bytes, raw key or None).
Record = tuple[int, str | None, str, int, object]
#: The kept flags of one input's accepted records (``part(entry)``), or of another mask.
Part = Callable[..., npt.NDArray[np.bool_]]
#: How a cluster run's blocks cut a file (``Format.cluster_blocks``).
ClusterBlocks = Literal["lines", "row groups"] | None


@dataclass(frozen=True, slots=True)
class Fields:
    """The fields a run reads: the text, the id, and the key (--keep-field) when asked; and
    whether there are several inputs, which names a record without an id."""

    text: str = "text"
    id: str = "id"
    key: str | None = None
    many: bool = False

    def default_id(self, name: str, recno: int) -> str:
        """The id of a record that has none: its number, ``NAME:NUMBER`` when there are several
        inputs, so that it is unique across them and passes 1 and 2 give the same."""
        return f"{name}:{recno}" if self.many else str(recno)


class Format(Protocol):
    """One input format: names, pass-1 reading, pass-2 writing."""

    @property
    def name(self) -> str:
        """The name ``--format`` takes and ``detect_format`` returns."""
        ...

    @property
    def unit(self) -> str | None:
        """What a record number counts in messages ("line", "row"); None: one document a file."""
        ...

    @property
    def default_out(self) -> OutFmt:
        """The output format ``-o -`` (or a stream) gets; "folder" for kept files copied."""
        ...

    @property
    def copies_as(self) -> OutFmt | None:
        """The output format ``write_kept`` writes records to as they are (else converted)."""
        ...

    @property
    def has_fields(self) -> bool:
        """Whether records have fields (a ``--keep-field``); plain text files have none."""
        ...

    @property
    def cluster_blocks(self) -> ClusterBlocks:
        """How a file is cut at byte offsets into parts of whole records, each read by
        ``blocks`` on its own (the cluster backend's blocks): "lines" (a part reads the lines
        that start in its bytes), "row groups" (the row groups that start there); None: a
        cluster does not read the format."""
        ...

    def check_fields(self, text: str, id: str) -> None:
        """ParamError for a text or id field (--text-field, --id-field) the format cannot
        honour, before any input is read, rather than ignoring it."""
        ...

    def reads_again(self, entry: Entry) -> bool:
        """Whether ``texts_at`` reads this input's records again one by one, cheaply (else the
        source keeps every text in a spool at its first re-read)."""
        ...

    def will_read_again(self, entry: Entry, fields: Fields) -> bool:
        """Before pass 1 reads the input: whether ``reads_again`` will say so after it (if not,
        a source told to keep texts spools them as pass 1 reads them)."""
        ...

    def detect(self, name: str) -> bool:
        """Whether a file called ``name`` (lower case) holds this format."""
        ...

    def reads_blocks(self, entry: Entry, fields: Fields) -> bool:
        """Whether ``blocks`` reads this input (else ``records``)."""
        ...

    def blocks(
        self,
        entry: Entry,
        fields: Fields,
        problems: Problems,
        chunk: int | None = None,
        memo: object = None,
    ) -> Iterator[LineBlock]:
        """Pass 1 in blocks: the records as arrays of ids, texts and byte spans (``memo``: as
        for ``records``)."""
        ...

    def memo(self) -> object:
        """What pass 1 learns across inputs and pass 2 needs (Parquet: the first schema)."""
        ...

    def records(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[Record]:
        """Pass 1 one record at a time."""
        ...

    def texts_at(
        self, entry: Entry, local: npt.NDArray[np.int64], fields: Fields, jobs: int
    ) -> list[str]:
        """The texts of the input's accepted records ``local`` (0-based, sorted) read again."""
        ...

    def write_kept(
        self, entries: list[Entry], part: Part, out: Output, fields: Fields, memo: object
    ) -> None:
        """Pass 2: every input's kept records, as they were, to ``out``."""
        ...

    def convert_kept(
        self, entry: Entry, keep: npt.NDArray[np.bool_], sink: Sink, fields: Fields
    ) -> None:
        """Pass 2: one input's kept records, every field, into a sink of another format."""
        ...

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
        """Pass 2 with the changed records' texts edited, in the format itself."""
        ...


class RecordFormat:
    """What most formats share: a suffix list, no block reader, no memo, no single-record
    reads, and no edited output."""

    name: str
    suffixes: tuple[str, ...]
    unit: str | None = "line"
    default_out: OutFmt = "jsonl"
    copies_as: OutFmt | None = "jsonl"
    has_fields: bool = True
    cluster_blocks: ClusterBlocks = None

    def detect(self, name: str) -> bool:
        return name.endswith(self.suffixes)

    def check_fields(self, text: str, id: str) -> None:
        return None

    def reads_blocks(self, entry: Entry, fields: Fields) -> bool:
        return False

    def blocks(
        self,
        entry: Entry,
        fields: Fields,
        problems: Problems,
        chunk: int | None = None,
        memo: object = None,
    ) -> Iterator[LineBlock]:
        raise NotImplementedError(f"{self.name} is read record by record")

    def memo(self) -> object:
        return None

    def reads_again(self, entry: Entry) -> bool:
        return False

    def will_read_again(self, entry: Entry, fields: Fields) -> bool:
        return False

    def texts_at(
        self, entry: Entry, local: npt.NDArray[np.int64], fields: Fields, jobs: int
    ) -> list[str]:
        raise NotImplementedError(f"{self.name} records are not read again one by one")

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
        raise ParamError(f"{self.name} input cannot be written with edited texts")


class ArrowFormat(RecordFormat):
    """Formats read as Arrow record batches (Parquet, CSV, TSV): pass 1 in blocks over Arrow's
    own buffers (``arrow_blocks``), unless a key field asks for the rows one by one."""

    def reads_blocks(self, entry: Entry, fields: Fields) -> bool:
        return entry.path is not None and fields.key is None

    def blocks(
        self,
        entry: Entry,
        fields: Fields,
        problems: Problems,
        chunk: int | None = None,
        memo: object = None,
    ) -> Iterator[LineBlock]:
        return self.arrow_blocks(entry, fields, problems, memo)

    def arrow_blocks(
        self, entry: Entry, fields: Fields, problems: Problems, memo: object
    ) -> Iterator[LineBlock]:
        """The file's record batches as blocks (``io/_arrow_blocks.py``)."""
        raise NotImplementedError


__all__ = [
    "ArrowFormat",
    "ClusterBlocks",
    "Fields",
    "Format",
    "Part",
    "Record",
    "RecordFormat",
]
