"""The report's input files read and checked: the clusters file (whole, scores from 0 to
1), the pairs file, the run's summary (of this run: its counts are the input's), the texts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError
from .io._report import OnError
from .io._source import Fmt, Inputs
from .report_files import json_objects, line_errors, open_lines, read_texts


@dataclass(frozen=True)
class ClusterRow:
    """One row of a clusters file."""

    id: str
    cluster: int
    kept: bool
    duplicate_of: str | None
    score: float | None
    #: Paragraph runs: the document's id and the paragraph's number (``id`` is then ``ID ¶N``).
    doc: str | None = None
    paragraph: int | None = None


_CLUSTERS_ROWS = (
    'a clusters file has one JSON object per line with "id", "cluster", "kept" and optionally '
    '"duplicate_of" and "score" (neardup dedup --clusters writes it)'
)


def read_clusters(path: str | Path) -> list[ClusterRow]:
    """Rows of a clusters JSONL file (optionally gzipped); InputError names a bad line."""
    rows: list[ClusterRow] = []
    error = line_errors(path, _CLUSTERS_ROWS)
    for n, obj in json_objects(open_lines(path), error):
        rid, label, kept = obj.get("id"), obj.get("cluster"), obj.get("kept")
        if isinstance(rid, int) and not isinstance(rid, bool):
            rid = str(rid)
        if not isinstance(rid, str):
            raise error(n, "'id' is missing or not a string")
        if not isinstance(label, int) or isinstance(label, bool):
            raise error(n, "'cluster' is missing or not an integer")
        if not isinstance(kept, bool):
            raise error(n, "'kept' is missing or not true/false")
        dup = obj.get("duplicate_of")
        if dup is not None and not isinstance(dup, str | int):
            raise error(n, "'duplicate_of' is neither an id nor null")
        score = obj.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise error(n, "'score' is neither a number nor null")
        if score is not None and not 0 <= score <= 1:  # NaN fails too
            raise error(n, f"'score' must be a number from 0 to 1 or null, got {score!r}")
        part, dup_part = obj.get("paragraph"), obj.get("duplicate_of_paragraph")
        for name, value in (("paragraph", part), ("duplicate_of_paragraph", dup_part)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise error(n, f"'{name}' is neither an integer nor null")
        doc = rid
        if part is not None:
            rid = unit_key(rid, part)
            if dup is not None and dup_part is not None:
                dup = unit_key(str(dup), dup_part)
        rows.append(
            ClusterRow(
                rid,
                label,
                kept,
                None if dup is None else str(dup),
                None if score is None else float(score),
                None if part is None else doc,
                part,
            )
        )
    return rows


def check_whole(rows: list[ClusterRow], path: str | Path) -> None:
    """InputError for a clusters file that is part of one (some of its lines, as a grep gives):
    a cluster without its kept member, a cluster of its kept member alone (dedup writes
    clusters of two or more), or a ``duplicate_of`` that is not in the file."""
    kept = {r.cluster for r in rows if r.kept}
    removed = {r.cluster for r in rows if not r.kept}
    ids = {r.id for r in rows}
    for r in rows:
        if r.cluster not in kept:
            problem = f"cluster {r.cluster} has no kept member"
        elif r.cluster not in removed:
            problem = f"cluster {r.cluster} has only its kept member {r.id!r}"
        elif r.duplicate_of is not None and r.duplicate_of not in ids:
            problem = f"{r.id!r} duplicates {r.duplicate_of!r}, which is not in it"
        else:
            continue
        raise InputError(
            f"{path}: {problem}; the clusters file is incomplete: give the whole file "
            "neardup dedup --clusters wrote"
        )


def unit_key(doc: str, paragraph: int) -> str:
    """How a paragraph is named in a report: its document's id and its number."""
    return f"{doc} \u00b6{paragraph}"


#: What a pairs file's line holds, for errors.
_PAIRS = "--pairs takes the file neardup dedup --pairs writes"


