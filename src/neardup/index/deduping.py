"""``Index.dedup_stream``: the documents a batch keeps, as one document at a time keeps them.

A document is removed when it resembles a document held when its turn comes: a stored one (in
the index, or kept by an earlier batch and held apart without ``add``) or a kept one before it
in the batch. A stored document whose id a kept document earlier in the batch took over holds
that document's text from then on, so its old text removes nothing after it.

A batch is signed once and matched once against what is held when it begins. It is cut before
each document that resembles the old text of an id taken over earlier in its piece; the pieces
are settled in order: a match of a stored document whose id an earlier piece took over holds
unless that piece kept the taker, a document resembling a kept one of an earlier piece (held
in a small memory index of the batch's kept documents) is removed, and one ``Deduplicator``
run keeps first among the rest. Each document is matched against the store once and settled
once, so a batch costs what its documents cost, however many stored ids it replaces; its kept
documents are then stored together (one transaction).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._types import BoolArray, IntArray
from ..blocks import SignedBatch
from ..engine import Deduplicator
from ..params import DedupParams
from ..signing import sign_texts
from ..textbatch import check_texts
from .checks import check_ids
from .results import Answers, Deduplicated

if TYPE_CHECKING:
    from . import Index

#: Matches of a batch against documents held apart from it: the answers, whether the batch's
#: kept documents replace the documents of their ids there, and which documents were stored
#: before the dedup began (one flag per document the answers name).
Held = tuple[Answers, bool, BoolArray]


def dedup_batches(
    index: Index, batches: Iterable[tuple[Sequence[str], Sequence[str]]], add: bool
) -> Deduplicated:
    """``index.dedup_stream(batches, add=add)``: with ``add`` each batch's kept documents are
    stored in one transaction (the caller's, inside ``with index:``); without, they are held
    apart in a memory index, one snapshot for the whole stream."""
    seen = index if add else type(index).create(None, index.params, store_text=index.store_text)
    added: set[str] = set()  # ids this dedup stored: their documents were not stored before
    parts: list[BoolArray] = []
    in_index = in_input = 0
    try:
        with contextlib.nullcontext() if add else seen:
            for ids, texts in ((check_ids(i, len(t)), check_texts(t)) for i, t in batches):
                kept, of_index = _settle(index, seen, added, ids, texts)
                in_index += int(of_index.sum())
                in_input += int(len(texts) - kept.sum() - of_index.sum())
                parts.append(kept)
    finally:
        if seen is not index:
            seen.close()
    mask = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
    return Deduplicated(mask, in_index, in_input, int(mask.sum()) if add else 0)


def _settle(
    index: Index, seen: Index, added: set[str], ids: Sequence[str], texts: Sequence[str]
) -> tuple[BoolArray, BoolArray]:
    """One batch, signed once and matched once against what is held; its kept documents are
    then stored in ``seen`` (one transaction)."""
    signed = sign_texts(index.params, index.method, index.verifier, texts)
    query = (signed.canonical, signed.signatures, signed.evidence, list(texts))
    found = index._answer(query, None, None)
    before = np.array([i not in added for i in found.ids], dtype=bool)
    held: list[Held] = [(found, seen is index, before)]
    if seen is not index and len(seen):
        apart = seen._answer(query, None, None)
        held.append((apart, True, np.zeros(len(apart.ids), dtype=bool)))
    overlay: list[Index] = []  # the batch's kept documents, made for a second piece

    with contextlib.ExitStack() as stack:

        def earlier(rows: IntArray, new: IntArray) -> IntArray:
            """Which ``rows`` resemble a kept document of the batch (``new``: kept since)."""
            if not overlay:
                made = type(index).create(None, index.params, store_text=index.store_text)
                stack.callback(made.close)
                overlay.append(stack.enter_context(made))  # one snapshot for every piece
            at, new_at = rows.tolist(), new.tolist()
            new_ids, new_texts = [ids[i] for i in new_at], [texts[i] for i in new_at]
            overlay[0]._store(overlay[0]._prepare(new_ids, new_texts, None, None, signed.take(new)))
            part = signed.take(rows)
            ask = (part.canonical, part.signatures, part.evidence, [texts[i] for i in at])
            return overlay[0]._answer(ask, None, None).q

        kept, of_index = batch_kept(index.params, ids, texts, signed, held, earlier)
    rows = np.flatnonzero(kept)
    at = rows.tolist()
    kept_ids, kept_texts = [ids[i] for i in at], [texts[i] for i in at]
    seen._store(seen._prepare(kept_ids, kept_texts, None, None, signed.take(rows)))
    added.update(kept_ids if seen is index else ())
    return kept, of_index


def batch_kept(
    params: DedupParams,
    ids: Sequence[str],
    texts: Sequence[str],
    signed: SignedBatch,
    held: Sequence[Held],
    earlier: Callable[[IntArray, IntArray], IntArray],
) -> tuple[BoolArray, BoolArray]:
    """(kept, of_index): which documents to keep, and which of the others resemble a document
    stored before the dedup began that still holds that text when their turn comes.

    ``held``: the batch's matches against the documents held when it began. ``earlier(rows,
    new)``: which of ``rows`` resemble a kept document of the batch before them, ``new`` the
    ones kept since the last call (a document with a match there is removed)."""
    n = len(texts)
    q, rep, before = _pairs(ids, held)
    taken = (rep >= 0) & (rep < q)  # the id taken over before q: old text freed if rep is kept
    kept, of_index = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    shown = 0
    for lo, hi in itertools.pairwise([0, *_cuts(q, rep).tolist(), n]):
        inside = (q >= lo) & (q < hi)  # rep < lo where taken: the cuts put it before
        holds = inside & ~(taken & kept[np.where(taken, rep, 0)])
        hit = np.bincount(q[holds] - lo, minlength=hi - lo) > 0
        of_index[lo:hi] = np.bincount(q[holds & before] - lo, minlength=hi - lo) > 0
        if lo:  # kept documents of earlier pieces: those since the last piece are new there
            hit[earlier(np.arange(lo, hi), shown + np.flatnonzero(kept[shown:lo]))] = True
            shown = lo
        kept[lo:hi] = _first_kept(params, texts, signed, lo, hit)
    return kept, of_index


def _cuts(q: IntArray, rep: IntArray) -> IntArray:
    """Where to cut a batch so that no piece holds both a document taking over a stored id
    and a later document matching that id's old text (ascending rows, each > 0)."""
    late = (rep >= 0) & (rep < q)
    order = np.lexsort((rep[late], q[late]))
    cuts, start = [], 0
    for row, taker in zip(q[late][order].tolist(), rep[late][order].tolist(), strict=True):
        if taker >= start:  # taken over in the current piece: this document starts the next
            cuts.append(row)
            start = row
    return np.array(cuts, dtype=np.int64)


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


def _first_kept(
    params: DedupParams, texts: Sequence[str], signed: SignedBatch, lo: int, hit: BoolArray
) -> BoolArray:
    """Of the documents ``lo`` onwards (as many as ``hit``), those not hit that resemble no
    kept one before them (keep first), from their signed rows."""
    fresh = lo + np.flatnonzero(~hit)
    kept = np.zeros(len(hit), dtype=bool)
    if len(fresh):
        within = Deduplicator(params).append(signed.take(fresh))
        within.finish(fetch_texts=lambda docs: [texts[i] for i in fresh[docs].tolist()])
        kept[fresh[within.kept_] - lo] = True
    return kept
