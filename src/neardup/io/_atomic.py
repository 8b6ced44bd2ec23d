"""Atomic output: a file or folder appears under its final name complete, or not at all.

Writes go to a hidden temporary name in the destination's own folder (same file system, so the
final ``os.replace`` is an atomic rename); on any exception the temporary is removed and whatever
was at the destination before is left untouched. Inside ``output_group()`` the renames wait for
the end of the block and happen together: a failed run leaves no new output at all.
Devices, pipes and standard output cannot be replaced: they are written directly.
"""

from __future__ import annotations

import contextvars
import io
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, TextIO, cast, overload

from ..errors import OutputError, ParamError
from ._gzip import gzip_writer
from ._targets import (
    STDOUT,
    ForwardRaw,
    GuardedFileIO,
    guarded,
    open_guarded,
    output_error,
    quick_kind,
    stdout_buffer,
)


class _Group:
    """Renames held back until every output of a run is complete: (temporary, final, folder?)."""

    def __init__(self) -> None:
        self.pending: list[tuple[Path, Path, bool]] = []

    def discard(self) -> None:
        for tmp, _, is_dir in self.pending:
            _remove(tmp, is_dir)
        self.pending.clear()

    def commit(self) -> None:
        """Rename every temporary into place; if one rename fails, undo the earlier ones."""
        done: list[tuple[Path, Path | None, bool, bool]] = []  # final, backup, folder?, existed
        try:
            for tmp, final, is_dir in self.pending:
                existed = os.path.lexists(final)
                backup = None
                if existed and not is_dir:
                    backup = _temp_sibling(final, ".old")
                    try:
                        os.link(final, backup)  # the old file survives a rollback
                    except OSError:
                        backup = None
                done.append((final, backup, is_dir, existed))
                try:
                    os.replace(tmp, final)
                except OSError as exc:
                    done.pop()
                    if backup is not None:
                        os.unlink(backup)
                    raise output_error(str(final), exc, "rename the finished output to") from None
        except BaseException:
            for final, backup, is_dir, existed in reversed(done):
                with suppress(OSError):
                    if backup is not None:
                        os.replace(backup, final)
                    elif not existed or is_dir:  # new, or an empty folder before
                        _remove(final, is_dir)
                        if existed:
                            final.mkdir()
                    # else: a file replaced where no hard link could keep the old one; it stays
            self.discard()
            raise
        for _, backup, _, _ in done:
            if backup is not None:
                with suppress(OSError):
                    os.unlink(backup)
        self.pending.clear()


_GROUP: contextvars.ContextVar[_Group | None] = contextvars.ContextVar(
    "neardup_output_group", default=None
)


def _remove(path: Path, is_dir: bool) -> None:
    if is_dir:
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(FileNotFoundError):
            os.unlink(path)


def _finish(tmp: Path, final: Path, is_dir: bool) -> None:
    """Rename ``tmp`` to ``final`` now, or at the end of the enclosing output_group()."""
    group = _GROUP.get()
    if group is not None:
        group.pending.append((tmp, final, is_dir))
        return
    try:
        os.replace(tmp, final)
    except OSError as exc:
        raise output_error(str(final), exc, "rename the finished output to") from None


@contextmanager
def output_group() -> Iterator[None]:
    """Every atomic output written inside the block appears when the block ends without an
    exception, all together; on an exception none does (previous files stay untouched).
    A nested group joins the enclosing one."""
    if _GROUP.get() is not None:
        yield
        return
    group = _Group()
    token = _GROUP.set(group)
    try:
        yield
    except BaseException:
        group.discard()
        raise
    finally:
        _GROUP.reset(token)
    group.commit()


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
def _direct(path: Path | None, mode: str, encoding: str) -> Iterator[IO[Any]]:
    """Write a device, a pipe or standard output (``path`` None) in place: they cannot be
    replaced, and a failure there cannot be undone; write errors still name the output."""
    label = STDOUT if path is None else str(path)
    if path is None:
        raw = ForwardRaw(stdout_buffer(), label)
        binary: io.BufferedWriter = io.BufferedWriter(raw, buffer_size=1 << 16)
    else:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise output_error(label, exc, "open") from None
        binary = open_guarded(fd, label)
    handle: IO[Any] = binary if mode == "wb" else io.TextIOWrapper(binary, encoding=encoding)
    try:
        yield handle
        handle.flush()
        if path is None:
            raw.flush()
    finally:
        with suppress(OutputError, OSError, ValueError):  # after success: nothing left to write
            handle.close()


@contextmanager
def _atomic_file(path: Path, mode: str, encoding: str) -> Iterator[IO[Any]]:
    kind = "stdout" if str(path) == "-" else quick_kind(path)
    if kind in ("stream", "stdout"):
        with _direct(path if kind == "stream" else None, mode, encoding) as direct:
            yield direct
        return
    _check_parent(path)
    path = Path(os.path.realpath(path))  # through symlinks: the link stays, the file is new
    while True:
        tmp = _temp_sibling(path, ".tmp")
        try:
            # 0o666 filtered by the umask: the permissions an ordinary open() would give.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits collided
            continue
        except OSError as exc:
            raise output_error(str(path), exc, "create a temporary file beside") from None
    label = str(path)
    try:
        if path.exists():  # keep the permissions of the file being replaced
            os.chmod(fd, path.stat().st_mode & 0o7777)
        binary = open_guarded(fd, label, early_flush=True)
    except BaseException:
        os.close(fd)
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    handle: IO[Any] = binary if mode == "wb" else io.TextIOWrapper(binary, encoding=encoding)
    try:
        try:
            yield handle
            handle.flush()
            cast(GuardedFileIO, binary.raw).sync()
            guarded(label, handle.close)  # a network file system may report errors only here
        except BaseException:
            # Closing after a failure must not raise a second error (a full disk again) that
            # would hide the first one (an interrupt, say).
            with suppress(OutputError, OSError, ValueError):
                handle.close()
            raise
        _finish(tmp, path, is_dir=False)
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
    only when the ``with`` block ends without an exception (or, inside ``output_group()``,
    when the group ends). ``"-"``, devices and pipes are written directly.

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
    try:
        tmp.mkdir()
    except OSError as exc:
        raise output_error(str(target), exc, "create a temporary folder beside") from None
    try:
        yield tmp
        _finish(tmp, target, is_dir=True)  # rename(2) may replace an empty folder
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        # A copy that failed on its destination (shutil puts it in filename2): the output's fault.
        names = (str(exc.filename2 or ""), str(exc.filename or ""))
        if any(name.startswith(str(tmp)) for name in names):
            raise output_error(str(target), exc) from None
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


Output = str | Path | BinaryIO


@contextmanager
def open_output(out: Output) -> Iterator[BinaryIO]:
    """A binary sink for ``out``: ``"-"`` is standard output, a binary stream is used as it is
    (neither is closed), a device or pipe is written in place, a path is written atomically;
    paths ending in ``.gz`` are gzip-compressed.
    """
    if isinstance(out, str | Path) and str(out) == "-":
        with _direct(None, "wb", "utf-8") as direct:
            yield direct  # type: ignore[misc]
        return
    if not isinstance(out, str | Path):
        yield out
        out.flush()
        return
    path = Path(out)
    with atomic_write(path, "wb") as handle:
        if path.name.lower().endswith(".gz"):
            # No temporary name and no clock in the header: equal content, equal bytes.
            with gzip_writer(handle) as zipped:
                yield zipped
        else:
            yield handle
