"""Input paths, globs, folders or URLs -> the files a cluster run reads, and their blocks.

Listed on the client (names and sizes only, O(files)), read on the workers through fsspec, so a
path may be local or any URL fsspec knows (``s3://``, ``gs://``, ``hdfs://`` with its package
installed). Names are what the single-machine run calls the files (the path as given, or the
folder's files, sorted, hidden names left out), so default ids ``NAME:LINE`` and messages
agree. A plain JSONL file is cut into blocks of about ``block_bytes``, each owning the lines
that start in its byte range; a gzipped file is one block (gzip cannot be entered midway). A
Parquet file is cut the same way, each block owning the row groups that start in its range.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, NeardupError, ParamError
from ..io._open import refuse_repeats
from ..io.formats import format_of

#: Bytes of a plain JSONL file per block by default.
BLOCK_BYTES = 32 << 20
#: Text bytes a byte of a compressed input holds, about (what the shuffles are sized by): a
#: gzip file's, a Parquet file's (``Format.cluster_blocks`` "row groups").
GZIP_EXPANDS = 4
ROW_GROUPS_EXPAND = 3
_GLOB = ("*", "?", "[")


@dataclass(frozen=True)
class InputFile:
    """One input file: ``url`` for fsspec, ``name`` for messages and default ids."""

    url: str
    name: str
    size: int
    stamp: str  # modification time or ETag: a changed file is noticed on resume
    gzip: bool


@dataclass(frozen=True)
class Block:
    """The lines of file ``file`` that start in bytes [start, end) (a gzip file: all of it)."""

    index: int
    file: int
    start: int
    end: int


def is_url(path: str) -> bool:
    return "://" in path


def filesystem(url: str, storage_options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for a local path or URL."""
    import fsspec

    try:
        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    except (ImportError, ValueError) as exc:
        raise ParamError(
            f"{url}: {exc}; install the filesystem's package (s3fs for s3://, gcsfs for gs://)"
        ) from None
    return fs, path


