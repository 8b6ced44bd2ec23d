"""JSONL files -> blocks of records parsed by a kernel; kept records and chosen texts by byte span.

Pass 1 reads a file in chunks of whole lines and parses each chunk with
``_kernels.jsonl.parse_lines`` (no Python object per line, no GIL), so reading runs beside the
other kernels. Lines the kernel does not vouch for go to ``_jsonl.parse_record``, the judge of
every record, so accepted records, ids, texts and error messages (line numbers included) are
those of the line-by-line reader. Each accepted record's byte span in the (decompressed) file is
remembered, so pass 2 copies the kept lines as runs of bytes and re-reads only the lines it
needs instead of walking every line in Python. A record's span starts after a byte-order mark
opening its line, so no output copies the mark.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import BinaryIO, cast

import numpy as np
import numpy.typing as npt

from .._types import IntArray
from ..text import Utf8Texts
from ._gzip import GZIP_ERRORS, decompresses
from ._jsonl import UTF8_BOM, LongLine, open_jsonl, parse_record, read_lines, report_long_line
from ._kernel_copy import copied_by_kernel
from ._report import Entry, Problems, RecordProblem, raise_changed, too_large

#: Bytes read per chunk (whole lines are parsed; a longer line extends its chunk).
CHUNK = 8 << 20
#: A gap between wanted ranges longer than this is skipped by a seek rather than read: reading
#: a short gap costs less than another read call, reading a long one more.
SKIP_BYTES = 64 << 10
_READ_ERRORS: tuple[type[Exception], ...] = (OSError, EOFError, *GZIP_ERRORS)

Bytes = npt.NDArray[np.uint8]


@dataclass
class LineBlock:
    """Records of consecutive lines: line numbers, ids (UTF-8, no Python string each;
    ``absent`` marks records without an id field, whose id is empty here), texts, byte spans
    (``starts``, ``ends`` in the decompressed file; a record starts after a byte-order mark)
    and first bytes (pass 2 checks them), and the bad lines among them, in order, as
    ``(line number, kind, problem, fix)`` to report."""

    recnos: IntArray
    ids: Utf8Texts
    absent: npt.NDArray[np.bool_]
    texts: Utf8Texts
    starts: IntArray
    ends: IntArray
    firsts: npt.NDArray[np.uint8]
    problems: list[tuple[int, str, str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.recnos)

    def id_list(self) -> list[str | None]:
        """The ids as Python strings, None where the record had no id field."""
        ids: list[str | None] = list(self.ids)
        for i in np.flatnonzero(self.absent).tolist():
            ids[i] = None
        return ids

    def take(self, rows: IntArray) -> LineBlock:
        """The records ``rows`` (sorted indices); problems are not carried."""
        return LineBlock(
            self.recnos[rows],
            self.ids.take(rows),
            self.absent[rows],
            self.texts.take(rows),
            self.starts[rows],
            self.ends[rows],
            self.firsts[rows],
        )


def _key_bytes(name: str) -> npt.NDArray[np.uint8]:
    return np.frombuffer(name.encode("utf-8", "surrogatepass"), dtype=np.uint8)


def read_runs(starts: IntArray, ends: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """(run starts, run ends, each range's run) of byte ranges (ascending, not overlapping)
    grouped into runs whose ranges are at most SKIP_BYTES apart: each run is read in one go,
    a longer gap sought over."""
    new = np.r_[True, starts[1:] - ends[:-1] > SKIP_BYTES]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(ends) - 1]
    return starts[first], ends[last], np.cumsum(new) - 1


def _kernels() -> tuple[ModuleType, ModuleType, ModuleType]:
    """The kernel modules this reader calls (``_jit``, ``jsonl``, ``ranges``), imported when
    the first block is read: Numba loads then, not at import, and after the kernel mode is set."""
    from .._kernels import _jit, jsonl, ranges

    return _jit, jsonl, ranges


def _lines_for_python(
    data: bytes, newlines: IntArray
) -> tuple[IntArray, Bytes, IntArray, Bytes, IntArray, Bytes, Bytes]:
    """``parse_lines``' answer with every non-blank line marked ASK_PYTHON: with interpreted
    kernels (a small run), the Python parser, which any line can be left to, is the faster."""
    _k = _kernels()[1]
    ends = newlines + 1
    if data and data[-1] != 0x0A:
        ends = np.append(ends, len(data))
    lines = data.split(b"\n")[: len(ends)]  # a final newline leaves an empty piece: dropped
    status = np.array([_k.ASK_PYTHON if x.strip() else _k.BLANK for x in lines], dtype=np.uint8)
    zeros = np.zeros(len(ends), dtype=np.int64)
    absent = np.full(len(ends), _k.ID_ABSENT, dtype=np.uint8)
    empty = np.zeros(0, dtype=np.uint8)
    return ends, status, zeros, absent, zeros, empty, empty


#: Bytes a process parses with the Python parser while ``parse_lines`` is not compiled yet (no
#: copy in Numba's cache): compiling it is about half of a first run's wait, while parsing this
#: much in Python is a small part of it; the records are the same either way.
PYTHON_PARSE_BYTES = 16 << 20
_python_parsed = 0  # bytes this process parsed in Python instead of compiling parse_lines


def _parse_in_python(nbytes: int) -> bool:
    """Whether a block of ``nbytes`` goes to the Python parser: ``parse_lines`` is neither
    compiled in this process nor cached, and the process's Python budget holds the block."""
    global _python_parsed
    _jit, _k, _ = _kernels()

    if _python_parsed + nbytes > PYTHON_PARSE_BYTES or getattr(_k.parse_lines, "overloads", {1: 1}):
        return False
    if _jit.uncached(["jsonl"], ["parse_lines"]) == []:
        return False
    _python_parsed += nbytes
    return True


def parse_block(
    data: bytes,
    text_field: str,
    id_field: str,
    first_recno: int,
    offset: int,
    limit: int | None = None,
) -> tuple[LineBlock, int]:
    """Whole lines ``data`` (the first is line ``first_recno``, at byte ``offset`` of the file)
    -> (their records, number of lines); a line over ``limit`` bytes (its newline not counted)
    is a ``too_large`` bad line."""
    _jit, _k, _ = _kernels()
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 0x0A)
    if _jit.mode() == "python" or _parse_in_python(len(data)):
        ends, status, t_ends, id_kinds, i_ends, tbuf, ibuf = _lines_for_python(data, newlines)
    else:
        ends, status, t_ends, id_kinds, i_ends, tbuf, ibuf = _k.parse_lines(
            buf, newlines, _key_bytes(text_field), _key_bytes(id_field)
        )
    n_lines = len(ends)
    starts = np.zeros(n_lines, dtype=np.int64)
    starts[1:] = ends[:-1]
    problems: list[tuple[int, str, str, str]] = []
    over = np.zeros(0, dtype=np.int64)
    if limit is not None:
        sizes = ends - starts - (buf[ends - 1] == 0x0A)
        over = np.flatnonzero(sizes > limit)
        for j in over.tolist():
            problems.append((first_recno + j, *too_large(int(sizes[j]), limit)))
    rec = np.flatnonzero(status == _k.RECORD)
    t_off = np.zeros(len(rec) + 1, dtype=np.int64)
    t_off[1:] = t_ends[rec]
    i_off = np.zeros(len(rec) + 1, dtype=np.int64)
    i_off[1:] = i_ends[rec]
    texts = Utf8Texts(tbuf, t_off)
    ids = Utf8Texts(ibuf, i_off)
    absent = id_kinds[rec] == _k.ID_ABSENT
    if len(over):  # lines over the limit are bad lines, neither records nor Python's to judge
        status = status.copy()
        status[over] = _k.BLANK
        fine = np.flatnonzero(status[rec] == _k.RECORD)
        rec, texts, ids, absent = rec[fine], texts.take(fine), ids.take(fine), absent[fine]
    rows = rec
    ask = np.flatnonzero(status == _k.ASK_PYTHON)
    if len(ask):  # the Python parser decides (and explains) these lines
        lines = [data[starts[j] : ends[j]] for j in ask.tolist()]
        more = _python_records(lines, ask, text_field, id_field, first_recno, problems)
        rows, ids, texts, absent = _merged((rec, ids, texts, absent), more)
    problems.sort(key=lambda p: p[0])  # too-large lines among the parser's, in line order
    at = _record_starts(buf, starts[rows])
    block = LineBlock(
        rows + first_recno, ids, absent, texts, at + offset, ends[rows] + offset, buf[at], problems
    )
    return block, n_lines


