"""Atomic output: a file or folder appears under its final name complete, or not at all.

Writes go to a hidden temporary name in the destination's own folder (same file system, so the
final ``os.replace`` is an atomic rename); on any exception the temporary is removed and whatever
was at the destination before is left untouched.
"""

from __future__ import annotations

import gzip
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, overload

from ..errors import ParamError


def _temp_sibling(path: Path, suffix: str) -> Path:
    """A fresh hidden name next to ``path`` (random, so concurrent writers never collide)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}{suffix}")


def _check_parent(path: Path) -> None:
    if not path.parent.is_dir():
        raise ParamError(
            f"cannot write {path}: folder {path.parent} does not exist; create it first"
        )
    if path.is_dir():
        raise ParamError(f"cannot write {path}: it is a folder; name a file instead")


@contextmanager
def _atomic_file(path: Path, mode: str, encoding: str) -> Iterator[IO[Any]]:
    _check_parent(path)
    while True:
        tmp = _temp_sibling(path, ".tmp")
        try:
            # 0o666 filtered by the umask: the permissions an ordinary open() would give.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits collided
            continue
    try:
        if path.exists():  # keep the permissions of the file being replaced
            os.chmod(fd, path.stat().st_mode & 0o7777)
        handle = os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", encoding=encoding)
    except BaseException:
        os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@overload
def atomic_write(
    path: str | Path, mode: Literal["wb"] = "wb", *, encoding: str = "utf-8"
) -> AbstractContextManager[BinaryIO]: ...


@overload
def atomic_write(
    path: str | Path, mode: Literal["w"], *, encoding: str = "utf-8"
) -> AbstractContextManager[TextIO]: ...


def atomic_write(
    path: str | Path, mode: Literal["wb", "w"] = "wb", *, encoding: str = "utf-8"
) -> AbstractContextManager[IO[Any]]:
    """Context manager yielding a file (binary ``"wb"`` or text ``"w"``) that replaces ``path``
    only when the ``with`` block ends without an exception.

    The data is flushed and fsynced before the rename, so a crash leaves either the old file or
    the complete new one, plus at worst a hidden ``.NAME.XXXX.tmp`` that is never mistaken for it.
    """
    if mode not in ("wb", "w"):
        raise ParamError(f"atomic_write mode must be 'wb' or 'w', got {mode!r}")
    return _atomic_file(Path(path), mode, encoding)


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Context manager yielding a fresh temporary folder that becomes ``path`` on success.

    ``path`` must not exist or be an empty folder (a non-empty one is never overwritten: that
    could not be done atomically). On an exception the temporary folder is removed.
    """
    target = Path(path)
    if not target.parent.is_dir():
        raise ParamError(
            f"cannot write {target}: folder {target.parent} does not exist; create it first"
        )
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ParamError(
            f"cannot write the output folder {target}: it already exists and is not an empty "
            "folder; remove it or name another output"
        )
    tmp = _temp_sibling(target, ".tmpdir")
    tmp.mkdir()
    try:
        yield tmp
        os.replace(tmp, target)  # rename(2) may replace an empty folder
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


Output = str | Path | BinaryIO


@contextmanager
def open_output(out: Output) -> Iterator[BinaryIO]:
    """A binary sink for ``out``: ``"-"`` is standard output, a binary stream is used as it is
    (neither is closed), a path is written atomically and gzip-compressed if it ends in ``.gz``.
    """
    if isinstance(out, str | Path) and str(out) == "-":
        import sys

        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    if not isinstance(out, str | Path):
        yield out
        out.flush()
        return
    path = Path(out)
    with atomic_write(path, "wb") as handle:
        if path.name.lower().endswith(".gz"):
            # filename="" and mtime=0 keep the temporary name and the clock out of the header,
            # so equal content gives equal bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as zipped:
                yield zipped  # type: ignore[misc]
        else:
            yield handle
