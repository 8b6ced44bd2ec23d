"""Input formats, one module each, behind one ``Format`` protocol (``base``): JSON Lines,
Parquet, CSV/TSV, text files, WARC archives and HTML pages.

``format_of(path)`` tells the format from a file name, ``format_named(name)`` from a
``--format`` value; ``Source``, ``output_format`` and the cluster backend then use the format's
methods and attributes only, so a format added to ``ALL`` is read and written everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ...errors import ParamError
from .base import Fields, Format, Part, Record, RecordFormat
from .delimited import CSV, TSV
from .html import HTML
from .jsonl import JSONL
from .parquet import PARQUET
from .text import TEXT
from .warc import WARC

Fmt = Literal["jsonl", "parquet", "csv", "tsv", "text", "warc", "html"]
#: Every format, in the order ``--format`` lists them.
ALL: tuple[Format, ...] = (JSONL, PARQUET, CSV, TSV, TEXT, WARC, HTML)
FORMATS: tuple[Fmt, ...] = ("jsonl", "parquet", "csv", "tsv", "text", "warc", "html")
_BY_NAME: dict[str, Format] = {f.name: f for f in ALL}


def format_named(name: str) -> Format:
    """The format ``--format NAME`` asks for; ParamError for an unknown name."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ParamError(f"format must be one of {', '.join(FORMATS)}, got {name!r}") from None


def format_of(path: str | Path) -> Format:
    """The format a file's name says (see ``detect_format``); ParamError for any other name."""
    name = Path(path).name.lower()
    for fmt in ALL:
        if fmt.detect(name):
            return fmt
    raise ParamError(
        f"{path}: cannot tell the format from the name; use --format "
        f"{'|'.join(FORMATS)} (text reads each file as one document)"
    )


def detect_format(path: str | Path) -> Fmt:
    """Format from the name: .jsonl/.json/.ndjson (optionally .gz) -> "jsonl", .parquet/.pq ->
    "parquet", .csv/.tsv (optionally .gz) -> "csv"/"tsv", .warc/.warc.gz/.wet/.wet.gz -> "warc",
    .html/.htm -> "html", .txt/.text/.md/.rst or no suffix -> "text"; ParamError for any other
    name (force a format with ``fmt``/``--format`` instead)."""
    return format_of(path).name  # type: ignore[return-value]


__all__ = [
    "ALL",
    "CSV",
    "FORMATS",
    "HTML",
    "JSONL",
    "PARQUET",
    "TEXT",
    "TSV",
    "WARC",
    "Fields",
    "Fmt",
    "Format",
    "Part",
    "Record",
    "RecordFormat",
    "detect_format",
    "format_named",
    "format_of",
]