def _record_starts(buf: Bytes, starts: IntArray) -> IntArray:
    """Where the accepted records on lines ``starts`` begin: after a byte-order mark opening
    the line (no part of the record), so no span copies it into an output."""
    at = starts.copy()
    for i in np.flatnonzero(buf[starts] == UTF8_BOM[0]).tolist():  # rare: a loop is enough
        if buf[at[i] : at[i] + len(UTF8_BOM)].tobytes() == UTF8_BOM:
            at[i] += len(UTF8_BOM)
    return at


_Parsed = tuple[IntArray, Utf8Texts, Utf8Texts, npt.NDArray[np.bool_]]


def _python_records(
    lines: list[bytes],
    where: IntArray,
    text_field: str,
    id_field: str,
    first: int,
    problems: list[tuple[int, str, str, str]],
) -> _Parsed:
    """``lines`` (at line indices ``where``) parsed by the Python parser: their records as
    (line indices, ids, texts, absent ids); bad lines appended to ``problems``."""
    rows: list[int] = []
    ids: list[str | None] = []
    texts: list[str] = []
    for j, line in zip(where.tolist(), lines, strict=True):
        try:
            rid, text, _ = parse_record(line, text_field, id_field)
        except RecordProblem as p:
            problems.append((first + j, p.kind, p.problem, p.fix))
            continue
        rows.append(j)
        ids.append(rid)
        texts.append(text)
    return (
        np.asarray(rows, dtype=np.int64),
        Utf8Texts.from_strings([rid or "" for rid in ids]),
        Utf8Texts.from_strings(texts),
        np.asarray([rid is None for rid in ids], dtype=np.bool_),
    )