def read_pairs(path: str | Path) -> list[tuple[str, str, float]]:
    """Rows (id_a, id_b, score) of a pairs JSONL file (``neardup dedup --pairs``)."""
    return list(iter_pairs(path))


def iter_pairs(path: str | Path) -> Iterator[tuple[str, str, float]]:
    """``read_pairs`` one row at a time, so a file can be checked without being held."""
    for n, line in enumerate(open_lines(path), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            a, b, score = str(obj["id_a"]), str(obj["id_b"]), obj["score"]
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError, KeyError):
            raise InputError(
                f"{path} line {n}: not a JSON object with 'id_a', 'id_b' and 'score'; {_PAIRS}"
            ) from None
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise InputError(f"{path} line {n}: 'score' is not a number; {_PAIRS}")
        if not 0 <= score <= 1:  # NaN fails too
            raise InputError(
                f"{path} line {n}: 'score' must be a number from 0 to 1, got {score!r}; {_PAIRS}"
            )
        yield a, b, float(score)


def run_summary_of(path: str | Path | None) -> dict[str, Any] | None:
    """The run's ``--summary-json`` object; InputError for a file that is missing, not JSON,
    or not an object."""
    if path is None:
        return None
    if not Path(path).exists():
        raise InputError(f"--summary-json {path}: file not found; check the path")
    try:
        run = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"--summary-json {path}: cannot read the run summary ({exc})") from None
    if not isinstance(run, dict):
        raise InputError(
            f"--summary-json {path}: not a run summary: it holds a JSON "
            f"{type(run).__name__}, where a run writes an object; give the run's summary file"
        )
    return run


def check_summary(
    run: dict[str, Any] | None,
    path: str | Path | None,
    clusters: str | Path,
    n_input: int,
    rows: list[ClusterRow],
    unit: str,
) -> None:
    """InputError when the run summary's counts are not those of the input and clusters file
    (the summary of another run); a count the summary does not hold is not compared."""
    if run is None:
        return
    removed = sum(1 for r in rows if not r.kept)
    removed_key = "removed" if unit == "document" else "paragraphs_removed"
    for key, found, where, what in (
        ("documents", n_input, "the input", "documents"),
        (removed_key, removed, str(clusters), f"removed {unit}s"),
    ):
        said = run.get(key)
        if isinstance(said, int) and not isinstance(said, bool) and said != found:
            raise InputError(
                f"--summary-json {path} is another run's: it counts {said:,} {what} where "
                f"{where} has {found:,}; give the summary of the run that wrote {clusters}"
            )


def run_unit(rows: list[ClusterRow], run: dict[str, Any] | None) -> str:
    """What the members are: "document", else the unit of a paragraph run, "line" when its
    summary says so (its rows name a line ``paragraph`` too), else "paragraph"."""
    if not any(r.paragraph is not None for r in rows):
        return "document"
    return "line" if run is not None and run.get("unit") == "line" else "paragraph"


def read_run_texts(
    reading: tuple[Inputs, Fmt | None, str, str, OnError, int],
    need: set[str],
    units: dict[str, list[tuple[int, str]]] | None,
    unit: str,
    run: dict[str, Any] | None,
) -> tuple[dict[str, str], int]:
    """``read_texts`` of the rows shown, split by the run's ``unit``; a paragraph run's rows
    missing from the input, without a run summary, hint that it may be a line run."""
    inputs, fmt, text_field, id_field, on_error, max_record_size = reading
    try:
        return read_texts(
            inputs,
            need,
            fmt,
            text_field,
            id_field,
            on_error,
            max_record_size,
            units,
            unit="line" if unit == "line" else "paragraph",
        )
    except InputError as exc:
        if unit != "paragraph" or run is not None or "not in the input" not in str(exc):
            raise
        # the rows alone do not say lines from paragraphs; the run's summary does
        raise InputError(f"{exc}; for a --unit line run, give its --summary-json") from None
