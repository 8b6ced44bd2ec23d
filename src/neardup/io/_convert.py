"""The format ``-o`` names for the kept records: JSONL (optionally .gz), Parquet, CSV, TSV, or a
folder of copied text files.

``output_format`` tells the format from the output's name before anything is read (an unknown
name is refused). When it is what the input's format copies as it is, pass 2 copies records
verbatim (see ``Source.write_kept``); otherwise each kept record becomes a dict of all its
fields and a sink of ``_sinks`` writes them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ParamError
from ._sinks import OutFmt
from ._targets import stdout_identity
from .formats import Format, format_named

#: Output names and the format each gives (a ``.gz`` after JSONL, CSV or TSV compresses).
_SUFFIXES: tuple[tuple[tuple[str, ...], OutFmt], ...] = (
    ((".jsonl", ".json", ".ndjson", ".jsonl.gz", ".json.gz", ".ndjson.gz"), "jsonl"),
    ((".parquet", ".pq"), "parquet"),
    ((".csv", ".csv.gz"), "csv"),
    ((".tsv", ".tsv.gz", ".tab"), "tsv"),
)
_NAMES = ".jsonl, .jsonl.gz, .parquet, .csv or .tsv"


def output_format(out: object, input_fmt: str | Format) -> OutFmt:
    """The format ``-o`` asks for, from its name: a folder (an existing one, a name ending in
    ``/``, or for text input a name without a suffix) holds copies of text files; standard
    output, a stream, a device or a pipe get the input's own format (JSONL for web pages).
    ParamError for a name that says nothing."""
    fmt = format_named(input_fmt) if isinstance(input_fmt, str) else input_fmt
    native = fmt.default_out
    to_folder = native == "folder"
    if not isinstance(out, str | Path) or str(out) == "-":
        return native
    name = str(out)
    if name.endswith(("/", os.sep)) or Path(name).is_dir():
        if not to_folder:
            raise ParamError(
                f"-o {name} is a folder, which holds copies of text files; name a file "
                f"ending in {_NAMES} for {fmt.name} input"
            )
        return "folder"
    try:
        st: os.stat_result | None = os.stat(name)
    except OSError:
        st = None
    mode = st.st_mode if st is not None else 0
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return native
    lower = Path(name).name.lower()
    for suffixes, kind in _SUFFIXES:
        if lower.endswith(suffixes):
            return kind
    if st is not None and (st.st_dev, st.st_ino) == stdout_identity():
        return native  # /dev/stdout while standard output is redirected to a file
    if to_folder and "." not in lower.lstrip("."):
        return "folder"  # a name without a suffix, for text files: the folder of their copies
    folder = " (or end it with / for a folder of the kept text files)" if to_folder else ""
    raise ParamError(
        f"cannot tell the output format from the name {name!r}; name it {_NAMES}{folder}"
    )


__all__ = ["OutFmt", "output_format"]
