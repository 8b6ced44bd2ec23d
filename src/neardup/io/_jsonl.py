"""JSON Lines in and out: bytes of one line -> (id, text, key); pass 2 copies kept lines verbatim.

Plain and gzip files are told apart by the gzip magic bytes, not the name. Blank lines (empty or
ASCII whitespace only) are not records: both passes ignore them, and they still count toward line
numbers. ``orjson`` is used when installed, with the standard ``json`` module as the judge of
any line it rejects, so the accepted records and the messages do not depend on it. A UTF-8
byte-order mark opening a line is accepted and is no part of its record: pass 2 leaves it out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from ._gzip import GZIP_ERRORS, gzip_reader
from ._report import (
    BAD_JSON,
    BAD_TEXT,
    INVALID_UTF8,
    MISSING_TEXT,
    NOT_OBJECT,
    UNREADABLE,
    Entry,
    Problems,
    RecordProblem,
    fields_text,
    id_string,
    json_type,
    raise_changed,
    too_large,
)

_fast_loads: Callable[[bytes], Any] | None
try:  # optional speed-up; never required
    import orjson

    _fast_loads = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None

_MISSING = object()
#: Bytes read at a time while streaming past a line over the record-size limit.
_SKIP_PIECE = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
#: A UTF-8 byte-order mark: accepted before a record (the reader ignores it), never part of it.
UTF8_BOM = b"\xef\xbb\xbf"
_READ_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, *GZIP_ERRORS)


def record_bytes(line: bytes) -> bytes:
    """An accepted record's line without the byte-order mark the reader lets open it, so no
    output copies the mark into the middle of a file."""
    return line.removeprefix(UTF8_BOM)


def parse_record(
    line: bytes, text_field: str, id_field: str, key_field: str | None = None
) -> tuple[str | None, str, object]:
    """One JSONL line -> (id or None when the id field is absent, text, raw value of
    ``key_field`` or None when it is absent or not asked for); else RecordProblem."""
    obj: Any = _MISSING
    if _fast_loads is not None:
        try:
            obj = _fast_loads(line)
        except Exception:  # the standard library decides and explains below
            obj = _MISSING
        if isinstance(obj, dict) and (
            isinstance(obj.get(id_field), float)
            or (key_field is not None and isinstance(obj.get(key_field), float))
        ):  # orjson reads an integer past 64 bits as a float: the standard library reads it
            obj = _MISSING
    if obj is _MISSING:
        obj = _loads_explained(line)
    if not isinstance(obj, dict):
        raise RecordProblem(
            NOT_OBJECT,
            f"the line holds {json_type(obj)}, not a JSON object",
            'write one object per line, e.g. {"id": "a1", "text": "..."}',
        )
    text = obj.get(text_field, _MISSING)
    if text is _MISSING:
        raise RecordProblem(
            MISSING_TEXT,
            f"field '{text_field}' is missing (the record has: {fields_text(obj)})",
            "use --text-field to name the field that holds the text",
        )
    if not isinstance(text, str):
        raise RecordProblem(
            BAD_TEXT,
            f"field '{text_field}' is {json_type(text)}, not a string",
            "store the text as a JSON string, or use --text-field to name another field",
        )
    rid = obj.get(id_field, _MISSING)
    key = None if key_field is None else obj.get(key_field)
    return (None if rid is _MISSING else id_string(rid, id_field)), text, key


def _loads_explained(line: bytes) -> Any:
    """The standard library's reading of a line, or RecordProblem saying what is wrong."""
    try:
        decoded = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordProblem(
            INVALID_UTF8,
            f"invalid UTF-8 at byte {exc.start + 1} of the line",
            "re-encode the file as UTF-8",
        ) from None
    try:  # without the line's end, so a line cut short is wrong where the line ends
        return json.loads(decoded.removeprefix("\ufeff").removesuffix("\n").removesuffix("\r"))
    except json.JSONDecodeError as exc:
        raise RecordProblem(
            BAD_JSON,
            f"not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})",
            "fix the line so it holds exactly one JSON object",
        ) from None
    except RecursionError:  # hostile records are bad records, never a crash
        raise RecordProblem(
            BAD_JSON,
            "JSON nested too deeply to read",
            "flatten the record's arrays and objects",
        ) from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit
        raise RecordProblem(
            BAD_JSON,
            f"a value cannot be read ({_first_line(exc)})",
            "store huge numbers as strings",
        ) from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(":;.") if text else type(exc).__name__


