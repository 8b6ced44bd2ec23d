"""A decontamination run's matches + its training data and benchmark -> one self-contained HTML page.

The page (no script, no network, CSS inline) shows the run's figures, a table of every
benchmark item with the number of training documents that contain it, and a sample of
matches: the training text around the matched spans, the spans highlighted, beside the
benchmark item it contains. The sample takes the items in order of how many documents contain
them and, round after round, the next match of each (file order), so every item found is shown
before any is shown twice.

Matches file rows: ``{"id", "benchmark_id", "containment", "spans"}`` as ``neardup
decontaminate --matches`` writes them (a file, or the folder a ``--dask`` run wrote).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .errors import InputError
from .io import plan_outputs
from .io._atomic import open_output
from .io._report import MAX_RECORD_SIZE, OnError
from .io._source import Fmt, Inputs
from .report_files import check_minimums, json_objects, line_errors, on_disk, open_lines, read_texts
from .run import ReadOptions, _paths, _read_benchmark

#: Default number of matches shown with their texts.
SAMPLE = 200
#: Default characters of training text shown around a match's spans (and of an item).
MAX_CHARS = 3000
#: Characters shown before the first span and after the last one.
CONTEXT = 200


@dataclass(frozen=True)
class MatchRow:
    """One row of a matches file."""

    id: str
    benchmark_id: str
    containment: float
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ContaminationStats:
    """What the page holds: counts, and the size of the HTML file written."""

    input_documents: int
    contaminated: int
    matches: int
    items: int
    items_found: int
    shown: int
    bytes: int


_MATCHES_ROWS = (
    'a matches file has one JSON object per line with "id", "benchmark_id", "containment" and '
    '"spans" (neardup decontaminate --matches writes it)'
)


def read_matches(path: str | Path) -> list[MatchRow]:
    """Rows of a matches JSONL file (or folder); InputError names a bad line."""
    rows: list[MatchRow] = []
    error = line_errors(path, _MATCHES_ROWS)
    for n, obj in json_objects(open_lines(path), error):
        ids = [obj.get("id"), obj.get("benchmark_id")]
        for k, value in enumerate(ids):
            if isinstance(value, int) and not isinstance(value, bool):
                ids[k] = str(value)
            elif not isinstance(value, str):
                name = ("id", "benchmark_id")[k]
                raise error(n, f"'{name}' is missing or not a string")
        c = obj.get("containment")
        if isinstance(c, bool) or not isinstance(c, int | float):
            raise error(n, "'containment' is missing or not a number")
        if not 0 <= c <= 1:  # NaN fails too
            raise error(n, f"'containment' must be a number from 0 to 1, got {c!r}")
        spans = obj.get("spans")
        if not isinstance(spans, list) or not all(
            isinstance(s, list)
            and len(s) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in s)
            and 0 <= s[0] <= s[1]
            for s in spans
        ):
            raise error(n, "'spans' is not a list of [start, end] offsets")
        rows.append(MatchRow(str(ids[0]), str(ids[1]), float(c), tuple((a, b) for a, b in spans)))
    return rows


def sample_matches(rows: list[MatchRow], counts: dict[str, int], size: int) -> list[int]:
    """Indices of up to ``size`` rows: items by descending count (then id), one match of each
    per round, each item's matches in file order."""
    by_item: dict[str, list[int]] = {}
    for k, row in enumerate(rows):
        by_item.setdefault(row.benchmark_id, []).append(k)
    items = sorted(by_item, key=lambda b: (-counts[b], b))
    out: list[int] = []
    depth = 0
    while len(out) < size and any(depth < len(by_item[b]) for b in items):
        for b in items:
            if depth < len(by_item[b]) and len(out) < size:
                out.append(by_item[b][depth])
        depth += 1
    return out


def highlighted(text: str, spans: Sequence[tuple[int, int]], max_chars: int) -> str:
    """HTML of ``text`` around ``spans`` (``CONTEXT`` characters either side, at most
    ``max_chars`` in all), each span in <mark>, cut parts shown as an ellipsis."""
    lo = max(0, min((s for s, _ in spans), default=0) - CONTEXT)
    hi = min(len(text), max((e for _, e in spans), default=0) + CONTEXT, lo + max_chars)
    out = ["…" if lo > 0 else ""]
    at = lo
    for s, e in sorted(spans):
        s, e = max(s, at), min(e, hi)
        if s >= e:
            continue
        out += [html.escape(text[at:s]), "<mark>", html.escape(text[s:e]), "</mark>"]
        at = e
    out += [html.escape(text[at:hi]), "…" if hi < len(text) else ""]
    return "".join(out)


def _template() -> str:
    return resources.files("neardup").joinpath("templates/contamination.html").read_text("utf-8")


def _item_rows(
    bench_ids: list[str], bench_texts: list[str], counts: dict[str, int], best: dict[str, float]
) -> str:
    """The items table: every benchmark item, most contained first."""
    order = sorted(range(len(bench_ids)), key=lambda i: (-counts.get(bench_ids[i], 0), i))
    cells = []
    for i in order:
        b = bench_ids[i]
        text = bench_texts[i]
        short = text[:160] + ("…" if len(text) > 160 else "")
        top = f"{best[b]:.3f}" if b in best else ""
        cells.append(
            f'<tr class="{"found" if counts.get(b) else "clean"}"><td>{html.escape(b)}</td>'
            f'<td class="n">{counts.get(b, 0):,}</td><td class="n">{top}</td>'
            f"<td>{html.escape(short)}</td></tr>"
        )
    return "".join(cells)