def _option_values(value: Any) -> Iterator[str]:
    """Every string of 4 characters or more among the storage options' values (nested ones
    too): never said back (a secret is longer; hiding "1" would mangle every number)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _option_values(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _option_values(v)
    elif isinstance(value, str) and len(value) >= 4:  # short ones and numbers hide nothing
        yield value


def storage_problem(where: str, exc: BaseException, storage: dict[str, Any] | None) -> str:
    """One line for a failure to open or list remote ``where``: the exception's type and
    message (the storage options' values, which may be secrets, hidden) and what to check."""
    said = " ".join(str(exc).split()) or "no message"
    for value in sorted(set(_option_values(storage or {})), key=len, reverse=True):
        said = said.replace(value, "***")
    return (
        f"{where}: cannot reach it ({type(exc).__name__}: {said}); check the --storage-options "
        "keys, the endpoint and the credentials"
    )


@contextlib.contextmanager
def reaching(where: str, storage: dict[str, Any] | None) -> Iterator[None]:
    """Any failure to open or list remote ``where`` inside -> one-line ParamError."""
    try:
        yield
    except NeardupError:
        raise
    except Exception as exc:
        if not is_url(where):
            raise
        raise ParamError(storage_problem(where, exc, storage)) from None


#: The fields of an fsspec info dict that change when a file is written again, best first: an
#: object store's ETag or content hash (s3fs, gcsfs, adlfs), else a modification time (a local
#: file's ``mtime``, s3fs's ``LastModified``...).
STAMP_FIELDS = ("ETag", "etag", "md5Hash", "mtime", "LastModified", "last_modified", "created")


def file_stamp(info: dict[str, Any]) -> str | None:
    """What tells a file apart from another of the same size, from its fsspec info dict (one
    ``fs.info`` or ``fs.glob(detail=True)`` gives, nothing read): its ETag where the
    filesystem reports one, else its modification time; None when it reports neither."""
    for key in STAMP_FIELDS:
        if info.get(key) is not None:
            return str(info[key]) or None
    return None


def _stamp(info: dict[str, Any]) -> str:
    return file_stamp(info) or ""


def _join(base: str, path: str, fs: Any) -> str:
    """The URL of ``path`` on the filesystem of ``base``."""
    if not is_url(base):
        return path
    protocol = base.split("://", 1)[0]
    return f"{protocol}://{path.lstrip('/')}" if not path.startswith(protocol) else path


def list_inputs(
    inputs: Sequence[str], storage_options: dict[str, Any] | None = None, fmt: str | None = None
) -> list[InputFile]:
    """Every input file, in the order the single-machine run reads them; raises InputError for
    a missing path and ParamError for a format the cluster run does not read, or one other
    than ``fmt`` (``--format``, when given: a cluster tells each file's by its name)."""
    if not inputs:
        raise ParamError("no inputs given; name at least one file, folder, glob or URL")
    files: list[InputFile] = []
    for raw in inputs:
        raw = str(raw)
        if raw == "-":
            raise ParamError(
                "standard input cannot be read by the workers of a cluster; save it to a file"
            )
        with reaching(raw, storage_options):
            files.extend(_listed(raw, storage_options))
    refuse_repeats([f.url for f in files])
    _one_format(files)
    for f in files:
        named = format_of(f.name)
        if fmt is not None and named.name != fmt:
            raise ParamError(
                f"{f.name}: --format {fmt}, but a cluster run tells a file's format by its name "
                f"({named.name} here); rename the file, or leave --format out"
            )
    return files


def _listed(raw: str, storage_options: dict[str, Any] | None) -> list[InputFile]:
    """The files one input (a path, folder, glob or URL) stands for."""
    fs, path = filesystem(raw, storage_options)
    if any(c in raw for c in _GLOB):
        found = sorted(fs.glob(path))
        if not found:
            raise InputError(f"{raw}: no file matches; check the pattern")
        files: list[InputFile] = []
        for p in found:
            files.extend(_files_under(fs, raw, p, _matched(raw, p, fs)))
        return files
    if not fs.exists(path):
        raise InputError(f"{raw}: file not found; check the path")
    return _files_under(fs, raw, path, raw)


def _one_format(files: list[InputFile]) -> None:
    """ParamError unless a cluster reads every file (JSONL, gzipped or not; Parquet) and all
    are cut alike (``Format.cluster_blocks``)."""
    kinds: dict[str, str] = {}
    for f in files:
        fmt = format_of(f.name)
        if fmt.cluster_blocks is None:
            raise ParamError(
                f"{f.name}: a cluster run reads JSONL files (optionally gzipped) or Parquet "
                f"files, not {fmt.name}; convert it, or run without --dask"
            )
        kinds.setdefault(fmt.cluster_blocks, f"{f.name} ({fmt.name})")
    if len(kinds) > 1:
        shown = " and ".join(kinds.values())
        raise ParamError(
            f"a cluster run reads inputs of one format, and {shown} differ; convert one, or "
            "run them separately"
        )


def text_bytes(files: Sequence[InputFile]) -> int:
    """The inputs' text, about: their sizes, compressed ones expanded (``EXPANDS``)."""
    total = 0
    for f in files:
        row_groups = format_of(f.name).cluster_blocks == "row groups"
        total += f.size * (GZIP_EXPANDS if f.gzip else ROW_GROUPS_EXPAND if row_groups else 1)
    return total


def _matched(raw: str, path: str, fs: Any) -> str:
    """What a glob's match is called: its URL, or a local path as the shell would give it
    (relative to the working folder when the pattern is)."""
    if is_url(raw):
        return _join(raw, path, fs)
    return path if os.path.isabs(raw) else os.path.relpath(path)


def _files_under(fs: Any, raw: str, path: str, shown: str) -> list[InputFile]:
    """The file at ``path`` (called ``shown``), or the regular files under a folder (sorted,
    hidden left out), called as the single-machine run calls them: a URL, or the folder as
    given joined with the file's path inside it (``d/a.jsonl``, not an absolute path)."""
    info = fs.info(path)
    if info.get("type") != "directory":
        return [_file(fs, raw, path, shown, info)]
    out: list[InputFile] = []
    for root, dirs, names in _walk(fs, raw, path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for n in sorted(names):
            if n.startswith("."):
                continue
            full = posixpath.join(root, n) if is_url(raw) else os.path.join(root, n)
            name = (
                _join(raw, full, fs)
                if is_url(raw)
                else str(Path(shown) / os.path.relpath(full, path))
            )
            out.append(_file(fs, raw, full, name, fs.info(full)))
    return out


def _walk(fs: Any, raw: str, path: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """A folder's (root, folders, files), top down: a local folder that cannot be read is an
    InputError, as on one machine (fsspec's walk passes over it: the run read no file)."""
    if is_url(raw):
        yield from fs.walk(path)
        return

    def failed(exc: OSError) -> None:
        raise InputError(
            f"{exc.filename}: cannot read the folder ({exc.strerror or exc}); check its "
            "permissions (a cluster run does not skip a folder it cannot read)"
        )

    yield from os.walk(path, onerror=failed)


def _file(fs: Any, raw: str, path: str, name: str, info: dict[str, Any]) -> InputFile:
    url = _join(raw, path, fs) if is_url(raw) else os.path.abspath(path)
    return InputFile(url, name, int(info.get("size") or 0), _stamp(info), name.endswith(".gz"))


def plan_blocks(files: Sequence[InputFile], block_bytes: int = BLOCK_BYTES) -> list[Block]:
    """The blocks of every file, in input order."""
    if block_bytes < 1:
        raise ParamError(f"block size must be at least 1 byte, got {block_bytes}")
    blocks: list[Block] = []
    for i, f in enumerate(files):
        if f.gzip or f.size <= block_bytes:
            blocks.append(Block(len(blocks), i, 0, f.size))
            continue
        for start in range(0, f.size, block_bytes):
            blocks.append(Block(len(blocks), i, start, min(start + block_bytes, f.size)))
    return blocks
