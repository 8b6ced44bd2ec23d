"""Pass 2 with edits: kept records, some with a new text, -> output in the input's own format.

``edit(position, text) -> text`` gives the new text of each document flagged in ``changed``;
every other kept record is written as ``write_kept`` writes it (JSONL lines byte for byte,
Parquet rows, text files copied). An edited JSONL record is the original line with the value
of its text field replaced (``json`` writes the new text: no ASCII escaping, lone surrogates as
``\\uXXXX``) and every other byte as it was: numbers stay as written (``1e400`` would be
written ``Infinity`` by ``json``, which is not JSON), and so do key order, spaces and escapes;
an edited Parquet row keeps every other column; an edited text file is written as UTF-8.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, not in typeshed
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from ._jsonl import _accepted_lines
from ._report import Entry
from ._writers import _encode

Edit = Callable[[int, str], str]
_DECODER = json.JSONDecoder()
#: JSONL lines gathered per write.
WRITE_LINES = 4096


def edit_jsonl(
    entry: Entry,
    keep: npt.NDArray[np.bool_],
    changed: npt.NDArray[np.bool_],
    edit: Edit,
    text_field: str,
    out: BinaryIO,
) -> None:
    """The file's kept records (``keep[i]``, ``changed[i]``: its i-th accepted record), the
    changed ones with ``edit(entry.start + i, text)`` as their text."""
    pending: list[bytes] = []
    for i, (line, flag, new) in enumerate(
        zip(_accepted_lines(entry), keep.tolist(), changed.tolist(), strict=False)
    ):
        if not flag:
            continue
        if new:
            line = _replace_text(line, text_field, edit, entry.start + i)
        pending.append(line if line.endswith(b"\n") else line + b"\n")
        if len(pending) >= WRITE_LINES:
            out.write(b"".join(pending))
            pending = []
    if pending:
        out.write(b"".join(pending))


def _replace_text(line: bytes, text_field: str, edit: Edit, position: int) -> bytes:
    """``line`` (a JSON object, no byte-order mark: ``record_bytes``) with the value of its
    top-level ``text_field`` (the last, as ``json.loads`` keeps the last of repeated keys)
    replaced by ``edit(position, value)`` written as a JSON string; every other byte as it
    was."""
    decoded = line.decode("utf-8", "surrogatepass")
    start, end, text = _value_span(decoded, text_field)
    head = decoded[:start].encode("utf-8", "surrogatepass")
    tail = decoded[end:].encode("utf-8", "surrogatepass")
    return head + _encode(json.dumps(edit(position, text), ensure_ascii=False)) + tail


def _value_span(line: str, field: str) -> tuple[int, int, str]:
    """(start, end, value) of the string value of the top-level ``field`` in the JSON object
    ``line`` (pass 1 read it: the object is valid and the value a string)."""
    decode = _DECODER.raw_decode
    at = _skip(line, _skip(line, 0) + 1)  # after "{"
    found: tuple[int, int, str] | None = None
    while line[at] == '"':
        key, at = scanstring(line, at + 1)
        at = _skip(line, _skip(line, at) + 1)  # after ":"
        value, end = decode(line, at)
        if key == field:
            found = (at, end, value)
        at = _skip(line, end)
        at = _skip(line, at + 1) if line[at] == "," else at
    if found is None or not isinstance(found[2], str):  # pragma: no cover - pass 1 checked it
        raise ValueError(f"no string field {field!r} in the record")
    return found


def _skip(line: str, at: int) -> int:
    """The index of the first character at or after ``at`` that is not JSON whitespace."""
    while at < len(line) and line[at] in " \t\n\r":
        at += 1
    return at


def edit_text(
    entry: Entry,
    keep: npt.NDArray[np.bool_],
    changed: npt.NDArray[np.bool_],
    edit: Edit,
    folder: Path,
) -> None:
    """The file, edited or copied, to ``folder / entry.rel`` when its document is kept."""
    if entry.n_docs == 0 or not keep[0] or entry.path is None or entry.rel is None:
        return
    dest = folder / entry.rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    if changed[0]:
        text = entry.path.read_bytes().decode("utf-8")
        dest.write_bytes(edit(entry.start, text).encode("utf-8", "surrogatepass"))
    else:
        shutil.copy2(entry.path, dest)