def _merged(kernel: _Parsed, python: _Parsed) -> _Parsed:
    """The records the kernel and the Python parser read, in line order."""
    if not len(python[0]):
        return kernel
    rows = np.concatenate([kernel[0], python[0]])
    order = np.argsort(rows, kind="stable")
    return (
        rows[order],
        Utf8Texts.concat([kernel[1], python[1]]).take(order),
        Utf8Texts.concat([kernel[2], python[2]]).take(order),
        np.concatenate([kernel[3], python[3]])[order],
    )


def scan_jsonl_blocks(
    entry: Entry, text_field: str, id_field: str, problems: Problems, chunk: int | None = None
) -> Iterator[LineBlock]:
    """Pass 1 over a JSONL file in blocks of records (see the module docstring). A read error
    is reported as the line-by-line reader reports it, after the same records. A line over
    ``entry.max_record`` is never held whole: reading stops there ("stop") or streams past it
    ("skip"), so memory stays bounded by the limit plus a chunk whatever the file holds."""
    handle = problems.opened(entry, lambda: open_jsonl(entry))
    if handle is None:
        return
    entry.compressed = decompresses(handle)
    chunks = _WholeLines(handle, entry, problems, chunk or CHUNK)  # CHUNK read now: tests set it
    try:
        for whole in chunks:
            block, n_lines = parse_block(
                whole, text_field, id_field, chunks.lines + 1, chunks.offset, entry.max_record
            )
            chunks.lines += n_lines
            chunks.offset += len(whole)
            if len(block) or block.problems:
                yield block
        if chunks.failed:
            handle.close()
            yield from _after_read_error(
                entry, text_field, id_field, problems, chunks.lines, chunks.offset
            )
    finally:
        handle.close()


class _WholeLines:
    """A JSONL file's bytes in chunks of whole lines, about ``chunk`` bytes each (a longer
    line extends its chunk). A line over ``entry.max_record`` is never held: it is reported
    as ``too_large`` and streamed past. ``lines`` and ``offset`` count the lines and bytes
    before the next chunk (the reader adds each chunk's once it has parsed it); ``failed``
    says reading stopped at a read error."""

    def __init__(self, handle: BinaryIO, entry: Entry, problems: Problems, chunk: int) -> None:
        self.handle = handle
        self.entry = entry
        self.problems = problems
        self.chunk = chunk
        self.lines = 0
        self.offset = 0
        self.failed = False

    def __iter__(self) -> Iterator[bytes]:
        limit = self.entry.max_record
        pieces: list[bytes] = []  # the start of a line longer than what was read so far
        held = 0  # bytes in pieces
        passing = -1  # >= 0: bytes of line ``lines`` passed so far, over the limit ("skip")
        while True:
            try:
                data = self.handle.read(self.chunk)
            except _READ_ERRORS:
                self.failed = True
                return
            if passing >= 0:  # streaming past a line over the limit, to its newline
                nl = data.find(b"\n")
                if data and nl < 0:
                    passing += len(data)
                    continue
                size = passing + (nl if data else 0)
                self.problems.record(self.entry, self.lines, *too_large(size, limit))
                if not data:
                    return
                self.offset += size + 1
                passing = -1
                data = data[nl + 1 :]
                if not data:
                    continue
            if data:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    pieces.append(data)
                    held += len(data)
                    if held > limit:  # a line over the limit: never held whole
                        self.lines += 1
                        if self.problems.on_error == "stop":
                            self.problems.record(self.entry, self.lines, *too_large(None, limit))
                        passing, pieces, held = held, [], 0
                    continue
                whole = b"".join([*pieces, data[:cut]]) if pieces else data[:cut]
                pieces = [data[cut:]] if cut < len(data) else []
                held = len(data) - cut
            else:
                whole = b"".join(pieces)
                pieces, held = [], 0
                if not whole:
                    return
            yield whole
            if not data:
                return


