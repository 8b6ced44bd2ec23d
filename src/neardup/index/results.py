"""What the index answers: a stored document a query matches, what an add did, what a dedup kept."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .._types import BoolArray, FloatArray, IntArray
from ..candidates import distinct


@dataclass(frozen=True)
class Match:
    """A stored document a query duplicates: kind is "exact", "near" or "contained".

    ``scores`` holds more than one score when the method gives them (containment both ways);
    ``last_seen`` is the stored document's date, when it has one.
    """

    id: str
    score: float
    kind: str
    scores: dict[str, float] = field(default_factory=dict)
    last_seen: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "score": round(self.score, 6), "kind": self.kind}
        out.update({k: round(v, 6) for k, v in self.scores.items()})
        if self.last_seen is not None:
            out["last_seen"] = self.last_seen
        return out


@dataclass(frozen=True, eq=False)  # compared as the sequence it is: list(a) == list(b)
class Answers(Sequence[list[Match]]):
    """A query batch's matches as columns, best first within each query (exact first, then by
    score, then by id): a sequence of Match lists, and the JSON lines ``neardup index query``
    writes without building one object per match (boilerplate queries match thousands each).

    ``q`` (ascending) is each match's query row, ``doc`` its position in ``ids`` and
    ``last_seen``; ``extra`` holds the method's further scores of the non-exact matches.
    """

    n: int
    q: IntArray
    doc: IntArray
    score: FloatArray
    exact: BoolArray
    kind: str
    extra: dict[str, FloatArray]
    ids: list[str]
    last_seen: list[str | None]

    @classmethod
    def ordered(
        cls,
        n: int,
        columns: tuple[IntArray, IntArray, FloatArray, BoolArray],
        kind: str,
        extra: dict[str, FloatArray],
        stored: tuple[list[str], list[str | None]],
        limit: int | None,
    ) -> Answers:
        """Matches (q, doc, score, exact) in any order -> best first per query, ``limit`` each."""
        q, doc, score, exact = columns
        ids, last_seen = stored
        rank = np.empty(len(ids), dtype=np.int64)
        rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
        order = np.lexsort((rank[doc], -score, ~exact, q))
        if limit is not None:
            sq = q[order]
            order = order[np.arange(len(sq)) - np.searchsorted(sq, sq) < limit]
        picked = {k: v[order] for k, v in extra.items()}
        return cls(
            n, q[order], doc[order], score[order], exact[order], kind, picked, ids, last_seen
        )

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        return self._lists[i]

    def __iter__(self) -> Iterator[list[Match]]:
        return iter(self._lists)

    def lists(self) -> list[list[Match]]:
        """One list of ``Match`` per query."""
        return self._lists

    @cached_property
    def _lists(self) -> list[list[Match]]:
        """The Match lists, built once (indexing the sequence query by query stays linear)."""
        out: list[list[Match]] = [[] for _ in range(self.n)]
        extra = {k: v.tolist() for k, v in self.extra.items()}
        columns = (self.q, self.doc, self.score, self.exact)
        rows = zip(*(c.tolist() for c in columns), strict=True)
        for i, (qi, j, score, exact) in enumerate(rows):
            if exact:
                match = Match(self.ids[j], score, "exact", {}, self.last_seen[j])
            else:
                scores = {k: v[i] for k, v in extra.items()}
                match = Match(self.ids[j], score, self.kind, scores, self.last_seen[j])
            out[qi].append(match)
        return out

    def json_lines(self, query_ids: Sequence[object]) -> str:
        """``{"id": ..., "matches": [Match.as_dict(), ...]}`` per query, one JSON line each,
        as ``json.dumps(..., ensure_ascii=False)`` writes them."""
        if len(query_ids) != self.n:
            raise ValueError(f"{len(query_ids)} query ids for {self.n} queries")
        used = distinct(self.doc)  # positions in the batch's loaded documents: no sort
        head = dict(zip(used.tolist(), [_json(self.ids[j]) for j in used.tolist()], strict=True))
        tail = {
            j: "" if self.last_seen[j] is None else f', "last_seen": {_json(self.last_seen[j])}'
            for j in used.tolist()
        }
        frags = np.empty(len(self.q), dtype=object)
        exact = np.flatnonzero(self.exact)
        if len(exact):
            one = {
                j: f'{{"id": {head[j]}, "score": {_number(1.0)}, "kind": "exact"{tail[j]}}}'
                for j in distinct(self.doc[exact]).tolist()
            }
            frags[exact] = [one[j] for j in self.doc[exact].tolist()]
        near = np.flatnonzero(~self.exact)
        if len(near):
            more = [""] * len(near)
            for k, v in self.extra.items():
                key = _json(k)
                more = [f"{m}, {key}: {x}" for m, x in zip(more, _numbers(v[near]), strict=True)]
            kind = _json(self.kind)
            frags[near] = [
                f'{{"id": {head[j]}, "score": {s}, "kind": {kind}{m}{tail[j]}}}'
                for j, s, m in zip(
                    self.doc[near].tolist(), _numbers(self.score[near]), more, strict=True
                )
            ]
        bounds = np.searchsorted(self.q, np.arange(self.n + 1)).tolist()
        return "".join(
            f'{{"id": {_json(qid)}, "matches": [{", ".join(frags[a:b])}]}}\n'
            for qid, a, b in zip(query_ids, bounds[:-1], bounds[1:], strict=True)
        )


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _number(x: float) -> str:
    """A score as ``Match.as_dict`` gives it (6 decimals) and ``json.dumps`` writes it."""
    r = round(x, 6)
    return repr(r) if math.isfinite(r) else json.dumps(r)


def _numbers(xs: FloatArray) -> list[str]:
    return [_number(x) for x in xs.tolist()]


#: A batch for ``Index.add_stream``: (ids, texts), optionally with metadata and dates.
Batch = (
    tuple[Sequence[str], Sequence[str]]
    | tuple[Sequence[str], Sequence[str], Sequence[dict[str, Any] | None] | None]
    | tuple[
        Sequence[str],
        Sequence[str],
        Sequence[dict[str, Any] | None] | None,
        Sequence[str | None] | None,
    ]
)


@dataclass(frozen=True)
class AddResult:
    """What an ``add`` did: documents new to the index and documents whose id was replaced."""

    added: int
    replaced: int


@dataclass(frozen=True)
class Compacted:
    """What a ``compact`` did: segments before and after (postings and id/hash keys together),
    and postings of removed documents it dropped."""

    segments_before: int
    segments_after: int
    dropped: int


@dataclass(frozen=True)
class Deduplicated:
    """What ``Index.dedup`` decided: ``kept``, one flag per document in input order; the others
    duplicate a stored document or a kept one earlier in the input. ``added``: kept documents
    written to the index (``add=True``)."""

    kept: BoolArray
    duplicates_of_index: int
    duplicates_in_input: int
    added: int

    def summary(self) -> dict[str, int]:
        """The counts, as ``neardup dedup --index`` writes them in its summary."""
        return {
            "documents": len(self.kept),
            "duplicates_of_index": self.duplicates_of_index,
            "duplicates_in_input": self.duplicates_in_input,
            "kept": int(np.count_nonzero(self.kept)),
            "added_to_index": self.added,
        }
