"""Paths, folders, standard input or a pipe -> a ``Source`` of one format: every file listed,
its format told from its name (or forced), and the options checked before anything is read."""

from __future__ import annotations

import os
import re
import reprlib
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, cast

from ..errors import InputError, ParamError
from ..params import check_int
from ._report import MAX_RECORD_SIZE, MISSING_FILE, UNREADABLE, Entry, OnError
from ._source import Inputs, Source
from .formats import JSONL, TEXT, Fmt, Format, format_named, format_of

_STDIN_NAME = "<stdin>"
#: A URL such as s3://bucket/key or https://host/path (not a Windows drive letter).
_REMOTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


def _expand_folder(folder: Path, problems: list[tuple[str, str]], on_error: OnError) -> list[Path]:
    """Regular files under ``folder``, recursively, sorted, hidden names left out."""

    def failed(exc: OSError) -> None:
        message = (
            f"{exc.filename}: cannot read the folder ({exc.strerror or exc}); check its permissions"
        )
        if on_error == "stop":
            raise InputError(message + ", or use --on-error skip to skip it")
        problems.append((UNREADABLE, message))

    files: list[Path] = []
    for root, dirs, names in os.walk(folder, onerror=failed):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        files.extend(Path(root) / n for n in sorted(names) if not n.startswith("."))
    return [f for f in files if f.is_file()]


