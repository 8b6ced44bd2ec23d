"""What the index answers: a stored document a query matches, what an add did, what a dedup kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._types import BoolArray


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