def _after_read_error(
    entry: Entry, text_field: str, id_field: str, problems: Problems, done: int, offset: int
) -> Iterator[LineBlock]:
    """Read again from line ``done + 1`` line by line, so the records before a read error and
    its message ("reading failed after line N") are those of the line-by-line reader."""
    handle = problems.opened(entry, lambda: open_jsonl(entry))
    if handle is None:  # pragma: no cover - it opened a moment ago
        return
    with handle:
        recno = 0
        pos = 0
        for line in read_lines(handle, entry, problems):
            recno += 1
            if isinstance(line, LongLine):
                if recno > done:
                    report_long_line(entry, recno, line, problems)
                pos += line.skip() + 1
                continue
            start, pos = pos, pos + len(line)
            if recno <= done:
                continue
            block, _ = parse_block(line, text_field, id_field, recno, start, entry.max_record)
            if len(block) or block.problems:
                yield block


# -- pass 2 -------------------------------------------------------------------------------------


def _spans(entry: Entry) -> tuple[IntArray, IntArray, npt.NDArray[np.uint8]]:
    """The file's (starts, ends, firsts), its pass-1 blocks joined once and kept joined: hybrid
    verification reads texts again round after round, and each read would copy them all."""
    spans = entry.spans or []
    if not spans:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8)
    if len(spans) > 1:
        joined = tuple(np.concatenate([x[i] for x in spans]) for i in range(3))
        spans = entry.spans = [joined]  # type: ignore[list-item]
    return spans[0]


def span_sizes(entry: Entry) -> IntArray:
    """Bytes of each accepted record's line in the file, by record number."""
    starts, ends, _ = _spans(entry)
    return ends - starts


def _gather(
    entry: Entry,
    starts: IntArray,
    ends: IntArray,
    lines: IntArray,
    firsts: npt.NDArray[np.uint8],
) -> Iterator[npt.NDArray[np.uint8]]:
    """The bytes of the file's ranges [starts[i], ends[i]) (sorted, disjoint), in file order,
    one array per buffer read (valid until the next is asked for: its buffer is reused). Seeks
    over gaps longer than SKIP_BYTES, and never reads past a run's last range (a damaged tail
    read in pass 1 stays unread). The lines starting at ``lines`` (inside the ranges) must still
    start with the bytes ``firsts`` seen in pass 1; raises when they do not or the file ends
    early (it changed after pass 1).

    Runs (ranges apart by at most SKIP_BYTES) are read back to back into one buffer of at most
    CHUNK bytes, a run longer than what is left of it going on in the next; a full buffer is
    checked and gathered at once, so a run costs Python only a seek and a read."""
    if not len(starts):
        return
    run_s, run_e, _ = read_runs(starts, ends)  # a read never passes its run's end
    buffer = _Buffer(entry, starts, ends, lines, firsts, min(CHUNK, int((run_e - run_s).sum())))
    view = buffer.data.data
    size = len(view)
    with open_jsonl(entry) as handle:
        readinto = cast(io.BufferedIOBase, handle).readinto
        at = -1  # the handle's position; -1: not known yet
        for a, b in zip(run_s.tolist(), run_e.tolist(), strict=True):
            if a != at:
                handle.seek(a)
            while a < b:
                fill = buffer.fill
                m = min(b - a, size - fill)
                n = readinto(view[fill : fill + m])
                if n != m:
                    _read_rest(readinto, view[fill + (n or 0) : fill + m], entry)
                buffer.add(a, m)
                a += m
                if buffer.fill == size:
                    yield buffer.gathered()
            at = b
        if buffer.fill:
            yield buffer.gathered()


