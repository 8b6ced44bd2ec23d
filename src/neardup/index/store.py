"""The storage protocol of the standing index: document rows and postings in, lookups out.

A store knows nothing of methods or verification: it keeps, per document, an opaque signature
blob, an opaque evidence blob, the content hash, optional text and metadata and dates, and the
postings (64-bit key -> document). The ``Index`` computes every blob and key with the method
and verifier objects, so the algorithms never ask which store they run on.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._types import IntArray, KeyArray


@dataclass(frozen=True)
class NewDocs:
    """Rows to insert: one entry per document; postings as (row in this batch, key)."""

    ids: list[str]
    hashes: KeyArray
    sigs: list[bytes]
    evidence: list[bytes]
    texts: list[str | memoryview | None]  # a view: the text's UTF-8 bytes (``Utf8Texts.views``)
    meta: list[str | None]
    first_seen: list[str | None]
    last_seen: list[str | None]
    posting_row: IntArray
    posting_key: KeyArray


@dataclass(frozen=True)
class StoredDocs:
    """Stored rows of some documents, in the order asked for."""

    docs: IntArray
    ids: list[str]
    hashes: KeyArray
    sigs: list[bytes]
    evidence: list[bytes]
    texts: list[str | None]
    meta: list[str | None]
    first_seen: list[str | None]
    last_seen: list[str | None]
    gone: list[str | None]

    def take(self, rows: IntArray) -> StoredDocs:
        """The documents at ``rows``, in that order."""
        r = rows.tolist()

        def pick(xs: list[Any]) -> list[Any]:
            return [xs[i] for i in r]

        return StoredDocs(
            self.docs[rows],
            pick(self.ids),
            self.hashes[rows],
            pick(self.sigs),
            pick(self.evidence),
            pick(self.texts),
            pick(self.meta),
            pick(self.first_seen),
            pick(self.last_seen),
            pick(self.gone),
        )


@dataclass(frozen=True)
class Damage:
    """Damaged records a check found: documents to remove and add again, runs to drop.

    ``docs`` (ascending) are the documents whose own record fails its checksum or whose
    postings sit in a damaged run; ``ids`` are their ids as stored (damaged ones included);
    ``runs`` the slots of damaged runs per family.
    """

    docs: IntArray
    ids: list[str]
    runs: dict[str, list[int]]
    #: Segments whose row (key bits, postings count) disagrees with their runs, per family.
    segments: dict[str, list[int]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(len(self.docs) or any(self.runs.values()) or any(self.segments.values()))


class Store(Protocol):
    """Where an index keeps its documents and postings (SQLite on disk, or memory)."""

    where: str
    #: Whether stored strings must be Unicode (SQLite's UTF-8; memory holds any Python str).
    unicode_only: bool

    def read_meta(self) -> dict[str, str]: ...

    def write_meta(self, values: dict[str, str]) -> None: ...

    def begin(self) -> None:
        """Start a write transaction (waits for another writer up to the store's timeout)."""
        ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one state, whatever another connection commits meanwhile."""
        ...

    def hold(self, budget: int) -> None:
        """Let lookups keep postings in memory, up to ``budget`` bytes, for a job whose every
        batch reads most of them (a store in memory holds them anyway)."""
        ...

    def insert(self, new: NewDocs) -> IntArray:
        """Insert documents and their postings; returns their document numbers."""
        ...

    def delete(self, docs: IntArray, posting_doc: IntArray, posting_key: KeyArray) -> None:
        """Delete documents and the given postings of theirs."""
        ...

    def set_gone(self, docs: IntArray, date: str | None) -> None: ...

    def find_ids(self, ids: list[str]) -> IntArray:
        """Document number of each id, -1 when absent."""
        ...

    def exact(self, hashes: KeyArray) -> tuple[IntArray, IntArray]:
        """(query row, document) of stored documents with the same content hash, and perhaps
        a few more: the caller keeps those whose loaded (checksummed) row holds the hash."""
        ...

    def shared(self, row: IntArray, key: KeyArray, min_shared: int) -> tuple[IntArray, IntArray]:
        """(query row, document) pairs sharing at least ``min_shared`` of the row's keys."""
        ...

    def load(self, docs: IntArray) -> StoredDocs: ...

    def count(self) -> int: ...

    def stats(self) -> dict[str, int | float | str]: ...

    def check(self) -> list[str]:
        """Problems found (empty when the store is sound and its tables agree)."""
        ...

    def damage(self) -> Damage:
        """Records whose checksums fail, and the documents they touch."""
        ...

    def repair(self) -> Damage:
        """Remove damaged documents and runs (in the open transaction); returns what it removed."""
        ...

    def compact(self) -> tuple[int, int, int]:
        """Merge the lookup keys into as few parts as they allow (in the open transaction);
        (parts before, after, postings of removed documents dropped)."""
        ...

    def close(self) -> None: ...
