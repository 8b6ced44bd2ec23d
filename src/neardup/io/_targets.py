"""Output path -> what writing it means: a regular file (replaced by rename), a folder, a stream
(device, FIFO: written directly) or standard output; write errors -> one line naming the output.

A path is classified by what it names after following symlinks: ``/dev/null`` stays a device,
a symlink to ``/dev/stdout`` is standard output, a symlink to a regular file is that file. Only
regular files and folders may be replaced; everything else is written in place, never replaced.
"""

from __future__ import annotations

import errno
import io
import os
import select
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

from ..errors import OutputError, ParamError

if TYPE_CHECKING:  # collections.abc.Buffer from Python 3.12
    from typing_extensions import Buffer

Kind = Literal["file", "folder", "stream", "stdout"]
#: (st_dev, st_ino) of something that exists; (dev, ino, name) of a name in a folder otherwise.
Identity = tuple[int | str, ...]

STDOUT = "standard output"

_HINTS = {
    errno.ENOSPC: "the disk is full; free some space or write elsewhere",
    errno.EDQUOT: "the disk quota is used up; free some space or write elsewhere",
    errno.EPIPE: "the program reading the output stopped early (broken pipe)",
    errno.EBADF: "it is closed; redirect it to a file or name a file instead",
    errno.EACCES: "permission denied; check the permissions or write elsewhere",
    errno.EPERM: "operation not permitted; check the permissions or write elsewhere",
    errno.EROFS: "the file system is read-only; write elsewhere",
    errno.EFBIG: "the file is too large for this file system; write elsewhere",
    errno.EIO: "an I/O error on the device; check the disk",
}


def describe_os_error(exc: OSError) -> str:
    """What went wrong and what to do, in a few words: "the disk is full; free some space..."."""
    hint = _HINTS.get(exc.errno or 0)
    if hint is not None:
        return hint
    return (exc.strerror or str(exc)).rstrip(".").lower() or "an operating-system error"


def output_error(label: str, exc: OSError, doing: str = "write") -> OutputError:
    """An OSError met while writing output ``label`` -> OutputError naming it."""
    return OutputError(f"cannot {doing} {label}: {describe_os_error(exc)}")


@dataclass(frozen=True)
class Target:
    """A resolved output: ``path`` is where to write (symlinks resolved for files and folders;
    None for standard output); ``identity`` tells two names of one file apart from two files."""

    name: str  # as the user wrote it, for messages
    kind: Kind
    path: Path | None
    identity: Identity | None
    is_char_device: bool = False


def stdout_identity() -> Identity | None:
    """(st_dev, st_ino) of the process's standard output; None if unknown (replaced in tests)."""
    try:
        fd = sys.stdout.fileno() if sys.stdout is not None else 1
        st = os.fstat(fd)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    return st.st_dev, st.st_ino


def stdout_buffer() -> BinaryIO:
    """The binary standard output; OutputError when it is closed (``>&-``)."""
    out = sys.stdout
    buffer = getattr(out, "buffer", None) if out is not None else None
    if buffer is None or getattr(buffer, "closed", False):
        raise OutputError(f"cannot write to {STDOUT}: {_HINTS[errno.EBADF]}")
    return buffer