def is_pipe(path: str | Path) -> bool:
    """True for a named pipe or device given as an input path (``<(zcat f.gz)``, a FIFO)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)


def _open_pipe(
    paths: list[str | Path],
    fmt: Fmt | None,
    text_field: str,
    id_field: str,
    on_error: OnError,
    key_field: str | None,
    limit: int,
) -> Source:
    """A pipe is read once, as JSONL (gzip recognised by its first bytes), and spooled like
    standard input; it cannot be read twice, so it must be the only input."""
    name = str(paths[0])
    if len(paths) > 1:
        raise ParamError(
            f"{name} is a pipe, read once like standard input; give it as the only input, or "
            "save it to a file first"
        )
    if fmt not in (None, JSONL.name):
        raise ParamError(f"{name} is a pipe, read as JSONL, not {fmt}; save it to a file first")
    try:
        raw = open(name, "rb")  # noqa: SIM115 - closed by Source.close()
    except OSError as exc:
        raise InputError(f"{name}: cannot read it ({exc.strerror or exc}); check it") from None
    entry = Entry(name=name, path=None, stream=raw, max_record=limit)
    source = Source([entry], JSONL, text_field, id_field, on_error, [], key_field)
    source.owned = [raw]
    return source


def open_source(
    inputs: Inputs,
    fmt: Fmt | None = None,
    *,
    text_field: str = "text",
    id_field: str = "id",
    on_error: OnError = "stop",
    key_field: str | None = None,
    max_record_size: int = MAX_RECORD_SIZE,
) -> Source:
    """Open documents for deduplication.

    ``inputs``: a path, a list of paths, ``"-"`` for standard input, or a binary stream (read
    as JSONL and spooled to a temporary file during pass 1). A folder stands for the regular
    files under it (recursive, sorted, hidden names left out). ``fmt`` forces the format,
    otherwise each file's name decides (see ``detect_format``) and mixed formats are an error.

    JSONL records are objects with a string ``text_field`` and an optional ``id_field`` (string
    or integer); a record without an id gets its 1-based line number (``"NAME:LINE"`` when
    there are several input files). Text files: id = path, text = content. Ids must be unique.

    ``on_error="stop"`` raises InputError at the first bad record (naming file, line, problem
    and fix); ``"skip"`` drops bad records and counts them in ``Source.errors``; for a
    duplicated id the first record is kept. Empty texts are not errors.

    ``key_field`` (for "keep the member with the largest/smallest FIELD") gives every DocBatch
    ``keys``: the JSON value of that field, or the Parquet column's value (a column that is
    absent or has no order makes the file bad). A key is a number (int or float), a string, a
    boolean, or a numpy.datetime64 (Parquet dates and timestamps, zoned ones in UTC). A missing
    field, null, NaN or NaT gives None and is no error (counted in ``Source.missing_keys``;
    rank it least preferred, as ``key_ranks`` does). The first key fixes the kind for the run:
    a later key of another kind (e.g. a string after numbers), an array or an object is a bad
    record (``bad_key``): InputError naming file and line, or skipped and counted. Text-file
    inputs have no fields: a key_field is a ParamError for them.

    ``max_record_size`` bounds a record in bytes (a JSONL line without its newline, a Parquet
    text, a text or HTML file, a WARC record's block): a larger one is a bad record
    (``too_large``) found while reading, before it is held, so memory stays bounded whatever
    the input (a decompression bomb, a line of gigabytes).
    """
    _check_options(fmt, on_error, text_field, id_field, key_field, max_record_size)
    limit = max_record_size
    if hasattr(inputs, "read") or (isinstance(inputs, str | Path) and str(inputs) == "-"):
        return _open_stream(inputs, fmt, text_field, id_field, on_error, key_field, limit)
    paths = _local_paths(inputs)
    if any(is_pipe(p) for p in paths):
        return _open_pipe(paths, fmt, text_field, id_field, on_error, key_field, limit)
    open_problems: list[tuple[str, str]] = []
    found = _list_files(paths, open_problems, on_error)
    refuse_repeats([f for f, _ in found])
    chosen = _one_format(found, paths, fmt)
    chosen.check_fields(text_field, id_field)
    if key_field is not None and not chosen.has_fields:
        raise ParamError(
            f"text-file inputs have no fields, so there is no '{key_field}' to keep the "
            "largest or smallest of; give JSONL or Parquet input with that field, or drop "
            "--keep-field"
        )
    entries = _file_entries(found, chosen, limit)
    return Source(entries, chosen, text_field, id_field, on_error, open_problems, key_field)


def check_inputs(inputs: object, name: str = "inputs") -> None:
    """ParamError naming the argument unless ``inputs`` is a path, "-", a binary stream or a
    list of paths: None or a number failed deep inside with a TypeError."""
    if isinstance(inputs, str | Path) or hasattr(inputs, "read"):
        return
    if not isinstance(inputs, Sequence) or not all(isinstance(p, str | Path) for p in inputs):
        raise ParamError(
            f"{name} must be a path, '-' or a list of paths, got {reprlib.repr(inputs)}"
        )


def _local_paths(inputs: Inputs) -> list[str | Path]:
    """The input paths; ParamError for none, for ``-`` among others, and for a URL."""
    check_inputs(inputs)
    paths = [inputs] if isinstance(inputs, str | Path) else list(cast(Sequence, inputs))
    if not paths:
        raise ParamError("no inputs given; name at least one file or folder")
    if any(str(p) == "-" for p in paths):
        raise ParamError("'-' (standard input) cannot be combined with other inputs")
    remote = next((str(p) for p in paths if _REMOTE.match(str(p))), None)
    if remote is not None:
        raise ParamError(
            f"{remote} is a remote path: the cluster backend reads those (--dask local:N, with "
            "s3fs or another fsspec filesystem installed); on one machine copy it here first"
        )
    return paths


def _file_entries(found: list[tuple[Path, Path]], fmt: Format, limit: int) -> list[Entry]:
    """One Entry per file; kept files copied into a folder go under their paths relative to
    the folders the inputs name."""
    root = os.path.commonpath([os.path.abspath(base) for _, base in found]) if found else "."
    to_folder = fmt.copies_as == "folder"
    return [
        Entry(
            name=str(f),
            path=f,
            unit=fmt.unit,
            rel=Path(os.path.relpath(os.path.abspath(f), root)) if to_folder else None,
            max_record=limit,
        )
        for f, _ in found
    ]


def _check_options(
    fmt: Fmt | None,
    on_error: OnError,
    text_field: str,
    id_field: str,
    key_field: str | None,
    max_record_size: int,
) -> None:
    """ParamError for an option ``open_source`` cannot take."""
    if on_error not in ("stop", "skip"):
        raise ParamError(f"on_error must be 'stop' or 'skip', got {on_error!r}")
    if fmt is not None:
        format_named(fmt)
    for label, value in (("text field", text_field), ("id field", id_field)):
        if not isinstance(value, str) or not value:
            raise ParamError(f"the {label} must be a non-empty string, got {value!r}")
    if key_field is not None and (not isinstance(key_field, str) or not key_field):
        raise ParamError(f"the key field must be a non-empty string or None, got {key_field!r}")
    check_int("max_record_size (--max-record-size)", max_record_size, 1, 1 << 62)


def _open_stream(
    inputs: Inputs,
    fmt: Fmt | None,
    text_field: str,
    id_field: str,
    on_error: OnError,
    key_field: str | None,
    limit: int,
) -> Source:
    """Standard input (``"-"``) or a binary stream: read once as JSONL, spooled for pass 2."""
    if fmt not in (None, JSONL.name):
        raise ParamError(f"standard input is read as JSONL, not {fmt}; use a file for {fmt}")
    stream = sys.stdin.buffer if isinstance(inputs, str | Path) else cast(BinaryIO, inputs)
    entry = Entry(name=_STDIN_NAME, path=None, stream=stream, max_record=limit)
    return Source([entry], JSONL, text_field, id_field, on_error, [], key_field)


def _list_files(
    paths: list[str | Path], open_problems: list[tuple[str, str]], on_error: OnError
) -> list[tuple[Path, Path]]:
    """Every input file, with the folder it was listed under (or its parent); a missing path
    raises, or with "skip" is remembered in ``open_problems``."""
    found: list[tuple[Path, Path]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend((f, path) for f in _expand_folder(path, open_problems, on_error))
        elif path.exists():
            found.append((path, path.parent))
        else:
            message = f"{path}: file not found; check the path"
            if on_error == "stop":
                raise InputError(message)
            open_problems.append((MISSING_FILE, message))
    return found


def refuse_repeats(files: Sequence[str | Path]) -> None:
    """ParamError when two inputs are one file (named twice, by another path, a link, or inside
    a folder also given; a URL by its name): its records would meet themselves as duplicate
    ids."""
    seen: dict[object, str | Path] = {}
    for f in files:
        try:
            st = os.stat(f)
            key: object = (st.st_dev, st.st_ino)
        except OSError:  # a URL, or a missing file (said when it is read): by its name
            key = str(f)
        first = seen.setdefault(key, f)
        if first is not f:
            said = (
                f"the input {f} is given twice"
                if str(first) == str(f)
                else f"the inputs {first} and {f} are one file"
            )
            raise ParamError(f"{said}; give each input once")


def _one_format(found: list[tuple[Path, Path]], paths: list[str | Path], fmt: Fmt | None) -> Format:
    """The one format of the files (forced, or told by their names); ParamError when the names
    say several. No file: text for a folder, else JSONL."""
    forced = None if fmt is None else format_named(fmt)
    formats = {f: (forced or format_of(f)) for f, _ in found}
    kinds = sorted({k.name for k in formats.values()})
    if len(kinds) > 1:
        examples = ", ".join(
            f"{next(str(f) for f, k in formats.items() if k.name == kind)} is {kind}"
            for kind in kinds
        )
        raise ParamError(
            f"the inputs mix formats ({examples}); give files of one format, or force one "
            "with --format"
        )
    if forced is not None:
        return forced
    if formats:
        return next(iter(formats.values()))
    return TEXT if any(Path(p).is_dir() for p in paths) else JSONL
