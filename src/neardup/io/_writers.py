"""Result writers: cluster labels and scored pairs (arrays) -> JSON Lines, written atomically.

Rows are formatted in chunks from NumPy arrays (``tolist`` once per chunk, ids JSON-escaped once
each), so the per-row cost is one f-string.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from json.encoder import encode_basestring

import numpy as np
import numpy.typing as npt

from ..errors import ParamError
from ._atomic import Output, open_output

#: Rows formatted and written per chunk.
CHUNK_ROWS = 65_536


_SURROGATE = re.compile("[\ud800-\udfff]")


def _quote(value: str) -> str:
    """``json.dumps(value, ensure_ascii=False)`` for a string: the C encoder it ends in, without
    its per-call set-up (12 us a call, most of a clusters line's cost)."""
    return encode_basestring(value)


def _encode(text: str) -> bytes:
    """UTF-8 of formatted rows; lone surrogates (ids from JSON ``"\\ud800"`` escapes or from
    undecodable file names) can only occur inside JSON strings, where ``\\uXXXX`` escapes
    them exactly, so ``json.loads`` gives back the original id."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def _index_array(name: str, values: npt.ArrayLike, n_ids: int) -> npt.NDArray[np.int64]:
    array = np.asarray(values)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ParamError(f"{name} must be a 1-d integer array of document indices")
    if array.size and (array.min() < 0 or array.max() >= n_ids):
        raise ParamError(f"{name} holds document indices outside 0..{n_ids - 1}")
    return array.astype(np.int64, copy=False)


def write_clusters(
    out: Output,
    ids: Sequence[str],
    cluster: npt.ArrayLike,
    kept: npt.ArrayLike,
    rows: npt.ArrayLike | None = None,
    duplicate_of: npt.ArrayLike | None = None,
    score: npt.ArrayLike | None = None,
    parts: npt.ArrayLike | None = None,
) -> int:
    """Write ``{"id", "cluster", "kept", "duplicate_of", "score"}`` per document; returns rows.

    ``cluster`` (integers) and ``kept`` (bools) are indexed by document position, like ``ids``;
    ``rows`` optionally selects which documents to write (e.g. only those in clusters of two or
    more), in the order given. With ``duplicate_of`` (the kept document a removed one duplicates,
    -1 for kept ones) and ``score`` (that pair's score, NaN when unknown) each row also names the
    kept document's id and the score (``null`` for kept documents). ``out`` is a path (written
    atomically, gzip if ``.gz``), ``"-"`` or a binary stream. ``parts`` (paragraph
    deduplication: each row is a paragraph, ``ids[i]`` its document's id): each row also says
    ``"paragraph": parts[i]`` after its id, and ``"duplicate_of_paragraph"`` after
    ``"duplicate_of"``.
    """
    n = len(ids)
    labels = np.asarray(cluster)
    flags = np.asarray(kept)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ParamError(f"cluster must be an integer array with one label per id ({n})")
    if flags.shape != (n,) or flags.dtype != np.bool_:
        raise ParamError(f"kept must be a bool array with one flag per id ({n})")
    select = np.arange(n) if rows is None else _index_array("rows", rows, n)
    explain = duplicate_of is not None
    dup = np.asarray(duplicate_of if explain else np.full(n, -1), dtype=np.int64)
    scores = np.asarray(score if score is not None else np.full(n, np.nan), dtype=np.float64)
    if dup.shape != (n,) or scores.shape != (n,):
        raise ParamError(f"duplicate_of and score must have one value per id ({n})")
    part = None if parts is None else np.asarray(parts, dtype=np.int64)
    if part is not None and part.shape != (n,):
        raise ParamError(f"parts must have one value per id ({n})")
    columns = (labels, flags, dup, scores)
    with open_output(out) as handle:
        for lo in range(0, select.size, CHUNK_ROWS):
            chunk = select[lo : lo + CHUNK_ROWS]
            handle.write(_encode(_cluster_lines(ids, chunk, columns, part, explain)))
    return int(select.size)


def _cluster_lines(
    ids: Sequence[str],
    chunk: npt.NDArray[np.int64],
    columns: tuple[npt.NDArray[np.generic], ...],
    part: npt.NDArray[np.int64] | None,
    explain: bool,
) -> str:
    """The clusters file's lines of documents ``chunk``; ``columns``: (cluster, kept,
    duplicate_of, score) by document."""
    labels, flags, dup, scores = columns
    lines = []
    for i, c, k, d, sc in zip(
        chunk.tolist(),
        labels[chunk].tolist(),
        flags[chunk].tolist(),
        dup[chunk].tolist(),
        scores[chunk].tolist(),
        strict=True,
    ):
        where = "" if part is None else f', "paragraph": {part[i]}'
        line = (
            f'{{"id": {_quote(ids[i])}{where}, "cluster": {c}, "kept": {"true" if k else "false"}'
        )
        if explain:
            other = _quote(ids[d]) if d >= 0 else "null"
            value = repr(sc) if sc == sc else "null"  # NaN: no direct pair
            line += f', "duplicate_of": {other}'
            if part is not None:
                line += f', "duplicate_of_paragraph": {part[d] if d >= 0 else "null"}'
            line += f', "score": {value}'
        lines.append(line + "}\n")
    return "".join(lines)


def write_pairs(
    out: Output,
    ids: Sequence[str],
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    score: npt.ArrayLike,
    parts: npt.ArrayLike | None = None,
) -> int:
    """Write ``{"id_a": ..., "id_b": ..., "score": ...}`` per pair; returns rows written.

    ``a`` and ``b`` are document indices into ``ids``; ``score`` is a finite float per pair,
    written with full (shortest round-trip) precision. ``parts`` (paragraphs, as for
    ``write_clusters``): ``"paragraph_a"`` and ``"paragraph_b"`` follow the ids.
    """
    n = len(ids)
    left = _index_array("a", a, n)
    right = _index_array("b", b, n)
    scores = np.asarray(score, dtype=np.float64)
    if not (left.shape == right.shape == scores.shape):
        raise ParamError(
            f"a, b and score must have equal lengths, got {left.size}, {right.size} and "
            f"{scores.size}"
        )
    if not np.isfinite(scores).all():
        raise ParamError("score holds NaN or infinite values, which JSON cannot represent")
    part = None if parts is None else np.asarray(parts, dtype=np.int64)
    if part is not None and part.shape != (n,):
        raise ParamError(f"parts must have one value per id ({n})")
    quoted: dict[int, str] = {}
    with open_output(out) as handle:
        for lo in range(0, left.size, CHUNK_ROWS):
            hi = lo + CHUNK_ROWS
            chunk_a, chunk_b = left[lo:hi].tolist(), right[lo:hi].tolist()
            for i in np.unique(np.concatenate([left[lo:hi], right[lo:hi]])).tolist():
                if i not in quoted:
                    quoted[i] = _quote(ids[i])
            if part is None:
                lines = [
                    f'{{"id_a": {quoted[i]}, "id_b": {quoted[j]}, "score": {s!r}}}\n'
                    for i, j, s in zip(chunk_a, chunk_b, scores[lo:hi].tolist(), strict=True)
                ]
            else:
                pa_, pb_ = part[left[lo:hi]].tolist(), part[right[lo:hi]].tolist()
                lines = [
                    f'{{"id_a": {quoted[i]}, "paragraph_a": {x}, "id_b": {quoted[j]}, '
                    f'"paragraph_b": {y}, "score": {s!r}}}\n'
                    for i, j, x, y, s in zip(
                        chunk_a, chunk_b, pa_, pb_, scores[lo:hi].tolist(), strict=True
                    )
                ]
            handle.write(_encode("".join(lines)))
    return int(left.size)
