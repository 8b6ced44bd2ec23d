"""Bad-input bookkeeping: one input file's pass-1 record, and stop-or-skip handling of problems.

In "stop" mode a problem raises ``InputError`` naming the file, line (or row) and how to fix it;
in "skip" mode the record (or file) is dropped, counted by kind, and remembered by its record
number so that pass 2 drops exactly the same records and global positions never shift.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import InputError

_T = TypeVar("_T")

OnError = Literal["stop", "skip"]

# Kinds of problem. Record-level kinds count records; file-level kinds count files.
BAD_JSON = "bad_json"  # a JSONL line that is not valid JSON
NOT_OBJECT = "not_object"  # valid JSON, but not an object
MISSING_TEXT = "missing_text"  # the text field is absent
BAD_TEXT = "bad_text"  # the text field is not a string (number, null, list, ...)
BAD_ID = "bad_id"  # the id field is neither a string nor an integer
BAD_KEY = "bad_key"  # the key field (--keep-field) is unorderable or of another type than the first
INVALID_UTF8 = "invalid_utf8"  # bytes that do not decode as UTF-8
DUPLICATE_ID = "duplicate_id"  # an id already used by an earlier record (the later is dropped)
MISSING_FILE = "missing_file"  # an input path that does not exist (file level)
UNREADABLE = "unreadable"  # a file or folder that cannot be read or decoded (file level)
BAD_SCHEMA = "bad_schema"  # a Parquet file without a usable text column (file level)
TOO_LARGE = "too_large"  # a record (line, row, file, WARC record) over the record-size limit

#: Default largest record read (--max-record-size): a longer line is never held in memory.
MAX_RECORD_SIZE = 64 << 20

#: How many problem messages an ErrorReport keeps verbatim.
MAX_EXAMPLES = 5

_SKIP_HINT = "or use --on-error skip to skip and count such records"
#: Problems for which skipping is the wrong fix (a mistyped --text-field or path would skip
#: every record): their messages say only how to fix them.
_NO_SKIP_HINT = frozenset({"missing_text", "missing_file"})
#: Problems whose skipping does more than drop the record: their stop messages say what.
_KIND_SKIP_HINTS = {
    DUPLICATE_ID: "or use --on-error skip to keep the first record with each id and drop and "
    "count the later ones",
}


def stop_message(kind: str, message: str, skip_hint: bool = True) -> str:
    """The message a stop-mode problem raises: ``message`` and, when skipping is a fix, how."""
    if not skip_hint or kind in _NO_SKIP_HINT:
        return message
    return f"{message}, {_KIND_SKIP_HINTS.get(kind, _SKIP_HINT)}"


def skipped_line(report: Mapping[str, Any]) -> str:
    """The one line of a report that skipped something, from its JSON form
    (``ErrorReport.as_dict``): "skipped 1 problem (bad_json 1); first: ..."."""
    total = report["total"]
    kinds = ", ".join(f"{k} {n:,}" for k, n in sorted(report["counts"].items()))
    said = "problem" if total == 1 else "problems"
    return f"skipped {total:,} {said} ({kinds}); first: {report['examples'][0]}"


@dataclass
class ErrorReport:
    """Problems skipped in "skip" mode: counts by kind and the first few messages."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Number of problems (skipped records plus skipped files)."""
        return sum(self.counts.values())

    def add(self, kind: str, message: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(message)

    def summary(self) -> str:
        """One line for a log: "skipped 3 problems (bad_json 2, duplicate_id 1); first: ..."."""
        if not self.counts:
            return "no input problems"
        return skipped_line(self.as_dict())

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for a run report."""
        return {"total": self.total, "counts": dict(self.counts), "examples": list(self.examples)}


@dataclass
class Entry:
    """One input (file or stdin) and what pass 1 learned about it.

    ``skipped`` holds the 1-based record numbers (JSONL line, Parquet row) dropped in pass 1;
    ``start`` and ``n_docs`` give the contiguous range of global positions its documents took.
    ``spans`` (JSONL files read in blocks): each accepted record's byte range and first byte,
    as blocks of (starts, ends, firsts) arrays; None when pass 1 read the file line by line.
    """

    name: str  # as the user wrote it: used in messages and as the id of text files
    path: Path | None  # None for stdin until it is spooled
    #: What a record number counts in messages ("line", "row"); None: the file is one record.
    unit: str | None = "line"
    rel: Path | None = None  # text files: where a kept copy goes under the output folder
    stream: BinaryIO | None = None  # stdin (or another binary stream) read in pass 1
    stamp: tuple[int, int] | None = None  # (size, mtime_ns) seen in pass 1
    plain: bool = False  # a spool of lines already decompressed: never sniffed for gzip
    skipped: set[int] = field(default_factory=set)
    start: int = 0
    n_docs: int = 0
    spans: (
        list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint8]]] | None
    ) = None
    #: Whether pass 1 read the file through gzip (spans then count decompressed bytes).
    compressed: bool = False
    #: Opens the file's bytes when it is not a local path (a URL read through fsspec, or one
    #: block of a file on a cluster worker); None: ``path`` is opened.
    opener: Callable[[], BinaryIO] | None = None
    #: The largest record read, in bytes (a JSONL line without its newline, a Parquet text, a
    #: text or HTML file, a WARC record's block): a larger one is a ``too_large`` bad record.
    max_record: int = MAX_RECORD_SIZE
    #: Bytes [start, end) of the file this entry reads, on a cluster worker: a Parquet file's
    #: row groups that start there (a JSONL file's block is cut by its ``opener``); None: all.
    byte_range: tuple[int, int] | None = None

    def where(self, recno: int | None) -> str:
        if recno is None or self.unit is None:
            return self.name
        return f"{self.name} {self.unit} {recno}"

    def reset(self) -> None:
        self.skipped = set()
        self.start = 0
        self.n_docs = 0
        self.spans = None


class Problems:
    """Raise (stop) or count and remember (skip) each input problem."""

    def __init__(self, on_error: OnError, report: ErrorReport) -> None:
        self.on_error = on_error
        self.report = report

    def record(self, entry: Entry, recno: int, kind: str, problem: str, fix: str) -> None:
        """A bad record: raises in stop mode, else counts it and marks it skipped for pass 2."""
        message = f"{entry.where(recno)}: {problem}; {fix}"
        if self.on_error == "stop":
            raise InputError(stop_message(kind, message))
        self.report.add(kind, message)
        entry.skipped.add(recno)

    def file(self, entry: Entry, kind: str, problem: str, fix: str, skip_hint: bool = True) -> None:
        """A bad file (the rest of it is dropped): raises in stop mode, else counts it.
        ``skip_hint`` False: skipping is the wrong fix (a column named by an option is absent)."""
        message = f"{entry.name}: {problem}; {fix}"
        if self.on_error == "stop":
            raise InputError(stop_message(kind, message, skip_hint))
        self.report.add(kind, message)

    def opened(self, entry: Entry, opener: Callable[[], _T]) -> _T | None:
        """``opener()``, or None after reporting a missing or unreadable file (a bad file)."""
        try:
            return opener()
        except FileNotFoundError:
            self.file(entry, MISSING_FILE, "file not found", "check the path")
        except OSError as exc:
            self.file(entry, UNREADABLE, f"cannot read it ({exc.strerror or exc})", "check it")
        return None


def size_text(n: int) -> str:
    """Bytes for a message: "812 bytes", "64 MiB", "4.0 GiB"."""
    if n < 1 << 10:
        return f"{n} bytes"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            value = n / (1 << shift)
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"  # pragma: no cover - every n >= 1 KiB took a unit above


def too_large(size: int | None, limit: int) -> tuple[str, str, str]:
    """(kind, problem, fix) for a record over the size limit; ``size`` None when reading
    stopped at the limit, before the record's end."""
    most = size_text(limit)
    if size is None:
        problem = f"the record is longer than {most}, the --max-record-size limit"
    else:
        problem = f"the record is {size_text(size)}, over the --max-record-size limit of {most}"
    return TOO_LARGE, problem, "raise --max-record-size if such records are expected"


def duplicate_problem(rid: str, earlier: str, unit: str, absent: tuple[bool, bool]) -> str:
    """The problem of a record whose id (or name, when it has none) record ``earlier`` has;
    ``absent``: whether (this record, the earlier one) have no id and are named by number."""
    named = f"has no id and is named by its {unit} number"
    if absent[0]:
        return f"the record {named}, {rid!r}, which is already the id of {earlier}"
    if absent[1]:
        return f"id {rid!r} is already used by {earlier} (which {named})"
    return f"id {rid!r} is already used by {earlier}"


class RecordProblem(Exception):
    """Raised by a record parser; the scanner turns it into Problems.record(...)."""

    def __init__(self, kind: str, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.kind = kind
        self.problem = problem
        self.fix = fix


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for messages: "a number", "null", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover - json only makes the types above


def id_string(value: object, id_field: str) -> str:
    """An id value as a string: strings as they are, integers in decimal; else RecordProblem."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise RecordProblem(
        BAD_ID,
        f"field '{id_field}' is {json_type(value)}, not a string or integer",
        "store ids as strings or integers, or use --id-field to name another field",
    )


def fields_text(record: dict[str, object], most: int = 12) -> str:
    """The field names a record has, for a message: "id, text, url" (the first ``most``)."""
    names = [str(k) for k in record]
    shown = ", ".join(names[:most]) + (f", ... ({len(names)} fields)" if len(names) > most else "")
    return shown or "no fields"


def stat_stamp(st: os.stat_result) -> tuple[int, int]:
    """A file's stamp as pass 1 records it (``Entry.stamp``): its size and modification time
    in nanoseconds, which a file changed between the passes does not keep."""
    return st.st_size, st.st_mtime_ns


def raise_changed(entry: Entry) -> None:
    """Pass 2 found fewer records than pass 1: the input changed underneath us."""
    raise InputError(
        f"{entry.name}: the file changed between the two passes (pass 1 read {entry.n_docs} "
        "records); do not modify the input while neardup runs"
    )
