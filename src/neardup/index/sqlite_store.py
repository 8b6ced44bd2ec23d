"""SQLite store: documents and postings in one file (WAL), one transaction per write.

Tables: ``meta`` (schema version, parameters), ``docs`` (one row per document: id, content
hash, signature and evidence blobs, optional text, metadata and dates) and ``postings``
(key, doc) as a WITHOUT ROWID B-tree, so a key lookup is one seek. Readers run concurrently
with one writer (WAL); a second writer waits up to ``timeout`` seconds, then gets a clear error.
A killed writer leaves the file as it was before its open transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ..errors import IndexMismatchError, InputError, NeardupError
from .store import IntArray, KeyArray, NewDocs, StoredDocs, pairs_from_hits

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs(
    doc INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    hash INTEGER NOT NULL,
    nkeys INTEGER NOT NULL,
    sig BLOB NOT NULL,
    ev BLOB NOT NULL,
    text TEXT,
    meta TEXT,
    first_seen TEXT,
    last_seen TEXT,
    gone TEXT
);
CREATE INDEX docs_hash ON docs(hash);
CREATE TABLE postings(key INTEGER NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY(key, doc))
    WITHOUT ROWID;
"""

#: Parameters bound per statement when a list is spelled out (SQLite's limit is 32766).
_CHUNK = 900

_COLUMNS = ", ".join(
    f"d.{c}"
    for c in ["doc", "id", "hash", "sig", "ev", "text", "meta", "first_seen", "last_seen", "gone"]
)


def _signed(x: KeyArray) -> list[int]:
    return np.ascontiguousarray(x, dtype=np.uint64).view(np.int64).tolist()