def folder_problem(folder: Path, *, subfolder: bool = False) -> str | None:
    """Why no new file (``subfolder``: folder) can be created in ``folder`` (None if one can):
    its permissions, then one created there and removed at once, since permissions say nothing
    for root, nor for /proc and /sys (a job would run to its end and fail to write)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        try:
            if os.statvfs(folder).f_flag & os.ST_RDONLY:
                return _HINTS[errno.EROFS]
        except OSError:  # pragma: no cover - the folder was just seen
            pass
        return _HINTS[errno.EACCES]
    try:
        if subfolder:
            os.rmdir(tempfile.mkdtemp(prefix=".neardup-probe-", dir=folder))
        else:
            fd, probe = tempfile.mkstemp(prefix=".neardup-probe-", dir=folder)
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        return describe_os_error(exc)
    return None


def classify(out: str | Path, *, folder: bool = False) -> Target:
    """Resolve one output before anything is read: ParamError or OutputError if it cannot be
    written (missing or unwritable folder, a folder where a file is wanted, a socket...).

    ``folder=True`` asks for an output folder (text-file input), which must be new or empty.
    Nothing is created.
    """
    name = str(out)
    if name == "-":
        if folder:
            raise ParamError(
                "text-file input writes kept files to a folder, not to standard output; "
                "name a new or empty folder"
            )
        stdout_buffer()
        return Target(name, "stdout", None, stdout_identity())
    path = Path(out)
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise ParamError(f"cannot write {name}: a part of the path is not a folder") from None
    except OSError as exc:
        raise output_error(name, exc, "reach") from None
    if st is None:
        return _new_target(name, path, folder)
    identity = (st.st_dev, st.st_ino)
    mode = st.st_mode
    if identity == stdout_identity() and not stat.S_ISCHR(mode):  # a terminal, /dev/null: streams
        if folder:
            raise ParamError(f"text-file input writes kept files to a folder, not {name}")
        stdout_buffer()
        return Target(name, "stdout", None, identity)
    if stat.S_ISDIR(mode):
        if not folder:
            raise ParamError(f"cannot write {name}: it is a folder; name a file instead")
        final = Path(os.path.realpath(path))
        if any(final.iterdir()):
            raise ParamError(
                f"cannot write the output folder {name}: it already exists and is not empty; "
                "remove it or name another output"
            )
    elif folder:
        raise ParamError(
            f"text-file input writes kept files to a folder, but {name} is a file; name a new "
            "or empty folder"
        )
    elif stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        if not os.access(path, os.W_OK):
            raise OutputError(f"cannot write {name}: {_HINTS[errno.EACCES]}")
        return Target(name, "stream", path, identity, is_char_device=stat.S_ISCHR(mode))
    elif not stat.S_ISREG(mode):
        raise ParamError(f"cannot write {name}: it is not a file, a pipe or a device")
    return _replaced_target(name, path, folder, identity)


def _new_target(name: str, path: Path, folder: bool) -> Target:
    """An output that does not exist yet: its folder must exist and take new files."""
    final = Path(os.path.realpath(path))
    parent = final.parent
    if not parent.is_dir():
        raise ParamError(f"cannot write {name}: folder {parent} does not exist; create it first")
    problem = folder_problem(parent)
    if problem is not None:
        raise OutputError(f"cannot create {name} in folder {parent}: {problem}")
    pst = os.stat(parent)
    return Target(name, "folder" if folder else "file", final, (pst.st_dev, pst.st_ino, final.name))


def _replaced_target(name: str, path: Path, folder: bool, identity: Identity) -> Target:
    """An existing file or empty folder, replaced by renaming a temporary one into place."""
    final = Path(os.path.realpath(path))
    problem = folder_problem(final.parent)
    if problem is not None:
        raise OutputError(
            f"cannot replace {name}: {problem} (the folder {final.parent} must take a "
            "temporary file that is then renamed into place)"
        )
    return Target(name, "folder" if folder else "file", final, identity)


def quick_kind(path: Path) -> Kind:
    """The kind of an output path at the moment it is opened (no permission checks)."""
    try:
        st = os.stat(path)
    except OSError:
        return "file"
    if stat.S_ISCHR(st.st_mode):
        return "stream"
    if (st.st_dev, st.st_ino) == stdout_identity():
        return "stdout"
    if stat.S_ISFIFO(st.st_mode):
        return "stream"
    return "folder" if stat.S_ISDIR(st.st_mode) else "file"


#: Bytes a file written with ``early_flush`` takes between two background flushes.
FLUSH_EVERY = 64 << 20


class GuardedFileIO(io.FileIO):
    """A FileIO whose write errors become an OutputError naming the output.

    Wrapped in a BufferedWriter, its ``write`` runs once per buffer, not once per record. With
    ``early_flush``, every ``FLUSH_EVERY`` bytes a thread starts writing the data so far to
    disk (``fdatasync``) while writing goes on, so ``sync`` waits only for the rest: a 550 MB
    output took 1.4 s to write and fsync, 1.0 s this way.
    """

    label: str = "the output"
    early_flush: bool = False
    _unflushed = 0
    _flusher: threading.Thread | None = None
    _flush_error: OSError | None = None

    def write(self, data: Buffer) -> int:
        try:
            n = super().write(data)
        except OSError as exc:
            raise output_error(self.label, exc) from None
        if self.early_flush and n:
            self._unflushed += n
            if self._unflushed >= FLUSH_EVERY and not self._flushing():
                self._unflushed = 0
                self._flusher = threading.Thread(
                    target=self._flush_to_disk, args=(self.fileno(),), name="neardup-flush"
                )
                self._flusher.start()
        return n

    def _flushing(self) -> bool:
        return self._flusher is not None and self._flusher.is_alive()

    def _flush_to_disk(self, fd: int) -> None:
        try:
            os.fdatasync(fd)
        except OSError as exc:  # kept for sync(): the kernel reports a write error only once
            self._flush_error = exc

    def sync(self) -> None:
        """Wait for a background flush, then ``fsync``; either one's error, named."""
        if self._flusher is not None:
            self._flusher.join()
        if self._flush_error is not None:
            raise output_error(self.label, self._flush_error)
        try:
            os.fsync(self.fileno())
        except OSError as exc:
            raise output_error(self.label, exc) from None

    def close(self) -> None:
        if self._flusher is not None:  # never close the file under a running flush
            self._flusher.join()
        super().close()


