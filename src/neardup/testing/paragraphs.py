"""Paragraph deduplication's test material: a corpus of unique documents sharing boilerplate
paragraphs, and the exact truth over all paragraph pairs.

``paragraph_corpus`` writes documents whose own paragraphs are unique but which carry licence
headers, signatures (some lightly edited) and quoted replies of earlier documents' paragraphs
("> " before each line, sometimes edited), joined by varied separators (blank lines, lines of
spaces, CRLF). ``unit_truth`` splits any texts by the same rule as ``dedup --unit`` and lists
every pair of compared units (``min_tokens`` or more tokens) at or above the threshold by exact
Jaccard (``setjoin.similar_pairs``, an exact join), so removals can be judged against it with
``testing.measures``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._types import IntArray
from ..paragraphs import Unit, split
from ..params import ShingleParams
from ..setjoin import similar_pairs
from ..shingles import shingle_batch
from .synth import edit, random_documents

_SEPARATORS = ("\n\n", "\n\n\n", "\n \n", "\n\t\n", "\r\n\r\n")


def _licences(seed: int) -> list[str]:
    return [" ".join(text.split()) for text in random_documents(3, seed + 101, words=(40, 60))]


def _signatures(seed: int) -> list[str]:
    people = random_documents(8, seed + 202, words=(8, 16))
    return [
        "-- \n" + " ".join(text.split()[:4]) + "\n" + " ".join(text.split()[4:]) for text in people
    ]


def paragraph_corpus(n: int, seed: int = 0) -> list[str]:
    """``n`` documents of 1-4 unique paragraphs, with shared and near-shared paragraphs."""
    rng = np.random.default_rng(seed)
    bodies = random_documents(4 * n, seed, words=(12, 80))
    licences, signatures = _licences(seed), _signatures(seed)
    out: list[str] = []
    own: list[list[str]] = []
    for i in range(n):
        count = int(rng.integers(1, 5))
        paras = [" ".join(t.split()) for t in bodies[4 * i : 4 * i + count]]
        own.append(paras)
        parts: list[str] = []
        if rng.random() < 0.25:
            parts.append(licences[int(rng.integers(len(licences)))])
        if out and rng.random() < 0.4:  # a quoted reply of an earlier document's paragraph
            earlier = own[int(rng.integers(len(own) - 1))]
            quoted = earlier[int(rng.integers(len(earlier)))]
            if rng.random() < 0.6:  # edited: some stay above the threshold, some fall below
                quoted = edit(quoted, float(rng.uniform(0.01, 0.08)), int(rng.integers(2**31)))
            words = quoted.split()
            lines = [" ".join(words[k : k + 9]) for k in range(0, len(words), 9)]
            parts.append("\n".join("> " + line for line in lines))
        parts.extend(paras)
        if rng.random() < 0.15:
            parts.append("Thanks,")  # a short paragraph: left alone
        if rng.random() < 0.5:
            sig = signatures[int(rng.integers(len(signatures)))]
            if rng.random() < 0.3:
                sig = edit(sig, float(rng.uniform(0.02, 0.1)), int(rng.integers(2**31)))
            parts.append(sig)
        if rng.random() < 0.03:  # nothing but a signature: a document left empty
            parts = [signatures[0]]
        text = ""
        for k, part in enumerate(parts):
            text += part + (
                _SEPARATORS[int(rng.integers(len(_SEPARATORS)))] if k + 1 < len(parts) else ""
            )
        if rng.random() < 0.5:
            text += "\n"
        out.append(text)
    return out


@dataclass(frozen=True)
class UnitTruth:
    """The compared units of a collection and every pair of them at or above the threshold:
    unit i is paragraph ``part[i]`` of document ``doc[i]``; pairs (a < b) index the units."""

    doc: IntArray
    part: IntArray
    a: IntArray
    b: IntArray
    score: npt.NDArray[np.float64]


def unit_truth(
    texts: Sequence[str],
    threshold: float,
    unit: Unit = "paragraph",
    min_tokens: int = 5,
    shingle: ShingleParams | None = None,
) -> UnitTruth:
    """Every pair of units with ``min_tokens`` or more tokens whose exact Jaccard is at or
    above ``threshold``, in input order (document, then unit)."""
    shingle = shingle or ShingleParams()
    found = split(texts, unit, shingle.tokens)
    rows = np.flatnonzero(found.tokens >= min_tokens).astype(np.int64)
    first = np.zeros(len(found.counts) + 1, dtype=np.int64)
    np.cumsum(found.counts, out=first[1:])
    doc = (np.searchsorted(first, rows, side="right") - 1).astype(np.int64)
    sets = shingle_batch(found.texts(rows), shingle)
    join = similar_pairs(sets, threshold)
    return UnitTruth(doc, rows - first[doc], join.a, join.b, join.score)