def _read_rest(readinto: Callable[[memoryview], int], view: memoryview, entry: Entry) -> None:
    """Fill ``view`` after a short read; raises if the file ends first (it changed)."""
    while len(view):
        n = readinto(view)
        if not n:
            raise_changed(entry)
        view = view[n:]


class _Buffer:
    """Pieces of runs read back to back into ``data`` (``fill`` bytes so far), then the ranges
    and lines among them checked and gathered at once, translated to buffer offsets."""

    def __init__(
        self,
        entry: Entry,
        starts: IntArray,
        ends: IntArray,
        lines: IntArray,
        firsts: npt.NDArray[np.uint8],
        size: int,
    ) -> None:
        self.entry = entry
        self.starts = starts
        self.ends = ends
        self.lines = lines
        self.firsts = firsts
        self.data = np.empty(size, dtype=np.uint8)
        self.out = np.empty(size, dtype=np.uint8)
        self.fill = 0
        self.at: list[int] = []  # each piece's offset in the file
        self.off: list[int] = []  # and in ``data``
        self.next = 0  # the first range not yet wholly gathered

    def add(self, at: int, n: int) -> None:
        """The ``n`` bytes at file offset ``at`` were read into ``data[fill:]``."""
        self.at.append(at)
        self.off.append(self.fill)
        self.fill += n

    def gathered(self) -> Bytes:
        """The bytes of the ranges (or their parts) in the pieces read, after checking the
        lines starting there; the buffer is then empty again."""
        at = np.array(self.at, dtype=np.int64)
        off = np.array(self.off, dtype=np.int64)
        shift = off - at  # file offset -> buffer offset, by piece
        stop = at + np.diff(np.r_[off, self.fill])  # each piece's end in the file
        lo, hi = int(at[0]), int(stop[-1])
        a, b = np.searchsorted(self.lines, [lo, hi])
        lines = self.lines[a:b]
        piece = np.searchsorted(at, lines, "right") - 1
        if not np.array_equal(self.data[lines + shift[piece]], self.firsts[a:b]):
            raise_changed(self.entry)
        i, j = self.next, int(np.searchsorted(self.starts, hi))  # ranges starting before hi
        s, e = self.starts[i:j], self.ends[i:j]
        piece = np.maximum(np.searchsorted(at, s, "right") - 1, 0)  # the first: maybe earlier
        n = _kernels()[2].gather_ranges(
            self.data,
            np.maximum(s, at[piece]) + shift[piece],
            np.minimum(e, stop[piece]) + shift[piece],
            self.out,
        )
        self.next = j - 1 if j > i and int(e[-1]) > hi else j  # a range cut at hi goes on
        self.fill = 0
        self.at.clear()
        self.off.clear()
        return self.out[:n]


def copy_kept_spans(entry: Entry, keep: npt.NDArray[np.bool_], out: object) -> None:
    """Pass 2: write the kept records' lines to ``out`` byte for byte, as runs of adjacent lines
    (``keep[i]`` is for the file's i-th accepted record); a last line without a newline gets
    one."""
    starts, ends, firsts = _spans(entry)
    s, e = starts[keep], ends[keep]
    if not len(s):
        return
    brk = np.flatnonzero(s[1:] != e[:-1]) + 1
    run_s = s[np.concatenate([[0], brk])]
    run_e = e[np.concatenate([brk - 1, [len(e) - 1]])]
    if copied_by_kernel(entry, (run_s, run_e), (s, firsts[keep]), out):
        return
    write = out.write  # type: ignore[attr-defined]
    last = 0x0A
    for piece in _gather(entry, run_s, run_e, s, firsts[keep]):
        if len(piece):
            write(piece.data)
            last = piece[-1]
    if last != 0x0A:
        write(b"\n")


def texts_at_spans(entry: Entry, wanted: IntArray, text_field: str, id_field: str) -> list[str]:
    """The texts of the file's accepted records number ``wanted`` (sorted, 0-based among its
    accepted records), reading and parsing only their lines."""
    if not len(wanted):
        return []
    starts, ends, firsts = _spans(entry)
    s, e = starts[wanted], ends[wanted]
    # Each chunk's gathered bytes copied at once: its buffer is reused for the next chunk.
    data = b"".join([piece.tobytes() for piece in _gather(entry, s, e, s, firsts[wanted])])
    if not data.endswith(b"\n"):  # the file's last line, without a newline
        data += b"\n"
    block, n_lines = parse_block(data, text_field, id_field, 1, 0)
    if n_lines != len(wanted) or len(block) != len(wanted):
        raise_changed(entry)
    return list(block.texts)
