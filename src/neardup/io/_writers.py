"""Result writers: cluster labels and scored pairs (arrays) -> JSON Lines, written atomically.

Rows are formatted in chunks from NumPy arrays (``tolist`` once per chunk, ids JSON-escaped once
each), so the per-row cost is one f-string.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import ParamError
from ._atomic import Output, open_output

#: Rows formatted and written per chunk.
CHUNK_ROWS = 65_536


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


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
) -> int:
    """Write ``{"id", "cluster", "kept", "duplicate_of", "score"}`` per document; returns rows.

    ``cluster`` (integers) and ``kept`` (bools) are indexed by document position, like ``ids``;
    ``rows`` optionally selects which documents to write (e.g. only those in clusters of two or
    more), in the order given. With ``duplicate_of`` (the kept document a removed one duplicates,
    -1 for kept ones) and ``score`` (that pair's score, NaN when unknown) each row also names the
    kept document's id and the score (``null`` for kept documents). ``out`` is a path (written
    atomically, gzip if ``.gz``), ``"-"`` or a binary stream.
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
    with open_output(out) as handle:
        for lo in range(0, select.size, CHUNK_ROWS):
            chunk = select[lo : lo + CHUNK_ROWS]
            lines = []
            for i, c, k, d, sc in zip(
                chunk.tolist(),
                labels[chunk].tolist(),
                flags[chunk].tolist(),
                dup[chunk].tolist(),
                scores[chunk].tolist(),
                strict=True,
            ):
                line = (
                    f'{{"id": {_quote(ids[i])}, "cluster": {c}, "kept": {"true" if k else "false"}'
                )
                if explain:
                    other = _quote(ids[d]) if d >= 0 else "null"
                    value = repr(sc) if sc == sc else "null"  # NaN: no direct pair
                    line += f', "duplicate_of": {other}, "score": {value}'
                lines.append(line + "}\n")
            handle.write("".join(lines).encode("utf-8"))
    return int(select.size)


def write_pairs(
    out: Output,
    ids: Sequence[str],
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    score: npt.ArrayLike,
) -> int:
    """Write ``{"id_a": ..., "id_b": ..., "score": ...}`` per pair; returns rows written.

    ``a`` and ``b`` are document indices into ``ids``; ``score`` is a finite float per pair,
    written with full (shortest round-trip) precision.
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
    quoted: dict[int, str] = {}
    with open_output(out) as handle:
        for lo in range(0, left.size, CHUNK_ROWS):
            hi = lo + CHUNK_ROWS
            chunk_a, chunk_b = left[lo:hi].tolist(), right[lo:hi].tolist()
            for i in np.unique(np.concatenate([left[lo:hi], right[lo:hi]])).tolist():
                if i not in quoted:
                    quoted[i] = _quote(ids[i])
            lines = [
                f'{{"id_a": {quoted[i]}, "id_b": {quoted[j]}, "score": {s!r}}}\n'
                for i, j, s in zip(chunk_a, chunk_b, scores[lo:hi].tolist(), strict=True)
            ]
            handle.write("".join(lines).encode("utf-8"))
    return int(left.size)