def _chunks(seq: Sequence[object], size: int = _CHUNK) -> Iterator[Sequence[object]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


class SqliteStore:
    """The on-disk store (see the module docstring)."""

    def __init__(self, path: str, *, create: bool = False, timeout: float = 10.0) -> None:
        self.where = str(path)
        self.timeout = timeout
        if create:
            if os.path.exists(path):
                raise InputError(
                    f"{path} already exists; choose a new path or remove it first to rebuild"
                )
            uri = f"file:{_quote(path)}?mode=rwc"
        else:
            if not os.path.exists(path):
                raise InputError(
                    f"no index at {path}; create one with: neardup index create {path}"
                )
            uri = f"file:{_quote(path)}?mode=rw"
            if not os.access(path, os.W_OK):
                uri = f"file:{_quote(path)}?mode=ro"
        self.readonly = "mode=ro" in uri
        try:
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=timeout)
            self.db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if create:
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.executescript(_SCHEMA)
            else:
                self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA cache_size = -65536")
        except sqlite3.DatabaseError as exc:
            raise IndexMismatchError(
                f"{path} is not a neardup index (SQLite says: {exc}); give the path of an "
                "index made by neardup index create"
            ) from None
        self._in_tx = False

    # -- metadata and transactions -----------------------------------------------------------
    def read_meta(self) -> dict[str, str]:
        try:
            return dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            raise IndexMismatchError(
                f"{self.where} is not a neardup index (it has no meta table); give the path of "
                "an index made by neardup index create"
            ) from None

    def write_meta(self, values: dict[str, str]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))

    def begin(self) -> None:
        if self.readonly:
            raise InputError(
                f"{self.where} is read-only; queries work, but to change it make the file "
                "writable (chmod u+w)"
            )
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise NeardupError(
                    f"{self.where} is being written by another process (waited "
                    f"{self.timeout:g}s); try again when it has finished"
                ) from None
            if "readonly" in str(exc):
                raise InputError(
                    f"{self.where} is read-only; make it (and its folder) writable to change it"
                ) from None
            raise
        self._in_tx = True

    def commit(self) -> None:
        self.db.execute("COMMIT")
        self._in_tx = False

    def rollback(self) -> None:
        if self._in_tx:
            self.db.execute("ROLLBACK")
        self._in_tx = False

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction, so a query's statements see one state (WAL snapshot)."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("ROLLBACK")

    # -- writes ------------------------------------------------------------------------------
    def insert(self, new: NewDocs) -> IntArray:
        n = len(new.ids)
        top = self.db.execute("SELECT coalesce(max(doc), -1) FROM docs").fetchone()[0]
        docs = np.arange(top + 1, top + 1 + n, dtype=np.int64)
        nkeys = np.bincount(new.posting_row, minlength=n).tolist()
        self.db.executemany(
            "INSERT INTO docs (doc, id, hash, nkeys, sig, ev, text, meta, first_seen, last_seen)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            zip(
                docs.tolist(),
                new.ids,
                _signed(new.hashes),
                nkeys,
                new.sigs,
                new.evidence,
                new.texts,
                new.meta,
                new.first_seen,
                new.last_seen,
                strict=True,
            ),
        )
        signed = np.ascontiguousarray(new.posting_key, dtype=np.uint64).view(np.int64)
        order = np.argsort(signed, kind="stable")  # inserts in key order: each page once
        self.db.executemany(
            "INSERT INTO postings (key, doc) VALUES (?, ?)",
            zip(signed[order].tolist(), docs[new.posting_row[order]].tolist(), strict=True),
        )
        return docs

    def delete(self, docs: IntArray, posting_doc: IntArray, posting_key: KeyArray) -> None:
        self.db.executemany(
            "DELETE FROM postings WHERE key = ? AND doc = ?",
            zip(_signed(posting_key), posting_doc.tolist(), strict=True),
        )
        self.db.executemany("DELETE FROM docs WHERE doc = ?", ((d,) for d in docs.tolist()))

    def set_gone(self, docs: IntArray, date: str | None) -> None:
        self.db.executemany(
            "UPDATE docs SET gone = ? WHERE doc = ?", ((date, d) for d in docs.tolist())
        )

    # -- reads -------------------------------------------------------------------------------
    def find_ids(self, ids: list[str]) -> IntArray:
        found: dict[str, int] = {}
        for part in _chunks(ids):
            found.update(
                self.db.execute(
                    "SELECT j.value, d.doc FROM json_each(?) j JOIN docs d ON d.id = j.value",
                    (json.dumps(list(part)),),
                ).fetchall()
            )
        return np.array([found.get(i, -1) for i in ids], dtype=np.int64)

    def exact(self, hashes: KeyArray) -> tuple[IntArray, IntArray]:
        rows = self.db.execute(
            "SELECT j.key, d.doc FROM json_each(?) j JOIN docs d ON d.hash = j.value",
            (json.dumps(_signed(hashes)),),
        ).fetchall()
        arr = np.array(rows, dtype=np.int64).reshape(-1, 2)
        return arr[:, 0], arr[:, 1]

    def shared(self, row: IntArray, key: KeyArray, min_shared: int) -> tuple[IntArray, IntArray]:
        distinct = np.unique(key)
        hits = self.db.execute(
            "SELECT p.key, p.doc FROM json_each(?) j JOIN postings p ON p.key = j.value",
            (json.dumps(_signed(distinct)),),
        ).fetchall()
        arr = np.array(hits, dtype=np.int64).reshape(-1, 2)
        return pairs_from_hits(row, key, arr[:, 0].view(np.uint64), arr[:, 1], min_shared)

    def load(self, docs: IntArray) -> StoredDocs:
        rows = {
            r[0]: r
            for r in self.db.execute(
                f"SELECT {_COLUMNS} FROM json_each(?) j JOIN docs d ON d.doc = j.value",
                (json.dumps(docs.tolist()),),
            ).fetchall()
        }
        ordered = [rows[d] for d in docs.tolist()]
        cols = [list(c) for c in zip(*ordered, strict=True)] if ordered else [[]] * 10
        hashes = np.array(cols[2], dtype=np.int64).view(np.uint64)
        return StoredDocs(np.asarray(docs, dtype=np.int64), cols[1], hashes, *cols[3:])

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM docs").fetchone()[0])

    def stats(self) -> dict[str, int | float | str]:
        q = self.db.execute
        size = sum(
            os.path.getsize(p) for p in (self.where, self.where + "-wal") if os.path.exists(p)
        )
        return {
            "store": "sqlite",
            "path": self.where,
            "documents": self.count(),
            "retired": int(q("SELECT count(*) FROM docs WHERE gone IS NOT NULL").fetchone()[0]),
            "postings": int(q("SELECT count(*) FROM postings").fetchone()[0]),
            "bytes_on_disk": size,
        }

    def check(self) -> list[str]:
        q = self.db.execute
        problems = [r[0] for r in q("PRAGMA integrity_check").fetchall() if r[0] != "ok"]
        expected = int(q("SELECT coalesce(sum(nkeys), 0) FROM docs").fetchone()[0])
        have = int(q("SELECT count(*) FROM postings").fetchone()[0])
        if expected != have:
            problems.append(f"documents list {expected} postings but the table holds {have}")
        orphans = q(
            "SELECT count(*) FROM postings p WHERE NOT EXISTS "
            "(SELECT 1 FROM docs d WHERE d.doc = p.doc)"
        ).fetchone()[0]
        if orphans:
            problems.append(f"{orphans} postings point to no document")
        short = q(
            "SELECT count(*) FROM docs d LEFT JOIN "
            "(SELECT doc, count(*) AS c FROM postings GROUP BY doc) p USING (doc) "
            "WHERE d.nkeys != coalesce(p.c, 0)"
        ).fetchone()[0]
        if short:
            problems.append(f"{short} documents have other postings than they list")
        return problems

    def close(self) -> None:
        self.rollback()
        self.db.close()


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))
