"""A run's clusters file + its input -> one self-contained HTML report (figures, clusters, diffs).

The page needs no network and no other file: CSS and JavaScript are inline, the two histograms
(pair scores, cluster sizes) are PNGs drawn by matplotlib and embedded as data URLs, and the
clusters are embedded as JSON that a small script renders one page at a time, so a report of
100,000 clusters opens as fast as one of ten. Clusters come largest first; each removed
document is shown beside the document it duplicates (its ``duplicate_of``, else the cluster's
kept document) with their shared passages highlighted: the words covered by a word w-shingle
that both texts contain (the same shingles resemblance counts).

Clusters file rows: ``{"id", "cluster", "kept", "duplicate_of", "score"}``; files without
``duplicate_of``/``score`` (older runs) still work: a removed document is then paired with a
document of its cluster from the run's ``--pairs`` file when one is given (the kept member if
they form a pair, else its best-scoring pair) and shows that score; without a pairs file it is
paired with the kept member and shows no score.

Rows of a paragraph run (``dedup --unit paragraph|line``) also name ``"paragraph"`` (and
``"duplicate_of_paragraph"``): each member is then that paragraph, shown as ``ID ¶N`` with the
paragraph's text (its document split again by ``neardup.paragraphs``).
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .compare import word_spans
from .errors import InputError, NeardupError
from .io import plan_outputs
from .io._atomic import open_output
from .io._report import MAX_RECORD_SIZE, OnError
from .io._source import Fmt, Inputs
from .params import ShingleParams
from .report_files import check_minimums, on_disk
from .report_inputs import (
    ClusterRow,
    check_summary,
    check_whole,
    iter_pairs,
    read_clusters,
    read_run_texts,
    run_summary_of,
    run_unit,
)
from .shingles import shingle_sequence

#: Default number of largest clusters whose texts are embedded (the rest list ids and scores).
TEXT_CLUSTERS = 2000
#: Default characters of each document's text shown.
MAX_CHARS = 3000


@dataclass(frozen=True)
class ReportStats:
    """What a report holds: counts, and the size of the HTML file written."""

    input_documents: int
    clusters: int
    documents_in_clusters: int
    removed: int
    pairs: int
    clusters_with_text: int
    scores: int
    bytes: int
    #: What the members are: "document", or "paragraph" / "line" for a paragraph run's rows.
    unit: str = "document"


def _best_partners(
    rows: list[ClusterRow], pairs: Iterable[tuple[str, str, float]]
) -> dict[str, tuple[str, float]]:
    """For clusters files without ``duplicate_of``: each removed document's partner from the
    pairs file, in its cluster, the kept member first, else its highest-scoring pair."""
    label = {r.id: r.cluster for r in rows}
    kept = {r.id for r in rows if r.kept}
    best: dict[str, tuple[tuple[bool, float], str, float]] = {}
    for a, b, score in pairs:
        if a not in label or label.get(b) != label[a]:
            continue
        for me, other in ((a, b), (b, a)):
            if me in kept:
                continue
            rank = (other in kept, score)
            if me not in best or rank > best[me][0]:
                best[me] = (rank, other, score)
    return {me: (other, score) for me, (_, other, score) in best.items()}


def _utf16_offsets(text: str) -> npt.NDArray[np.int64]:
    """UTF-16 offset of every code-point offset 0..len(text) (JavaScript strings count so)."""
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    out = np.zeros(len(cps) + 1, dtype=np.int64)
    np.cumsum(np.where(cps > 0xFFFF, 2, 1), out=out[1:])
    return out


@dataclass
class _Shingled:
    """Word spans and shingle fingerprints (in token order) of the shown texts."""

    fps: npt.NDArray[np.uint64]
    offsets: npt.NDArray[np.int64]
    spans: list[npt.NDArray[np.int64]]
    utf16: list[npt.NDArray[np.int64]]


def _shingle_texts(texts: Sequence[str], params: ShingleParams) -> _Shingled:
    fps, offsets = shingle_sequence(texts, params)
    spans = [np.asarray(word_spans(t), dtype=np.int64).reshape(-1, 2) for t in texts]
    return _Shingled(fps, offsets, spans, [_utf16_offsets(t) for t in texts])


def shared_spans(sh: _Shingled, i: int, j: int, w: int, limit: int | None = None) -> list[int]:
    """Passages of text i made of words covered by a w-shingle that text j also has, as a flat
    list [start, length, start, length, ...] in UTF-16 code units, cut at ``limit`` code units
    (the shown part of the text) when given."""
    mine = sh.fps[sh.offsets[i] : sh.offsets[i + 1]]
    theirs = sh.fps[sh.offsets[j] : sh.offsets[j + 1]]
    spans = sh.spans[i]
    ntok = len(spans)
    if not len(mine) or not len(theirs) or not ntok:
        return []
    hit = np.flatnonzero(np.isin(mine, theirs))
    if not hit.size:
        return []
    width = min(w, ntok)  # a text shorter than w words is one shingle of all its words
    cover = np.zeros(ntok + 1, dtype=np.int64)
    np.add.at(cover, hit, 1)
    np.add.at(cover, np.minimum(hit + width, ntok), -1)
    marked = np.cumsum(cover[:-1]) > 0
    edges = np.diff(np.concatenate(([0], marked.astype(np.int8), [0])))
    first = np.flatnonzero(edges == 1)
    last = np.flatnonzero(edges == -1) - 1
    u16 = sh.utf16[i]
    starts = u16[spans[first, 0]]
    ends = u16[spans[last, 1]]
    if limit is not None:
        inside = starts < limit
        starts, ends = starts[inside], np.minimum(ends[inside], limit)
    return np.column_stack((starts, ends - starts)).ravel().tolist()


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _figures(scores: npt.NDArray[np.float64], sizes: npt.NDArray[np.int64]) -> list[str]:
    """Histograms of pair scores and of cluster sizes as PNG data URLs."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NeardupError(
            "the report's figures need matplotlib; install it with: pip install 'neardup[plot]'"
        ) from exc
    out = []
    fig = Figure(figsize=(5.2, 3.0))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    if scores.size:
        ax.hist(
            scores,
            bins=np.linspace(min(0.5, float(scores.min())), 1.0, 41).tolist(),
            color="#3b6ea8",
        )
        ax.set(xlabel="score of the pair (removed, kept)", ylabel="pairs")
    else:
        ax.text(0.5, 0.5, "no scores in the clusters file", ha="center", va="center")
        ax.set_axis_off()
    ax.set_title("pair scores")
    fig.tight_layout()
    out.append(_png(fig))
    fig = Figure(figsize=(5.2, 3.0))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    if sizes.size:
        values, counts = np.unique(sizes, return_counts=True)
        ax.bar(values, counts, width=0.8 if values.max() < 40 else 1.0, color="#a8553b")
        if counts.max() > 20 * counts.min():
            ax.set_yscale("log")
        if values.max() > 40:
            ax.set_xscale("log")
        else:
            ax.set_xticks(values[:: max(1, len(values) // 12)])
        ax.set(xlabel="documents in the cluster", ylabel="clusters")
    ax.set_title("cluster sizes")
    fig.tight_layout()
    out.append(_png(fig))
    return out


def _template() -> str:
    return resources.files("neardup").joinpath("templates/report.html").read_text("utf-8")


def _script_json(value: object) -> str:
    """JSON safe inside <script type="application/json">: every "<" is written \\u003c, so no
    text ("</script>", "<!--<script>") can end the element or change how it is parsed; never
    NaN or Infinity, which the browser's JSON.parse refuses (a blank page); a lone surrogate
    (a JSONL ``"\\udfff"``, which no UTF-8 can hold) is written as its escape too."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text.replace("<", "\\u003c"))


#: A surrogate code point in a Python string, which UTF-8 cannot hold and a JSON escape can.
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class _Layout:
    """What the page shows: clusters as [label, size, kept docs, pairs], documents as
    [id, shown text or None, characters not shown], and every pair score found."""

    clusters: list[list[Any]]
    docs: list[list[Any]]
    scores: npt.NDArray[np.float64]
    pairs: int


def _layout(
    rows: list[ClusterRow],
    order: list[int],
    by_label: dict[int, list[int]],
    texts: dict[str, str],
    from_pairs: dict[str, tuple[str, float]],
    shingle: ShingleParams,
    max_chars: int,
    text_clusters: int,
) -> _Layout:
    """Each removed document beside its partner (``duplicate_of``, else the pairs file's
    choice, else the kept member), with their shared passages for the clusters with texts."""
    doc_index: dict[str, int] = {}
    for row in rows:
        doc_index.setdefault(row.id, len(doc_index))
    shown = sorted(texts, key=doc_index.__getitem__)
    # shared passages are found in the whole texts, then cut to the part shown
    sh = _shingle_texts([texts[d] for d in shown], shingle)
    limit = [int(sh.utf16[k][min(max_chars, len(texts[d]))]) for k, d in enumerate(shown)]
    slot = {d: i for i, d in enumerate(shown)}
    clusters: list[list[Any]] = []
    scores: list[float] = []
    n_pairs = 0
    for rank, label in enumerate(order):
        members = [rows[k] for k in by_label[label]]
        kept = [m for m in members if m.kept]  # one at least (check_whole)
        pair_rows: list[list[Any]] = []
        for m in members:
            if m.kept and m in kept:
                continue
            partner, score = m.duplicate_of, m.score
            if partner not in doc_index and m.id in from_pairs:
                partner, found = from_pairs[m.id]
                score = found if score is None else score
            if partner not in doc_index:
                partner = kept[0].id
            if score is not None:
                scores.append(score)
            pair: list[Any] = [doc_index[m.id], doc_index[partner], score]
            if rank < text_clusters and m.id in slot and partner in slot:
                a, b = slot[m.id], slot[partner]
                pair += [
                    shared_spans(sh, a, b, shingle.w, limit[a]),
                    shared_spans(sh, b, a, shingle.w, limit[b]),
                ]
            pair_rows.append(pair)
        n_pairs += len(pair_rows)
        clusters.append([label, len(members), [doc_index[m.id] for m in kept], pair_rows])
    docs = [
        [d, texts[d][:max_chars], max(0, len(texts[d]) - max_chars)] if d in texts else [d, None, 0]
        for d in doc_index
    ]
    return _Layout(clusters, docs, np.asarray(scores, dtype=np.float64), n_pairs)


def _summary(
    n_input: int,
    rows: list[ClusterRow],
    sizes: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    text_clusters: int,
    max_chars: int,
    run: dict[str, Any] | None,
    pairs_given: bool = False,
) -> list[tuple[str, str]]:
    """The (name, value) rows of the summary table (and those of the run's summary ``run``)."""
    removed = sum(1 for r in rows if not r.kept)
    if scores.size:
        pair_scores = f"min {scores.min():.3f}, median {np.median(scores):.3f}"
    elif not removed:
        pair_scores = "none: the clusters file has no removed document"
    elif pairs_given:
        pair_scores = "none: neither the clusters file nor the --pairs file has them"
    else:
        pair_scores = "not in the clusters file (an older run; give --pairs)"
    out = [
        ("input documents", f"{n_input:,}"),
        ("clusters (2 or more documents)", f"{sizes.size:,}"),
        ("documents in clusters", f"{len(rows):,}"),
        ("documents removed", f"{removed:,}"),
        ("documents kept", f"{n_input - removed:,}"),
        ("largest cluster", f"{int(sizes.max()) if sizes.size else 0:,} documents"),
        ("pair scores", pair_scores),
        (
            "texts shown",
            f"largest {min(text_clusters, sizes.size):,} clusters, "
            f"first {max_chars:,} characters of each document",
        ),
    ]
    if run is not None:
        for key in ("params", "seconds", "candidate_pairs", "accepted_pairs"):
            if key in run:
                value = run[key]
                shown = json.dumps(value, sort_keys=True) if isinstance(value, dict) else str(value)
                out.append((f"run: {key}", shown))
    return out


def _page(title: str, summary: list[tuple[str, str]], figures: list[str], data: object) -> bytes:
    """The template filled in, in one pass (a placeholder inside a value is never replaced)."""
    fills = {
        "TITLE": html.escape(title),
        "SUMMARY": "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in summary
        ),
        "FIG_SCORES": figures[0],
        "FIG_SIZES": figures[1],
        "DATA": _script_json(data),
    }
    page = re.sub(r"\{\{([A-Z_]+)\}\}", lambda m: fills[m.group(1)], _template())
    return page.encode("utf-8", "replace")  # the data has none; a lone surrogate elsewhere: "?"


def _by_size(rows: list[ClusterRow]) -> tuple[dict[int, list[int]], list[int]]:
    """The rows of each cluster label (in file order), and the labels largest first."""
    by_label: dict[int, list[int]] = {}
    for k, row in enumerate(rows):
        by_label.setdefault(row.cluster, []).append(k)
    return by_label, sorted(by_label, key=lambda c: (-len(by_label[c]), c))


def _partners(rows: list[ClusterRow], pairs: str | Path | None) -> dict[str, tuple[str, float]]:
    """Each removed row's best partner from the pairs file, used only when the clusters file
    has no ``duplicate_of`` for some removed row; a named file is read through either way, so
    a missing or corrupt one is refused, never passed over."""
    if pairs is None:
        return {}
    if not Path(pairs).exists():
        raise InputError(f"--pairs {pairs}: file not found; check the path")
    rows_read = iter_pairs(pairs)
    if not any(r.duplicate_of is None and not r.kept for r in rows):
        for _ in rows_read:  # checked, not kept
            pass
        return {}
    return _best_partners(rows, rows_read)


def _shown_units(
    rows: list[ClusterRow], shown: Sequence[int], by_label: dict[int, list[int]]
) -> dict[str, list[tuple[int, str]]] | None:
    """For a paragraph run's clusters file: (paragraph number, row id) of each document's
    paragraphs in the ``shown`` clusters; None for whole documents."""
    if not any(r.paragraph is not None for r in rows):
        return None
    units: dict[str, list[tuple[int, str]]] = {}
    for c in shown:
        for k in by_label[c]:
            row = rows[k]
            if row.doc is not None and row.paragraph is not None:
                units.setdefault(row.doc, []).append((row.paragraph, row.id))
    return units


def _as_units(summary: list[tuple[str, str]], unit: str) -> list[tuple[str, str]]:
    """The summary rows of a run whose members are paragraphs or lines."""
    out = [
        (k.replace("documents", f"{unit}s"), v.replace("document", unit))
        for k, v in summary
        if k != "documents kept"
    ]
    out[0] = ("input documents", out[0][1])
    return out


def write_report(
    inputs: Inputs,
    clusters: str | Path,
    out: str | Path,
    *,
    pairs: str | Path | None = None,
    run_summary: str | Path | None = None,
    fmt: Fmt | None = None,
    text_field: str = "text",
    id_field: str = "id",
    on_error: OnError = "stop",
    max_record_size: int = MAX_RECORD_SIZE,
    shingle: ShingleParams = ShingleParams(),
    max_chars: int = MAX_CHARS,
    text_clusters: int = TEXT_CLUSTERS,
    page_size: int = 20,
    title: str = "neardup report",
) -> ReportStats:
    """Write the HTML report of a run to ``out`` (atomically); see the module docstring.

    ``inputs`` (and format/field options) must be what the run read, so ids match. Texts of
    the ``text_clusters`` largest clusters are embedded, each cut to ``max_chars`` characters;
    shared passages are found with word ``shingle.w``-shingles. ``pairs`` (the run's pairs
    file, always checked) gives partners to clusters files without ``duplicate_of``;
    ``run_summary`` (its ``--summary-json``, checked too) adds parameters and timing.
    """
    check_minimums(("max_chars", max_chars, 1), ("text_clusters", text_clusters, 0))
    check_minimums(("page_size", page_size, 1))
    sources = [*on_disk(inputs), *(x for x in (clusters, pairs, run_summary) if x is not None)]
    plan = plan_outputs(sources, {"-o": out})
    rows = read_clusters(clusters)
    check_whole(rows, clusters)
    from_pairs = _partners(rows, pairs)  # every named file read before the input
    run = run_summary_of(run_summary)
    by_label, order = _by_size(rows)
    need = {rows[k].id for c in order[:text_clusters] for k in by_label[c]}
    units = _shown_units(rows, order[:text_clusters], by_label)
    unit = run_unit(rows, run)  # before the texts: a line run's rows number lines, not paragraphs
    texts, n_input = read_run_texts(
        (inputs, fmt, text_field, id_field, on_error, max_record_size), need, units, unit, run
    )
    check_summary(run, run_summary, clusters, n_input, rows, unit)
    layout = _layout(rows, order, by_label, texts, from_pairs, shingle, max_chars, text_clusters)
    sizes = np.asarray([len(by_label[c]) for c in order], dtype=np.int64)
    summary = _summary(
        n_input, rows, sizes, layout.scores, text_clusters, max_chars, run, pairs is not None
    )
    if unit != "document":
        summary = _as_units(summary, unit)
    data = {"pageSize": page_size, "w": shingle.w, "clusters": layout.clusters, "docs": layout.docs}
    encoded = _page(title, summary, _figures(layout.scores, sizes), data)
    with plan.commit(), open_output(plan["-o"]) as fh:
        fh.write(encoded)
    return ReportStats(
        n_input, len(order), len(rows), sum(1 for r in rows if not r.kept), layout.pairs,
        min(text_clusters, len(order)), int(layout.scores.size), len(encoded), unit,
    )  # fmt: skip
