"""Plain text files in and out: one file -> one document (id = its path, text = UTF-8 content);
pass 2 copies the kept files, unchanged, into an output folder under their relative paths."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

from ._report import INVALID_UTF8, Entry, Problems, too_large


def scan_text(
    entry: Entry, problems: Problems
) -> Iterator[tuple[int, str | None, str, int, object]]:
    """Pass 1: yield (1, path, content, bytes, None) for a readable UTF-8 file (text files have
    no fields, hence no key)."""
    if entry.path is None:  # pragma: no cover - text entries always have a path
        raise RuntimeError(f"{entry.name} has no file to open")
    data = read_bounded(entry, problems)
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


def read_bounded(entry: Entry, problems: Problems) -> bytes | None:
    """The whole file (a document) unless it is over ``entry.max_record`` bytes: then a bad
    record (``too_large``) and None, having read no more than the limit."""
    path = cast(Path, entry.path)

    def read() -> bytes | int:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > entry.max_record:
                return size
            data = fh.read(entry.max_record + 1)
            return data if len(data) <= entry.max_record else len(data)

    got = problems.opened(entry, read)
    if isinstance(got, int):
        problems.record(entry, 1, *too_large(got, entry.max_record))
        return None
    return got


def copy_kept_text(entry: Entry, keep: npt.NDArray[np.bool_], folder: Path) -> None:
    """Pass 2: copy the file to ``folder / entry.rel`` if its document is kept."""
    if entry.n_docs == 0 or not keep[0] or entry.path is None or entry.rel is None:
        return
    dest = folder / entry.rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(entry.path, dest)