def _match_sections(
    rows: list[MatchRow], shown: list[int], texts: dict[str, str], bench: dict[str, str],
    max_chars: int,
) -> str:  # fmt: skip
    out = []
    for k in shown:
        row = rows[k]
        text = texts[row.id]
        if any(e > len(text) for _, e in row.spans):
            raise InputError(
                f"the match of {row.id!r} and {row.benchmark_id!r} has spans past the end of the "
                "document's text; give the training data and --text-field the run read"
            )
        item = bench[row.benchmark_id]
        cut = item[:max_chars] + ("…" if len(item) > max_chars else "")
        out.append(
            '<section class="match"><div class="doc"><h3>training '
            f"<code>{html.escape(row.id)}</code> <span>containment {row.containment:.3f}, "
            f"{len(row.spans)} span{'s' * (len(row.spans) != 1)}</span></h3>"
            f'<pre>{highlighted(text, row.spans, max_chars)}</pre></div><div class="doc"><h3>'
            f"benchmark <code>{html.escape(row.benchmark_id)}</code></h3>"
            f"<pre>{html.escape(cut)}</pre></div></section>"
        )
    return "".join(out)


def _benchmark(
    against: str | Sequence[str], options: ReadOptions, rows: list[MatchRow], matches: str | Path
) -> tuple[list[str], list[str]]:
    """The benchmark's ids and texts, or InputError when a match names an item not in it."""
    bench_ids, bench_texts, _ = _read_benchmark(against, options)
    unknown = sorted({r.benchmark_id for r in rows} - set(bench_ids))
    if unknown:
        raise InputError(
            f"{len(unknown)} benchmark items of {matches} are not in the benchmark (e.g. id "
            f"{unknown[0]!r}); give the same --against and --against-id-field as the run"
        )
    return bench_ids, bench_texts


def _per_item(rows: list[MatchRow]) -> tuple[dict[str, int], dict[str, float]]:
    """Matches of each benchmark item, and its highest containment."""
    counts: dict[str, int] = {}
    best: dict[str, float] = {}
    for r in rows:
        counts[r.benchmark_id] = counts.get(r.benchmark_id, 0) + 1
        best[r.benchmark_id] = max(best.get(r.benchmark_id, 0.0), r.containment)
    return counts, best


def _summary(
    n_input: int, contaminated: int, matches: int, items: int, found: int, shown: int
) -> list[tuple[str, str]]:
    """The page's summary rows."""
    return [
        ("training documents", f"{n_input:,}"),
        ("contaminated documents", f"{contaminated:,}"),
        ("documents kept", f"{n_input - contaminated:,}"),
        ("matches (document, item)", f"{matches:,}"),
        ("benchmark items", f"{items:,} ({found:,} found in the training data)"),
        ("matches shown", f"{shown:,}"),
    ]


def write_contamination_report(
    inputs: Inputs,
    matches: str | Path,
    against: str | Sequence[str],
    out: str | Path,
    *,
    fmt: Fmt | None = None,
    text_field: str = "text",
    id_field: str = "id",
    against_text_field: str | None = None,
    against_id_field: str | None = None,
    against_format: Fmt | None = None,
    on_error: OnError = "stop",
    max_record_size: int = MAX_RECORD_SIZE,
    sample: int = SAMPLE,
    max_chars: int = MAX_CHARS,
    title: str = "neardup decontamination report",
) -> ContaminationStats:
    """Write the HTML page of a decontamination run to ``out`` (atomically); see the module
    docstring. ``inputs``, ``against`` and the field options must be what the run read, so
    ids and spans match."""
    check_minimums(("sample", sample, 0), ("max_chars", max_chars, 1))
    plan = plan_outputs([matches, *_paths(against), *on_disk(inputs)], {"-o": out})
    rows = read_matches(matches)
    bench_options = ReadOptions(
        format=against_format,
        text_field=text_field if against_text_field is None else against_text_field,
        id_field=id_field if against_id_field is None else against_id_field,
        on_error=on_error,
        max_record_size=max_record_size,
    )
    bench_ids, bench_texts = _benchmark(against, bench_options, rows, matches)
    bench = dict(zip(bench_ids, bench_texts, strict=True))
    counts, best = _per_item(rows)
    shown = sample_matches(rows, counts, sample)
    texts, n_input = read_texts(
        inputs, {rows[k].id for k in shown}, fmt, text_field, id_field, on_error,
        max_record_size, what=f"the matches file {matches}", run="decontaminate",
    )  # fmt: skip
    contaminated = len({r.id for r in rows})
    summary = _summary(n_input, contaminated, len(rows), len(bench_ids), len(counts), len(shown))
    fills = {
        "TITLE": html.escape(title),
        "SUMMARY": "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in summary
        ),
        "ITEMS": _item_rows(bench_ids, bench_texts, counts, best),
        "MATCHES": _match_sections(rows, shown, texts, bench, max_chars),
    }
    page = re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: fills[m.group(1)], _template())
    encoded = page.encode("utf-8", "replace")  # a lone surrogate in a text: "?"
    with plan.commit(), open_output(plan["-o"]) as fh:
        fh.write(encoded)
    return ContaminationStats(
        n_input, contaminated, len(rows), len(bench_ids), len(counts), len(shown), len(encoded)
    )


__all__ = ["ContaminationStats", "MatchRow", "read_matches", "write_contamination_report"]