def write_all(sink: BinaryIO, data: Buffer, label: str) -> int:
    """Write every byte of ``data`` to ``sink``; returns their number. An unbuffered sink (the
    standard output under ``PYTHONUNBUFFERED`` or ``python -u``) may take part of a write
    (a signal, a reader closing the pipe): the rest is written again, never dropped; a sink
    that would block (non-blocking) is waited for. Errors name ``label``."""
    view = memoryview(data).cast("B")
    done = 0
    try:
        while done < len(view):
            n = sink.write(view[done:])
            if n is None:  # a non-blocking sink that is full: wait until it takes more
                select.select([], [sink.fileno()], [])
                continue
            if n <= 0:
                raise OSError(errno.EIO, "the output took no bytes")
            done += n
    except OSError as exc:
        raise output_error(label, exc) from None
    except ValueError:  # the stream was closed under us
        raise OutputError(f"cannot write to {label}: {_HINTS[errno.EBADF]}") from None
    return done


class ForwardRaw(io.RawIOBase):
    """A raw writer forwarding to another binary stream (standard output), errors named."""

    def __init__(self, sink: BinaryIO, label: str) -> None:
        super().__init__()
        self._sink = sink
        self.label = label

    def writable(self) -> bool:
        return True

    def write(self, data: Buffer) -> int:
        return write_all(self._sink, data, self.label)

    def flush(self) -> None:
        guarded(self.label, self._sink.flush)


def guarded(label: str, action: Callable[[], object], doing: str = "write") -> None:
    """Run ``action``; an OSError becomes an OutputError naming ``label``."""
    try:
        action()
    except OSError as exc:
        raise output_error(label, exc, doing) from None


def open_guarded(
    fd: int, label: str, buffer_size: int = 1 << 16, early_flush: bool = False
) -> io.BufferedWriter:
    """A buffered binary writer over file descriptor ``fd`` (closed with it), errors named;
    ``early_flush`` (regular files that will be fsynced): see ``GuardedFileIO``."""
    raw = GuardedFileIO(fd, "wb", closefd=True)
    raw.label = label
    raw.early_flush = early_flush
    return io.BufferedWriter(raw, buffer_size=buffer_size)
