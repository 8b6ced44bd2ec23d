"""SQLite store: documents and postings in one file (WAL), one transaction per write.

Tables: ``meta`` (schema version, parameters, counters), ``docs`` (one row per document, in
the order added: id, content hash, signature and evidence blobs, optional text, metadata and
dates; never indexed, so adding appends), and two families of sorted segments
(``neardup.index.segments``): ``post`` holds the method's lookup keys, ``key`` a key of each
document's id and one of its content hash, so finding an id or an exact copy is a lookup too,
checked against the stored id or hash. No table is written at random places: a batch appends
its documents and one segment per family, and segments merge in the background of later
batches (inside their transactions).

Every document row and postings run carries a CRC-32 of its fields (``neardup.index.checksum``),
written with it and verified when it is read and by ``check``: a damaged record is an
``IndexCorrupt`` naming it, never a wrong answer, and ``repair`` removes what is damaged so the
documents can be added again. SQLite errors never leave the store raw: each becomes a
``NeardupError`` saying what to do (a full disk: the open transaction is rolled back).

Removing a document deletes its row and lists its number in ``removed``; its postings stay
until their segment merges (counted as dead) and are never matched, because document numbers
are never reused and every match is checked against ``docs``. Readers run concurrently with one
writer (WAL); a second writer waits up to ``timeout`` seconds, then gets a clear error. A killed
writer leaves the file as it was before its open transaction.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from hashlib import blake2b
from typing import Concatenate, ParamSpec, TypeVar

import numpy as np

from ..candidates import key_matches, pairs_from_hits
from ..errors import IndexCorrupt, IndexMismatchError, InputError, NeardupError, OutputError
from ..methods.base import column_keys
from .checkpoint import Checkpointer
from .checksum import DOC_COLUMNS, INSERT_DOC, doc_crc, stored_text
from .schema import SCHEMA_VERSION, TABLES, UPGRADABLE
from .segments import MAX_DOCS, Segments, schema
from .sqlite_check import add_checksums, survey
from .store import Damage, IntArray, KeyArray, NewDocs, StoredDocs
from .usage import nested

_SCHEMA = TABLES + schema("post") + schema("key")

#: (postings per run, segments per tier before they merge) of the two families. A lookup reads
#: one run per key and segment, so fewer, smaller segments answer faster and cost more merging:
#: the method's keys (many per document, a query's few looked up at a time) balance the two.
#: Writing costs per row more than per byte, so the id and content-hash keys (two per document,
#: a batch's thousands looked up at a time) use longer runs and merge by fours: short runs
#: rewrote each key many times in small rows. bench_index.py measures the choices.
POST_SHAPE = (64, 8)
KEY_SHAPE = (32, 4)

#: Bytes per SQLite page. Document rows with text take ~1.5 KB, so 4 KB pages held two and
#: wasted a quarter of the file; 16 KB pages hold ten, and a batch writes fewer, fuller pages.
PAGE_SIZE = 16384

#: Tags folding ids and content hashes into keys apart from the method's (column) keys.
_ID_TAG = np.int64(1 << 40)
_HASH_TAG = np.int64((1 << 40) + 1)

#: WAL size past which a commit copies pages into the file itself (the checkpoint thread lags).
WAL_LIMIT = 256 << 20


#: SQLite errors of a write that found no room: a full disk (SQLITE_FULL), or a file size
#: limit (RLIMIT_FSIZE: the write fails with EFBIG, which SQLite reports as an I/O error).
_WRITE_FAILED = {
    "SQLITE_FULL",
    "SQLITE_IOERR_WRITE",
    "SQLITE_IOERR_FSYNC",
    "SQLITE_IOERR_TRUNCATE",
    "SQLITE_IOERR_SHMSIZE",
}

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _sqlite_errors(
    method: Callable[Concatenate[SqliteStore, _P], _R],
) -> Callable[Concatenate[SqliteStore, _P], _R]:
    """Turn an SQLite error leaving a store method into a NeardupError saying what to do."""

    @functools.wraps(method)
    def wrapper(self: SqliteStore, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise self.translate(exc) from None

    return wrapper


def _signed(x: KeyArray) -> list[int]:
    return np.ascontiguousarray(x, dtype=np.uint64).view(np.int64).tolist()


def id_keys(ids: Sequence[str]) -> KeyArray:
    """The key of each document id (an 8-byte BLAKE2b of its UTF-8, surrogates kept)."""
    raw = b"".join(blake2b(i.encode("utf-8", "surrogatepass"), digest_size=8).digest() for i in ids)
    values = np.frombuffer(raw, dtype="<u8").astype(np.uint64)
    return column_keys(np.full(len(values), _ID_TAG), values)


def hash_keys(hashes: KeyArray) -> KeyArray:
    """The key of each content hash."""
    values = np.asarray(hashes, dtype=np.uint64)
    return column_keys(np.full(len(values), _HASH_TAG), values)


def file_damaged(where: str, text: str) -> IndexCorrupt:
    """The error for an index file SQLite finds damaged (not one record: the file)."""
    return IndexCorrupt(
        f"{where}: the file itself is damaged (SQLite: {text}); rebuild the index from its "
        "corpus (neardup index create, then neardup index add)"
    )


class SqliteStore:
    """The on-disk store (see the module docstring)."""

    def __init__(
        self, path: str, *, create: bool = False, timeout: float = 10.0, where: str | None = None
    ) -> None:
        """``where``: the name messages give (``create_file`` builds under another one)."""
        self.where = str(path) if where is None else where
        self.unicode_only = True
        self.timeout = timeout
        if create:
            if os.path.exists(path):
                raise exists_error(self.where)
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
                self.db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                self.db.execute("PRAGMA journal_mode = WAL")
                self.db.executescript(_SCHEMA)
            else:
                self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA cache_size = -65536")
            self.db.execute("PRAGMA journal_size_limit = 67108864")
        except sqlite3.DatabaseError as exc:
            if create:  # leave nothing half-made
                with contextlib.suppress(AttributeError, sqlite3.Error):
                    self.db.close()
                for made in (path, path + "-wal", path + "-shm"):
                    with contextlib.suppress(OSError):
                        os.remove(made)
                raise OutputError(
                    f"cannot create the index {self.where} (SQLite says: {exc}); check that its "
                    "folder exists and is writable"
                ) from None
            if "malformed" in str(exc):  # SQLite's words for a damaged database file
                raise file_damaged(path, str(exc)) from None
            raise IndexMismatchError(
                f"{path} is not a neardup index (SQLite says: {exc}); give the path of an "
                "index made by neardup index create"
            ) from None
        self._in_tx = False
        self._uri = uri
        self._checkpointer: Checkpointer | None = None
        self.post = Segments(self.db, "post", *POST_SHAPE, where=self.where)
        self.key = Segments(self.db, "key", *KEY_SHAPE, where=self.where)
        self._ids_hashed: tuple[Sequence[str], KeyArray] | None = None
        #: Documents whose rows were verified in the open read snapshot (read once, checked once).
        self._sound: set[int] | None = None

    # -- errors ------------------------------------------------------------------------------
    def translate(self, exc: sqlite3.Error) -> NeardupError:
        """The NeardupError an SQLite error means here (what happened and what to do)."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc)
        if isinstance(exc, sqlite3.ProgrammingError) and "same thread" in text:
            return NeardupError(
                f"{self.where}: this Index was opened in another thread, and its SQLite "
                "connection can only be used in the thread that opened it; open one Index per "
                "thread (Index.open in each), or hand the work to the thread that opened it"
            )
        if name in _WRITE_FAILED and self._in_tx:
            return OutputError(
                f"{self.where}: could not write the index (SQLite: {text}; the disk is full or a "
                "file size limit was reached); the open batch was rolled back, so the index is "
                "as it was before it and passes neardup index check; free space, then run the "
                "command again (ids already stored are replaced, not doubled)"
            )
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return NeardupError(
                f"{self.where} is being written by another process (waited "
                f"{self.timeout:g}s); try again when it has finished"
            )
        if name.startswith("SQLITE_READONLY"):
            return InputError(
                f"{self.where} is read-only; make it (and its folder) writable to change it"
            )
        if "decode" in text:  # a text column no longer UTF-8, or a blob rewritten as text
            return IndexCorrupt(
                f"{self.where}: a stored record is damaged (SQLite: {text}); run neardup index "
                f"check {self.where} to find every damaged record, then neardup index repair "
                f"{self.where} and add those documents again"
            )
        if name in _WRITE_FAILED:
            return OutputError(
                f"{self.where}: SQLite needs space it cannot get ({text}); free space on the "
                "disk holding the index or its temporary files, then try again"
            )
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            return file_damaged(self.where, text)
        return IndexCorrupt(
            f"{self.where}: SQLite cannot read the index ({text}); run neardup index check "
            f"{self.where}, and rebuild the index from its corpus if SQLite finds the file "
            "itself damaged"
        )

    # -- metadata and transactions -----------------------------------------------------------
    def read_meta(self) -> dict[str, str]:
        try:
            return dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            raise IndexMismatchError(
                f"{self.where} is not a neardup index (it has no meta table); give the path of "
                "an index made by neardup index create"
            ) from None

    @_sqlite_errors
    def write_meta(self, values: dict[str, str]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(values.items()))

    def begin(self) -> None:
        if self.readonly:
            raise InputError(
                f"{self.where} is read-only; queries work, but to change it make the file "
                "writable (chmod u+w)"
            )
        if self._in_tx:
            raise nested(self.where)
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self.translate(exc) from None
        self._in_tx = True
        self.post.let_go()  # this connection writes: postings held in memory may change
        self.key.let_go()

    @_sqlite_errors
    def commit(self) -> None:
        self.db.execute("COMMIT")
        self._in_tx = False
        self._ids_hashed = None
        # committed: a checkpoint that fails (a full disk) leaves the pages in the WAL, still read
        with contextlib.suppress(sqlite3.Error):
            self._checkpoint()

    def _checkpoint(self) -> None:
        """Copy committed pages from the WAL into the file in a thread of its own, so the next
        batch is signed and written meanwhile; inline if that thread falls behind."""
        if self._checkpointer is None:
            self.db.execute("PRAGMA wal_autocheckpoint = 0")
            self._checkpointer = Checkpointer(self._uri, self.timeout)
        wal = self.where + "-wal"
        if os.path.exists(wal) and os.path.getsize(wal) > WAL_LIMIT:
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        else:
            self._checkpointer.poke()

    def rollback(self) -> None:
        """Undo the open transaction (SQLite may have undone it already, on a full disk)."""
        if self._in_tx and self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
        self._in_tx = False
        self._ids_hashed = None

    def hold(self, budget: int) -> None:
        """Lookups may hold the postings in memory (``Segments.hold``): seven eighths of
        ``budget`` for the documents' postings, an eighth for their ids and content hashes."""
        self.post.hold(budget - budget // 8)
        self.key.hold(budget // 8)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction, so a query's statements see one state (WAL snapshot)."""
        if self.db.in_transaction:
            yield
            return
        try:
            self.db.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self.translate(exc) from None
        self._sound = set()
        try:
            yield
        finally:
            self._sound = None
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")

    @contextmanager
    def _lenient_text(self) -> Iterator[None]:
        """Reads inside give texts that are no longer UTF-8 (damaged) as surrogates, not errors."""
        self.db.text_factory = stored_text
        try:
            yield
        finally:
            self.db.text_factory = str

    # -- writes ------------------------------------------------------------------------------
    def _counter(self, name: str) -> int:
        return int(self.db.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()[0])

    def _set_counter(self, name: str, value: int) -> None:
        self.db.execute("UPDATE meta SET value = ? WHERE key = ?", (str(value), name))

    @_sqlite_errors
    def insert(self, new: NewDocs) -> IntArray:
        n = len(new.ids)
        top = self._counter("next_doc")
        if top + n > MAX_DOCS:
            raise NeardupError(
                f"{self.where} has numbered {top:,} documents, and one index numbers at most "
                f"{MAX_DOCS:,}; start another index"
            )
        docs = np.arange(top, top + n, dtype=np.int64)
        self._set_counter("next_doc", top + n)
        self._set_counter("documents", self._counter("documents") + n)
        nkeys = np.bincount(new.posting_row, minlength=n).tolist()
        rows = zip(
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
            [None] * n,
            strict=True,
        )
        self.db.executemany(
            INSERT_DOC,
            ((*row, doc_crc(row)) for row in rows),
        )
        self.post.append(new.posting_key, docs[new.posting_row])
        self.key.append(
            np.concatenate([self._id_keys(new.ids), hash_keys(new.hashes)]), np.r_[docs, docs]
        )
        if self.post.dead == 0 and self.key.dead == 0:  # merges dropped every removed posting
            self.db.execute("DELETE FROM removed")
        return docs

    @_sqlite_errors
    def delete(self, docs: IntArray, posting_doc: IntArray, posting_key: KeyArray) -> None:
        gone = [(d,) for d in docs.tolist()]
        self.db.executemany("DELETE FROM docs WHERE doc = ?", gone)
        self.db.executemany("INSERT INTO removed VALUES (?)", gone)
        self._set_counter("documents", self._counter("documents") - len(gone))
        self.post.add_dead(len(posting_key))
        self.key.add_dead(2 * len(gone))

    @_sqlite_errors
    def set_gone(self, docs: IntArray, date: str | None) -> None:
        rows = self._rows(docs)
        changed = [(*rows[d][:-1], date) for d in docs.tolist() if d in rows]
        self.db.executemany(
            "UPDATE docs SET gone = ?, crc = ? WHERE doc = ?",
            ((date, doc_crc(row), row[0]) for row in changed),
        )

    # -- reads -------------------------------------------------------------------------------
    def _id_keys(self, ids: Sequence[str]) -> KeyArray:
        """``id_keys(ids)``, hashed once for the find_ids and insert of one batch."""
        if self._ids_hashed is None or self._ids_hashed[0] is not ids:
            self._ids_hashed = (ids, id_keys(ids))
        return self._ids_hashed[1]

    @_sqlite_errors
    def find_ids(self, ids: list[str]) -> IntArray:
        _, hit_doc = self.key.lookup(self._id_keys(ids))
        found = {row[1]: doc for doc, row in self._rows(np.unique(hit_doc)).items()}
        return np.array([found.get(i, -1) for i in ids], dtype=np.int64)

    @_sqlite_errors
    def exact(self, hashes: KeyArray) -> tuple[IntArray, IntArray]:
        keys = hash_keys(np.asarray(hashes, dtype=np.uint64))
        hit_key, hit_doc = self.key.lookup(keys)
        rows, at_hit = key_matches(keys, hit_key)
        return self._stored_only(rows, hit_doc[at_hit], self.key.dead)

    @_sqlite_errors
    def shared(self, row: IntArray, key: KeyArray, min_shared: int) -> tuple[IntArray, IntArray]:
        hit_key, hit_doc = self.post.lookup(key)
        q, d = pairs_from_hits(row, key, hit_key, hit_doc, min_shared)
        return self._stored_only(q, d, self.post.dead)

    def _stored_only(self, q: IntArray, d: IntArray, dead: int) -> tuple[IntArray, IntArray]:
        """The (query row, document) pairs whose document is still stored: a family of
        segments with ``dead`` postings still holds some of removed documents."""
        if len(d) and dead:
            present = np.array([r[0] for r in self._column(np.unique(d), "doc")], np.int64)
            keep = np.isin(d, present)
            q, d = q[keep], d[keep]
        return q, d

    def _column(self, docs: IntArray, column: str) -> list[tuple[int, object]]:
        """(doc, value of ``column``) of those of ``docs`` that are stored (not verified)."""
        return self.db.execute(
            f"SELECT d.doc, d.{column} FROM json_each(?) j JOIN docs d ON d.doc = j.value",
            (json.dumps(docs.tolist()),),
        ).fetchall()

    def _rows(self, docs: IntArray) -> dict[int, tuple[object, ...]]:
        """Document number -> its row (the checksummed fields), for those of ``docs`` stored;
        IndexCorrupt when a row's checksum fails."""
        sql = f"SELECT {DOC_COLUMNS} FROM json_each(?) j JOIN docs d ON d.doc = j.value"
        arg = (json.dumps(np.asarray(docs).tolist()),)
        try:
            rows = self.db.execute(sql, arg).fetchall()
        except sqlite3.OperationalError as exc:  # a stored text no longer UTF-8: find which
            if "decode" not in str(exc):
                raise
            with self._lenient_text():
                rows = self.db.execute(sql, arg).fetchall()
        sound = self._sound if self._sound is not None else set()
        bad = [r for r in rows if r[0] not in sound and doc_crc(r[:-1]) != r[-1]]
        if bad:
            raise IndexCorrupt(
                f"{self.where}: the stored record of document {bad[0][1]!r} is damaged (its "
                f"checksum fails); run neardup index check {self.where} to find every damaged "
                f"record, then neardup index repair {self.where} and add those documents again"
            )
        if self._sound is not None:
            self._sound.update(r[0] for r in rows)
        return {int(r[0]): r[:-1] for r in rows}

    @_sqlite_errors
    def load(self, docs: IntArray) -> StoredDocs:
        rows = self._rows(docs)
        ordered = [rows[d] for d in docs.tolist()]
        cols = [list(c) for c in zip(*ordered, strict=True)] if ordered else [[]] * 11
        hashes = np.array(cols[2], dtype=np.int64).view(np.uint64)
        return StoredDocs(np.asarray(docs, dtype=np.int64), cols[1], hashes, *cols[4:])

    @_sqlite_errors
    def count(self) -> int:
        return self._counter("documents")

    @_sqlite_errors
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
            "postings": self.post.held() - self.post.dead,
            "dead_postings": self.post.dead + self.key.dead,
            "segments": len(self.post.segments()) + len(self.key.segments()),
            "bytes_on_disk": size,
        }

    @_sqlite_errors
    def check(self) -> list[str]:
        with self._lenient_text():
            return self._survey()[0]

    @_sqlite_errors
    def damage(self) -> Damage:
        with self._lenient_text():
            return self._survey()[1]

    @_sqlite_errors
    def repair(self) -> Damage:
        with self._lenient_text():
            return self._repair()

    @_sqlite_errors
    def compact(self) -> tuple[int, int, int]:
        post, key = self.post.compact(), self.key.compact()
        return post[0] + key[0], post[1] + key[1], post[2] + key[2]

    def _repair(self) -> Damage:
        damage = self._survey()[1]
        if not damage:
            return damage
        for family in (self.post, self.key):
            touched = family.drop_runs(damage.runs[family.name])
            family.refit(sorted({*touched, *damage.segments[family.name]}))
        gone = [(d,) for d in damage.docs.tolist()]
        self.db.executemany("DELETE FROM docs WHERE doc = ?", gone)
        self.db.executemany("INSERT OR IGNORE INTO removed VALUES (?)", gone)
        self._set_counter("documents", self.db.execute("SELECT count(*) FROM docs").fetchone()[0])
        next_doc = self._counter("next_doc")
        live = np.zeros(next_doc, dtype=bool)
        live[[r[0] for r in self.db.execute("SELECT doc FROM docs")]] = True
        for family in (self.post, self.key):
            held = family.check(next_doc)[0]
            family.set_dead(int(held[~live].sum()))
        return damage

    @_sqlite_errors
    def upgrade(self) -> None:
        """Add the checksum columns of schema 4 and fill them (in the open transaction)."""
        with self._lenient_text():  # checksums of the texts as stored
            add_checksums(self.db, self.where)
        self.write_meta({"schema_version": str(SCHEMA_VERSION)})

    def _survey(self) -> tuple[list[str], Damage]:
        """Problems found, and the damaged records (see ``Damage``)."""
        families = (self.post, self.key)
        return survey(self.db, families, self._counter("next_doc"), self.count(), self.where)

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        self.rollback()
        self.db.close()


def exists_error(path: str) -> InputError:
    """The refusal to create an index where a file is."""
    return InputError(f"{path} already exists; choose a new path or remove it first to rebuild")


def upgrade(path: str, timeout: float = 10.0) -> int:
    """Give an index of schema ``UPGRADABLE`` its record checksums (one transaction); returns
    the documents it holds. Records are checksummed as they are: run ``check`` before."""
    store = SqliteStore(path, timeout=timeout)
    try:
        version = store.read_meta().get("schema_version")
        if version == str(SCHEMA_VERSION):
            return store.count()
        if version != str(UPGRADABLE):
            raise IndexMismatchError(
                f"{path} has index schema version {version}; only version {UPGRADABLE} can be "
                "upgraded; rebuild it (neardup index create, then add the documents again)"
            )
        store.begin()
        store.upgrade()
        store.commit()
        return store.count()
    finally:
        store.close()


def stored_version(path: str, timeout: float = 10.0) -> str | None:
    """The schema version the index at ``path`` records (None: none), read without the checks
    of opening it: tells an index ``upgrade`` would change from one it leaves as it is."""
    store = SqliteStore(path, timeout=timeout)
    try:
        return store.read_meta().get("schema_version")
    finally:
        store.close()


def _quote(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))
