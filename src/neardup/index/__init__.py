"""A standing index: add documents, ask which stored documents a new one duplicates, remove.

    add:   texts -> content hash, method signatures, lookup postings, verification evidence
           -> one store transaction per batch
    query: texts -> exact matches (content hash) and stored documents sharing >= min_shared
           postings -> method score / acceptance -> verifier decision (and hybrid re-check on
           the stored texts) -> matches, best first
    dedup: texts -> query (the index, and the documents kept before) -> ``Deduplicator`` over
           the rest, as one at a time (``deduping``: an id replaced frees its old text) -> kept
           flags; with add=True the kept documents are added

Every array is computed by the method and verifier objects batch deduplication uses
(``neardup.methods``, ``neardup.verify``); the store (``SqliteStore`` on disk, ``MemoryStore``)
only keeps blobs and postings. So "query; keep if no match; add" over a stream keeps what
``Deduplicator`` with keep="first" keeps.

Lost and found: a document's id may be its URL, with the date it was last seen; adding an id
again replaces its content and moves its last-seen date; ``retire`` marks URLs gone and
``moved`` lists the live documents holding near-copies of a gone URL's last content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from .. import planner  # noqa: F401 - each batch's Deduplicator plans its features
from .._kernels.hashing import EMPTY
from .._prefetch import ordered_map
from ..blocks import SignedBatch
from ..candidates import distinct, find_sorted, stable_order
from ..errors import NeardupError, UnknownIdError
from ..methods import Method, Signatures, make_method, postings
from ..methods.base import column_keys
from ..params import DedupParams, check_flag
from ..signing import sign_texts
from ..text import Utf8Texts
from ..textbatch import TextBatch, check_texts
from ..verify import Evidence, Verifier, make_verifier
from .checks import (
    check_date,
    check_dates,
    check_ids,
    check_limit,
    meta_json,
    query_floor,
    refuse_conflicts,
    refuse_fit,
    stored_as_unicode,
)
from .codec import decode_evidence, decode_signatures, encode_evidence, encode_signatures
from .creating import create_file
from .deduping import dedup_batches
from .memory_store import MemoryStore
from .results import AddResult, Answers, Batch, Compacted, Deduplicated, Match
from .schema import SCHEMA_VERSION, check_meta, params_to_json
from .scoring import near_pairs
from .sqlite_store import SqliteStore, upgrade
from .store import Damage, IntArray, KeyArray, NewDocs, Store, StoredDocs
from .usage import closed

__all__ = [
    "SCHEMA_VERSION",
    "AddResult",
    "Answers",
    "Compacted",
    "Damage",
    "Deduplicated",
    "Index",
    "Match",
    "MemoryStore",
    "SqliteStore",
    "Store",
]


_B = TypeVar("_B")  # a batch of a query stream, handed back with its answers


class Index:
    """A standing near-duplicate index over a ``Store`` (see the module docstring).

    ``Index.create(path, params)`` / ``Index.open(path)``; ``path=None`` keeps it in memory.
    Each ``add``, ``remove`` and ``retire`` is one transaction, unless called inside
    ``with index:``, which commits everything on a clean exit and rolls back on an error.
    """

    def __init__(self, store: Store, params: DedupParams, store_text: bool) -> None:
        refuse_fit(params)
        self.store = store
        self.params = params
        self.store_text = store_text
        self.method: Method = make_method(params)
        self.verifier: Verifier = make_verifier(params)
        nothing = TextBatch([], params.shingle)
        self._like_sigs = self.method.signatures(nothing)
        self._like_ev = self.verifier.evidence(nothing)
        self._outer = False

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | None,
        params: DedupParams | None = None,
        *,
        store_text: bool | None = None,
        timeout: float = 10.0,
    ) -> Index:
        """A new, empty index at ``path`` (an SQLite file; None: in memory).

        store_text: keep each document's text (needed by hybrid verification, which re-checks
        borderline pairs on the texts; default: only then).
        """
        params = params or DedupParams()
        needs_texts = make_verifier(params).needs_texts
        keep = needs_texts if store_text is None else bool(store_text)
        refuse_conflicts(params, needs_texts, keep)
        index = cls(MemoryStore(), params, keep)  # the parameters refused before any file
        meta = {
            "schema_version": str(SCHEMA_VERSION),
            "params": params_to_json(params),
            "fingerprint": params.fingerprint(),
            "store_text": "1" if keep else "0",
        }
        if path is None:
            index.store.begin()
            index.store.write_meta(meta)
            index.store.commit()
            return index
        create_file(path, meta, timeout)  # whole, or nothing at path (a full disk, a kill)
        index.store = SqliteStore(path, timeout=timeout)
        return index

    @classmethod
    def open(cls, path: str, params: DedupParams | None = None, *, timeout: float = 10.0) -> Index:
        """The index at ``path``; with ``params``, IndexMismatchError unless it was built with them."""
        store = SqliteStore(path, timeout=timeout)
        try:
            meta = store.read_meta()
            found = check_meta(str(path), meta, params)
            return cls(store, found, meta.get("store_text") == "1")
        except BaseException:
            store.close()
            raise

    @staticmethod
    def upgrade(path: str, *, timeout: float = 10.0) -> int:
        """Upgrade the index at ``path`` from schema 3 in place (one transaction): add and fill
        its record checksums. Returns the documents it holds."""
        return upgrade(path, timeout)

    def close(self) -> None:
        self.store = closed(self.store)

    def __enter__(self) -> Index:
        self.store.begin()
        self._outer = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._outer = False
        if exc_type is None:
            try:
                self.store.commit()
            except BaseException:
                self.store.rollback()
                raise
        else:
            self.store.rollback()

    def _write(self, work: Callable[[], Any]) -> Any:
        """Run ``work`` in the open transaction, or in one of its own."""
        if self._outer:
            return work()
        self.store.begin()
        try:
            out = work()
            self.store.commit()
        except BaseException:
            self.store.rollback()
            raise
        return out

    # -- writes ------------------------------------------------------------------------------
    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        meta: Sequence[dict[str, Any] | None] | None = None,
        dates: Sequence[str | None] | None = None,
    ) -> AddResult:
        """Add documents (one transaction). An id already stored is replaced by the new text,
        keeping its first-seen date and taking the new date as last seen (and live again)."""
        return self._store(self.prepare(ids, texts, meta, dates))

    def add_stream(
        self,
        batches: Iterable[Batch],
        jobs: int = 1,
        done: Callable[[Batch], None] | None = None,
    ) -> AddResult:
        """Add batches (ids, texts[, meta[, dates]]) in order, one transaction each, signing up
        to ``jobs`` batches in threads while the previous one is written (the kernels and SQLite
        release the GIL); the index ends the same whatever ``jobs``. ``done`` sees each batch
        once it is committed."""
        added = replaced = 0
        for batch, ready in ordered_map(lambda b: self.prepare(*b), batches, jobs):
            result = self._store(ready)
            added += result.added
            replaced += result.replaced
            if done is not None:
                done(batch)
        return AddResult(added=added, replaced=replaced)

    def prepare(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        meta: Sequence[dict[str, Any] | None] | None = None,
        dates: Sequence[str | None] | None = None,
    ) -> NewDocs:
        """A batch checked and signed for ``add``: hashes, signatures, postings and evidence.

        Touches no store, so batches can be prepared in threads while another is written.
        """
        return self._prepare(ids, texts, meta, dates, None)

    def _prepare(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        meta: Sequence[dict[str, Any] | None] | None,
        dates: Sequence[str | None] | None,
        signed: SignedBatch | None,
    ) -> NewDocs:
        """``prepare``, with the texts' rows already signed by this index's parameters when
        ``signed`` is given (a dedup signs a batch once, then stores its kept rows)."""
        texts = check_texts(texts)
        ids = check_ids(ids, len(texts))
        stored_meta = meta_json(ids, meta)
        check_dates(ids, dates)
        if self.store.unicode_only:
            stored_as_unicode(ids, texts if self.store_text else None, meta, dates)
        if signed is None:
            signed = sign_texts(self.params, self.method, self.verifier, texts)
        sigs = signed.signatures
        row, key = self._postings(sigs, signed.canonical)
        n = len(texts)
        date_list: list[str | None] = list(dates) if dates is not None else [None] * n
        return NewDocs(
            ids=ids,
            hashes=signed.canonical,
            sigs=encode_signatures(sigs),
            evidence=encode_evidence(signed.evidence),
            texts=_stored(texts) if self.store_text else [None] * n,
            meta=stored_meta,
            first_seen=list(date_list),
            last_seen=date_list,
            posting_row=row,
            posting_key=key,
        )

    def _store(self, new: NewDocs) -> AddResult:
        """Write a prepared batch (one transaction), replacing the documents of ids it holds."""
        ids, n = new.ids, len(new.ids)

        def work() -> AddResult:
            old = self.store.find_ids(ids)
            present = np.flatnonzero(old >= 0)
            if len(present):
                stored = self.store.load(old[present])
                for i, first, last in zip(
                    present.tolist(), stored.first_seen, stored.last_seen, strict=True
                ):
                    if first is not None:
                        new.first_seen[i] = first
                    if new.last_seen[i] is None:  # no date given: the known one stays
                        new.last_seen[i] = last
                self._delete(stored)
            self.store.insert(new)
            return AddResult(added=n - len(present), replaced=len(present))

        return cast(AddResult, self._write(work))

    def remove(self, ids: Sequence[str]) -> int:
        """Remove documents by id (one transaction); an unknown id is an InputError, nothing changes."""
        ids = check_ids(ids, None)

        def work() -> int:
            docs = self._known(ids)
            self._delete(self.store.load(docs))
            return len(docs)

        return int(self._write(work))

    def retire(self, urls: Sequence[str], date: str | None = None) -> int:
        """Mark URLs gone (as of ``date``): no longer matched, still found by ``moved``. Without
        a date, a URL retired before keeps the date it was retired with."""
        urls = check_ids(urls, None)
        check_date(date)
        stored_as_unicode(urls, None, None, None if date is None else [date] * len(urls))

        def work() -> int:
            docs = self._known(urls)
            live = docs if date else docs[[g is None for g in self.store.load(docs).gone]]
            self.store.set_gone(live, date or "gone")
            return len(docs)

        return int(self._write(work))

    def compact(self) -> Compacted:
        """Merge the lookup keys' segments into one each (one transaction), dropping removed
        documents' postings: a query then reads one run per key, not one per segment (an index
        built batch by batch holds a few segments per size tier). For an index mostly queried;
        the file needs free room for one more copy of its postings until the commit."""
        before, after, dropped = cast(tuple[int, int, int], self._write(self.store.compact))
        return Compacted(segments_before=before, segments_after=after, dropped=dropped)

    def _known(self, ids: list[str]) -> IntArray:
        docs = self.store.find_ids(ids)
        missing = [i for i, d in zip(ids, docs.tolist(), strict=True) if d < 0]
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            said = f"{shown}{more}; nothing was changed"
            raise UnknownIdError(f"{len(missing)} id(s) not in the index: {said}")
        return docs

    def _delete(self, stored: StoredDocs) -> None:
        sigs = decode_signatures(stored.sigs, self._like_sigs)
        row, key = self._postings(sigs, stored.hashes)
        self.store.delete(stored.docs, stored.docs[row], key)

    def _postings(
        self, sigs: Signatures, hashes: npt.NDArray[np.uint64]
    ) -> tuple[IntArray, npt.NDArray[np.uint64]]:
        """(row, key) of each distinct posting, (column, key) folded into one 64-bit key.

        In (key, row) order, the order a store keeps postings in. Documents without tokens get
        none: as in batch deduplication, they are never paired.
        """
        row, col, key = postings(self.method, sigs)
        real = hashes[row] != EMPTY
        row, col, key = row[real], col[real], key[real]
        folded = column_keys(col, key)
        if len(row):
            order = stable_order(folded)  # rows come ascending: (key, row) order
            row, folded = row[order], folded[order]
            first = np.r_[True, (row[1:] != row[:-1]) | (folded[1:] != folded[:-1])]
            row, folded = row[first], folded[first]
        return row, folded

    # -- reads -------------------------------------------------------------------------------
    def hold_postings(self, budget: int) -> None:
        """Let lookups read the postings once and keep them in memory, up to ``budget`` bytes
        (12 a posting), when a batch of queries reads a quarter of them or more: for a job of
        many such batches, as ``neardup index query`` runs. The answers do not change; a write
        through this index or another connection's commit lets them go (read again when next
        worth it)."""
        self.store.hold(budget)

    def query(
        self, texts: Sequence[str], threshold: float | None = None, limit: int | None = None
    ) -> list[list[Match]]:
        """For each text, the live stored documents it duplicates, best first (exact first)."""
        return self.answers(texts, threshold, limit).lists()

    def answers(
        self, texts: Sequence[str], threshold: float | None = None, limit: int | None = None
    ) -> Answers:
        """``query``'s matches as columns (``Answers``: Match lists or JSON lines from them)."""
        return self._answer(self._signed_query(texts), threshold, limit)

    def query_stream(
        self,
        batches: Iterable[_B],
        texts: Callable[[_B], Sequence[str]],
        jobs: int = 1,
        threshold: float | None = None,
        limit: int | None = None,
    ) -> Iterator[tuple[_B, Answers]]:
        """``query`` over a stream of batches, in order, signing up to ``jobs`` batches in
        threads while the previous one is looked up (the kernels and SQLite release the GIL);
        the answers (a sequence of Match lists, or JSON lines) are those of ``query`` whatever
        ``jobs``."""
        signed = ordered_map(lambda b: self._signed_query(texts(b)), batches, jobs)
        for batch, ready in signed:
            yield batch, self._answer(ready, threshold, limit)

    def dedup(self, ids: Sequence[str], texts: Sequence[str], *, add: bool = False) -> Deduplicated:
        """Which documents to keep: those that duplicate neither a stored document nor a kept
        one earlier in ``texts``. With ``add``, the kept ones join the index (one transaction).

        The rule is keep-aware removal with the index's documents first, so the kept set is
        what "query; keep if no match; add" gives one document at a time; the index's own
        parameters decide. ``neardup dedup --index`` and ``POST /dedup`` call this."""
        return self.dedup_stream([(ids, texts)], add=add)

    def dedup_stream(
        self, batches: Iterable[tuple[Sequence[str], Sequence[str]]], *, add: bool = False
    ) -> Deduplicated:
        """``dedup`` over batches of (ids, texts) in order, as if they were one: without
        ``add`` the kept documents of earlier batches are held in memory and matched too; with
        it they are added, one transaction per batch. Neither the kept set nor the counts
        depend on where the batches end: a duplicate of the index resembles a document stored
        before the call; the other removed documents duplicate a kept one of the input."""
        return dedup_batches(self, batches, check_flag("add", add))  # "yes" would mean write

    def _signed_query(self, texts: Sequence[str]) -> tuple[Any, Any, Any, list[str]]:
        """A query batch's content hashes, signatures and evidence: no store is touched."""
        texts = check_texts(texts)
        signed = sign_texts(self.params, self.method, self.verifier, texts)
        return signed.canonical, signed.signatures, signed.evidence, list(texts)

    def _answer(
        self,
        signed: tuple[Any, Any, Any, list[str]],
        threshold: float | None,
        limit: int | None,
    ) -> Answers:
        hashes, sigs, ev, texts = signed
        limit = check_limit(limit)
        with self.store.snapshot():
            return self._match(hashes, sigs, ev, texts, threshold, limit)

    def moved(self, url: str, limit: int | None = None) -> list[Match]:
        """Live documents holding near-copies of ``url``'s last content, best first, with dates."""
        limit = check_limit(limit)
        with self.store.snapshot():
            return self._moved(url, limit)

    def _moved(self, url: str, limit: int | None) -> list[Match]:
        if (docs := self.store.find_ids([url]))[0] < 0:  # a query: nothing to change
            raise UnknownIdError(f"URL {url!r} is not in the index")
        stored = self.store.load(docs)
        sigs = decode_signatures(stored.sigs, self._like_sigs)
        ev = decode_evidence(stored.evidence, self._like_ev)
        texts = stored.texts if all(t is not None for t in stored.texts) else None
        found = self._match(stored.hashes, sigs, ev, texts, None, None, int(docs[0])).lists()[0]
        ordered = sorted(found, key=lambda m: (-m.score, _neg_date(m.last_seen), m.id))
        return ordered[:limit] if limit is not None else ordered

    def _match(
        self,
        hashes: npt.NDArray[np.uint64],
        sigs: Signatures,
        ev: Evidence,
        texts: Sequence[str | None] | None,
        threshold: float | None,
        limit: int | None,
        exclude: int = -1,
    ) -> Answers:
        floor = query_floor(self.params, threshold)
        nq = len(sigs)
        kind = getattr(self.method, "match_kind", "near")
        real = np.flatnonzero(hashes != EMPTY)
        eq, ed = self.store.exact(hashes[real])
        eq = real[eq]
        row, key = self._postings(sigs, hashes)
        q, d = self.store.shared(row, key, self.method.min_shared)
        docs = distinct(np.concatenate([ed, d]))  # near pairs by the million: no sort
        if exclude >= 0:
            docs = docs[docs != exclude]
        if len(docs):
            stored = self.store.load(docs)
            live = np.array([g is None for g in stored.gone], dtype=bool)
            docs, stored = docs[live], stored.take(np.flatnonzero(live))
            ids, last_seen, stored_hashes = stored.ids, stored.last_seen, stored.hashes
        else:
            ids, last_seen, stored_hashes = [], [], np.zeros(0, dtype=np.uint64)
        eq, ed = _live_pairs(eq, ed, docs, stored_hashes, hashes, exact=True)
        q, s = _live_pairs(q, d, docs, stored_hashes, hashes, exact=False)
        none = np.zeros(0, dtype=np.int64)
        q, s, score, extra = (
            near_pairs(
                self.method,
                self.verifier,
                (self._like_sigs, self._like_ev),
                q,
                s,
                stored,
                sigs,
                ev,
                texts,
                floor,
            )
            if len(q)
            else (none, none, np.zeros(0), {})
        )
        columns = (
            np.concatenate([eq, q]),
            np.concatenate([ed, s]),
            np.concatenate([np.ones(len(eq)), score]),
            np.arange(len(eq) + len(q)) < len(eq),
        )
        extra = {k: np.concatenate([np.full(len(eq), np.nan), v]) for k, v in extra.items()}
        return Answers.ordered(nq, columns, kind, extra, (ids, last_seen), limit)

    def get(self, id: str) -> dict[str, Any] | None:
        """A stored document's id, text (when kept), metadata and dates, or None."""
        with self.store.snapshot():
            docs = self.store.find_ids([id])
            if docs[0] < 0:
                return None
            s = self.store.load(docs)
        return {
            "id": s.ids[0],
            "text": s.texts[0],
            "meta": None if s.meta[0] is None else json.loads(s.meta[0]),
            "first_seen": s.first_seen[0],
            "last_seen": s.last_seen[0],
            "gone": s.gone[0],
        }

    def __len__(self) -> int:
        return self.store.count()

    def __contains__(self, id: object) -> bool:
        return isinstance(id, str) and bool(self.store.find_ids([id])[0] >= 0)

    def stats(self) -> dict[str, Any]:
        """Counts, size and parameters."""
        out: dict[str, Any] = dict(self.store.stats())
        n = max(int(out.get("documents", 0)), 1)
        if "bytes_on_disk" in out:
            out["bytes_per_document"] = round(int(out["bytes_on_disk"]) / n, 1)
        out["method"] = self.method.describe()
        out["verify"] = self.params.resolved_verify
        out["threshold"] = self.params.resolved_threshold
        out["store_text"] = self.store_text
        out["schema_version"] = SCHEMA_VERSION
        out["params"] = self.params.fingerprint()
        return out

    def check(self) -> list[str]:
        """Integrity and consistency problems (empty when sound); every record's checksum is
        verified, and damaged documents are named with the commands that repair them."""
        problems = self.store.check()
        try:
            check_meta(self.store.where, self.store.read_meta(), self.params)
        except NeardupError as exc:
            problems.append(str(exc))
        return problems

    def damage(self) -> Damage:
        """The damaged records (those whose checksums fail) and the documents they touch."""
        return self.store.damage()

    def repair(self) -> list[str]:
        """Remove the damaged documents and postings runs (one transaction), so the index passes
        ``check`` again; returns the ids removed, to add again from the corpus."""
        damage: Damage = self._write(self.store.repair)
        return damage.ids


def _live_pairs(
    q: IntArray, d: IntArray, docs: IntArray, stored: KeyArray, hashes: KeyArray, exact: bool
) -> tuple[IntArray, IntArray]:
    """(query row, position in ``docs``) of the pairs whose document is among the live ones
    loaded (``docs``, their content hashes ``stored``): with ``exact``, those holding the query's
    content hash (a store's exact hit confirmed on its checksummed row), else the others (an
    exact pair is not scored again as a near one). No sort: near pairs come by the million."""
    at = find_sorted(d, docs)
    q, s = q[at >= 0], at[at >= 0]
    keep = (stored[s] == hashes[q]) == exact
    return q[keep], s[keep]


def _neg_date(date: str | None) -> tuple[int, str]:
    """Sort key putting later ISO dates first (missing dates last)."""
    if date is None:
        return (1, "")
    return (0, "".join(chr(0x10FFFF - ord(c)) for c in date))


def _stored(texts: Sequence[str]) -> list[str | memoryview | None]:
    """Texts as a store writes them: texts read from JSONL as views of their UTF-8 bytes (not
    decoded, then encoded again by SQLite and the checksum)."""
    return list(texts.views() if isinstance(texts, Utf8Texts) else texts)
