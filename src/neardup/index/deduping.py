"""One batch of ``Index.dedup``: the documents it keeps, as one document at a time keeps them.

A document is removed when it resembles a document held when its turn comes: a stored one (in
the index, or kept by an earlier batch and held apart by ``dedup_stream`` without ``add``) or a
kept one before it in the batch. A stored document whose id a kept document earlier in the batch
took over holds that document's text from then on, so its old text removes nothing after it.
Whether that document is kept depends only on the documents before it, so the ids taken over
are settled in batch order: one more ``Deduplicator`` run for each that frees a text a later
document of the batch resembles (none when no copy of a replaced text follows).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._types import BoolArray, IntArray
from ..engine import Deduplicator
from ..params import DedupParams
from .results import Answers

#: Matches of a batch against documents held apart from it: the answers, whether the batch's
#: kept documents replace the documents of their ids there, and which documents were stored
#: before the dedup began (one flag per document the answers name).
Held = tuple[Answers, bool, BoolArray]


def batch_kept(
    params: DedupParams, ids: Sequence[str], texts: Sequence[str], held: Sequence[Held]
) -> tuple[BoolArray, BoolArray]:
    """(kept, of_index): which documents to keep, and which of the others resemble a document
    stored before the dedup began that still holds that text when their turn comes."""
    n = len(texts)
    q, rep, before = _pairs(ids, held)
    lasting = (rep < 0) | (q <= rep)  # matches no document of the batch can undo
    hit = np.bincount(q[lasting], minlength=n) > 0
    cq, cr = q[~lasting], rep[~lasting]  # undone if document cr, before cq, is kept
    freed = np.zeros(n, dtype=bool)  # kept documents of the batch that took over a stored id
    now = hit | (np.bincount(cq, minlength=n) > 0)
    kept = _first_kept(params, texts, now)
    for r in np.unique(cr).tolist():  # ascending: each is settled by the ones before it
        if not kept[r]:
            continue
        freed[r] = True
        after = hit | (np.bincount(cq[~freed[cr]], minlength=n) > 0)
        if not np.array_equal(after, now):
            now, kept = after, _first_kept(params, texts, after)
    holds = lasting.copy()
    holds[~lasting] = ~freed[cr]
    of_index = np.bincount(q[holds & before], minlength=n) > 0
    return kept, of_index


def _pairs(ids: Sequence[str], held: Sequence[Held]) -> tuple[IntArray, IntArray, BoolArray]:
    """Each match's query row, the batch row of a document taking over its stored document's
    id (-1: none) and whether that document was stored before the dedup began."""
    q, rep, before = [], [], []
    for found, replaced, stored_before in held:
        q.append(found.q)
        where = _rows(ids, found.ids) if replaced else np.full(len(found.ids), -1, np.int64)
        rep.append(where[found.doc])
        before.append(stored_before[found.doc])
    if not q:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, dtype=bool)
    return np.concatenate(q), np.concatenate(rep), np.concatenate(before)


def _rows(ids: Sequence[str], wanted: Sequence[str]) -> IntArray:
    """The row of each ``wanted`` id among ``ids`` (distinct), -1 where it is not there."""
    if not len(ids) or not len(wanted):
        return np.full(len(wanted), -1, np.int64)
    batch = np.array(ids, dtype=object)
    order = np.argsort(batch, kind="stable")
    look = np.array(wanted, dtype=object)
    at = np.searchsorted(batch[order], look).clip(max=len(batch) - 1)
    found = batch[order][at] == look
    return np.where(found, order[at], -1).astype(np.int64)


def _first_kept(params: DedupParams, texts: Sequence[str], hit: BoolArray) -> BoolArray:
    """The documents not ``hit`` that resemble no kept one before them (keep first)."""
    fresh = np.flatnonzero(~hit)
    kept = np.zeros(len(texts), dtype=bool)
    if len(fresh):
        within = Deduplicator(params).fit([texts[i] for i in fresh.tolist()])
        kept[fresh[within.kept_]] = True
    return kept
