"""Pass 2 with edits: kept records, some with a new text, -> output in the input's own format.

``edit(position, text) -> text`` gives the new text of each document flagged in ``changed``;
every other kept record is written as ``write_kept`` writes it (JSONL lines byte for byte,
Parquet rows, text files copied). An edited JSONL record is the original object with its text
field replaced, written again by the standard ``json`` module (key order kept, no ASCII
escaping, lone surrogates as ``\\uXXXX``); an edited Parquet row keeps every other column; an
edited text file is written as UTF-8.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from ._jsonl import _accepted_lines
from ._report import Entry
from ._writers import _encode

Edit = Callable[[int, str], str]
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
            record = json.loads(line.decode("utf-8", "surrogatepass"))  # no mark: record_bytes
            record[text_field] = edit(entry.start + i, record[text_field])
            line = _encode(json.dumps(record, ensure_ascii=False) + "\n")
        pending.append(line if line.endswith(b"\n") else line + b"\n")
        if len(pending) >= WRITE_LINES:
            out.write(b"".join(pending))
            pending = []
    if pending:
        out.write(b"".join(pending))


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