def open_jsonl(entry: Entry) -> BinaryIO:
    """Open a JSONL file for reading bytes, decompressing gzip if its first bytes say so."""
    if entry.opener is not None:
        raw = entry.opener()
    elif entry.path is None:  # pragma: no cover - streams are read through entry.stream
        raise RuntimeError(f"{entry.name} has no file to open")
    else:
        raw = open(entry.path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    try:
        magic = raw.read(2)
        raw.seek(0)
    except BaseException:
        raw.close()
        raise
    if magic == _GZIP_MAGIC and not entry.plain:
        return gzip_reader(raw, close_raw=True)
    return raw


def is_gzip(entry: Entry) -> bool:
    """Whether the input's file starts with gzip's magic bytes (False for a stream, a spool of
    lines, or a file that cannot be opened: pass 1 reports that)."""
    if entry.plain or entry.path is None or entry.stream is not None:
        return False
    try:
        with open(entry.path, "rb") as fh:
            return fh.read(2) == _GZIP_MAGIC
    except OSError:
        return False


def _gunzip_stream(stream: BinaryIO) -> BinaryIO:
    """A stream (stdin, a pipe), decompressed if its first bytes are the gzip magic."""
    peek = getattr(stream, "peek", None)
    if peek is not None and peek(2)[:2] == _GZIP_MAGIC:
        return gzip_reader(stream)
    return stream


def scan_jsonl(
    entry: Entry,
    text_field: str,
    id_field: str,
    problems: Problems,
    tee: BinaryIO | None = None,
    key_field: str | None = None,
) -> Iterator[tuple[int, str | None, str, int, object]]:
    """Pass 1: yield (line number, id or None, text, line bytes, raw key or None) for each good
    record; the key is the JSON value of ``key_field`` (None when absent or not asked for).

    Bad records go to ``problems``; ``tee`` receives every line read (the stdin spool).
    """
    handle = problems.opened(
        entry, lambda: open_jsonl(entry) if entry.stream is None else _gunzip_stream(entry.stream)
    )
    if handle is None:
        return
    recno = 0
    try:
        for line in read_lines(handle, entry, problems):
            recno += 1
            if isinstance(line, LongLine):
                report_long_line(entry, recno, line, problems)
                if tee is not None:  # a blank line in its place keeps the line numbers
                    tee.write(b"\n")
                continue
            if tee is not None:
                tee.write(line)
            if not line.strip():
                continue
            try:
                rid, text, key = parse_record(line, text_field, id_field, key_field)
            except RecordProblem as p:
                problems.record(entry, recno, p.kind, p.problem, p.fix)
                continue
            yield recno, rid, text, len(record_bytes(line)), key
    finally:
        if entry.stream is None:
            handle.close()


class LongLine:
    """A line over the record-size limit, met after reading ``limit + 1`` bytes of it: the
    rest is streamed past by ``skip()`` (or before the next line is read), never held."""

    def __init__(self, readline: Callable[[int], bytes], read: int) -> None:
        self._readline = readline
        self.size = read  # bytes of the line, its newline not counted, once skipped
        self.done = False
        #: A read error met while streaming past the line (the file ends there).
        self.error: Exception | None = None

    def skip(self) -> int:
        """Read to the end of the line; its size in bytes without the newline (so far, when a
        read error ends it: kept in ``error``)."""
        while not self.done:
            try:
                piece = self._readline(_SKIP_PIECE)
            except _READ_ERRORS as exc:
                self.error = exc
                self.done = True
                break
            if piece.endswith(b"\n"):
                self.size += len(piece) - 1
                self.done = True
            else:
                self.size += len(piece)
                self.done = not piece
        return self.size


def bounded_lines(handle: Any, limit: int) -> Iterator[bytes | LongLine]:
    """The handle's lines as ``for line in handle`` gives them, except that a line longer than
    ``limit`` bytes (its newline not counted) comes as a LongLine and is never held whole."""
    readline = handle.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        long = LongLine(readline, len(line))
        yield long
        long.skip()  # the consumer may have skipped it already; then this reads nothing
        if long.error is not None:
            raise long.error


def report_long_line(entry: Entry, recno: int, line: LongLine, problems: Problems) -> None:
    """A bad record for a line over the limit: at once in "stop" mode (reading ends at the
    limit), after streaming past it (to give its size) in "skip" mode."""
    size = None if problems.on_error == "stop" else line.skip()
    problems.record(entry, recno, *too_large(size, entry.max_record))


def read_lines(handle: Any, entry: Entry, problems: Problems) -> Iterator[bytes | LongLine]:
    """The file's lines (LongLine for one over ``entry.max_record``); a read error (damaged
    gzip, I/O) ends them with one message naming the last line read whole, "reading failed
    after line N"."""
    recno = 0
    lines = bounded_lines(handle, entry.max_record)
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except _READ_ERRORS as exc:
            problems.file(
                entry,
                UNREADABLE,
                f"reading failed after line {recno} ({exc})",
                "repair or re-create the file",
            )
            return
        recno += 1
        yield line


def _accepted_lines(entry: Entry) -> Generator[bytes, None, None]:
    """Pass 2: the lines of the file's accepted records (``record_bytes``), in order, by the
    same tests as pass 1 (blank lines and the record numbers skipped there are passed over).
    Stops after the last accepted record, so a file truncated after it reads the same as in
    pass 1; raises when the file holds fewer (it changed between the passes)."""
    remaining = entry.n_docs
    if remaining == 0:
        return
    skipped = entry.skipped
    with open_jsonl(entry) as handle:
        recno = 0
        for line in bounded_lines(handle, entry.max_record):
            recno += 1
            if isinstance(line, LongLine):
                if recno not in skipped:  # under the limit in pass 1
                    raise_changed(entry)
                continue
            if not line.strip() or recno in skipped:
                continue
            yield record_bytes(line)
            remaining -= 1
            if remaining == 0:
                return
    raise_changed(entry)


def copy_kept_jsonl(entry: Entry, keep: npt.NDArray[np.bool_], out: BinaryIO) -> None:
    """Pass 2: write the lines of the file's kept documents to ``out``, byte for byte but a
    leading byte-order mark (``keep[i]`` is for the file's i-th accepted record)."""
    for line, flag in zip(_accepted_lines(entry), keep.tolist(), strict=False):
        if flag:
            out.write(line if line.endswith(b"\n") else line + b"\n")
