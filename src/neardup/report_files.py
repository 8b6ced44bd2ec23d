"""What the HTML reports read: a run's output files line by line (gzip or not), each line's
JSON object with errors that name the line, and the input texts of the documents shown."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import InputError, ParamError
from .io import open_source
from .io._report import OnError
from .io._source import Fmt, Inputs
from .paragraphs import Unit, split


def open_lines(path: str | Path) -> Iterator[bytes]:
    """A run's output file line by line (gzip or not), or a cluster run's output folder read
    back whole in its parts' order."""
    p = Path(path)
    if p.is_dir():
        from .dask.folders import read_output

        yield from read_output(str(p)).splitlines(keepends=True)
        return
    try:
        raw = p.open("rb")
    except FileNotFoundError:
        raise InputError(f"{p}: file not found; check the path") from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read it ({exc.strerror or exc})") from None
    with raw:
        magic = raw.read(2)
        raw.seek(0)
        handle = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
        yield from handle


def json_objects(
    lines: Iterable[bytes], error: Callable[[int, str], InputError]
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line's JSON object with its line number (from 1); a line that is none
    raises ``error(line, problem)``, the InputError that says what the file should hold."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise error(n, f"not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise error(n, "not a JSON object")
        yield n, obj


def line_errors(path: str | Path, holds: str) -> Callable[[int, str], InputError]:
    """The InputError for a bad line of ``path``: the line, what is wrong with it, then
    ``holds`` (what a line of such a file holds and what writes it)."""

    def error(line: int, problem: str) -> InputError:
        return InputError(f"{path} line {line}: {problem}; {holds}")

    return error


def read_texts(
    inputs: Inputs,
    need: set[str],
    fmt: Fmt | None,
    text_field: str,
    id_field: str,
    on_error: OnError,
    max_record_size: int,
    units: dict[str, list[tuple[int, str]]] | None = None,
    what: str = "the clusters file",
    run: str = "dedup",
    unit: Unit = "paragraph",
) -> tuple[dict[str, str], int]:
    """The texts of the documents ``need`` names, and the number of input documents; with
    ``units`` (document id -> [(paragraph, name)]), those paragraphs' texts by name, the
    document split into ``unit``s as the run split it. ``what`` names the file that needs them
    and ``run`` the command that read the input, for errors."""
    texts: dict[str, str] = {}
    n_input = 0
    with open_source(
        inputs,
        fmt,
        text_field=text_field,
        id_field=id_field,
        on_error=on_error,
        max_record_size=max_record_size,
    ) as source:
        for batch in source.batches(5000):
            n_input += len(batch)
            for rid, text in zip(batch.ids, batch.texts, strict=True):
                if units is not None and rid in units:
                    found = split([text], unit)
                    for part, name in units[rid]:
                        if part < len(found):
                            texts[name] = found.texts()[part]
                elif rid in need:
                    texts[rid] = text
    missing = need - texts.keys()
    if missing:
        one = len(missing) == 1
        raise InputError(
            f"{len(missing)} document{'' if one else 's'} of {what} {'is' if one else 'are'} "
            f"not in the input (e.g. id "
            f"{sorted(missing)[0]!r}); give the same input and --format/--id-field/--text-field "
            f"as the {run} run"
        )
    return texts, n_input


def check_minimums(*checks: tuple[str, int, int]) -> None:
    """ParamError unless each ``(name, value, least)`` names an integer of at least ``least``
    (the message names the argument and its option: the CLI passes the options through)."""
    for name, value, lo in checks:
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            flag = "--" + name.replace("_", "-")
            raise ParamError(f"{name} ({flag}) must be an integer of at least {lo}, got {value!r}")


def on_disk(inputs: Inputs) -> list[str | Path]:
    """The input files a page is checked against before any is read (a stream has none)."""
    if isinstance(inputs, str | Path):
        return [inputs]
    if isinstance(inputs, Sequence):
        return list(inputs)
    return []
