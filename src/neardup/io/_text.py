"""Plain text files in and out: one file -> one document (id = its path, text = UTF-8 content);
pass 2 copies the kept files, unchanged, into an output folder under their relative paths."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ._report import INVALID_UTF8, Entry, Problems


def scan_text(
    entry: Entry, problems: Problems
) -> Iterator[tuple[int, str | None, str, int, object]]:
    """Pass 1: yield (1, path, content, bytes, None) for a readable UTF-8 file (text files have
    no fields, hence no key)."""
    if entry.path is None:  # pragma: no cover - text entries always have a path
        raise RuntimeError(f"{entry.name} has no file to open")
    data = problems.opened(entry, entry.path.read_bytes)
    if data is None:
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        problems.file(
            entry,
            INVALID_UTF8,
            f"invalid UTF-8 at line {line}, byte {column}",
            "re-encode the file as UTF-8",
        )
        return
    yield 1, entry.name, text, len(data), None


def copy_kept_text(entry: Entry, keep: npt.NDArray[np.bool_], folder: Path) -> None:
    """Pass 2: copy the file to ``folder / entry.rel`` if its document is kept."""
    if entry.n_docs == 0 or not keep[0] or entry.path is None or entry.rel is None:
        return
    dest = folder / entry.rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(entry.path, dest)
