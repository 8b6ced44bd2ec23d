"""An SQLite store read whole: the survey behind ``check``, ``damage`` and ``repair`` (every
record's checksum, and the tables agreeing with each other), and the checksums an upgrade from
schema 3 adds. Run inside the store's lenient-text reads, so a damaged text is a failed
checksum, not an error."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import IndexCorrupt
from .checksum import DOC_COLUMNS, doc_crc, run_crc, segment_crc
from .segments import Segments
from .store import Damage, IntArray

#: Damaged documents a check names in its message (``Damage`` lists them all).
_SHOWN = 20
#: Documents read per statement (bounds the memory of a check, whatever the texts).
CHECK_ROWS = 4096


def survey(
    db: sqlite3.Connection, families: Sequence[Segments], next_doc: int, count: int, where: str
) -> tuple[list[str], Damage]:
    """Problems found, and the damaged records (see ``Damage``); ``count``: documents the
    index counts, ``where``: its path, for the messages."""
    q = db.execute
    nothing = Damage(np.zeros(0, dtype=np.int64), [], {"post": [], "key": []})
    problems = [r[0] for r in q("PRAGMA integrity_check").fetchall() if r[0] != "ok"]
    if problems:
        return [
            "the file itself is damaged (SQLite: " + "; ".join(problems[:3]) + "); rebuild "
            "the index from its corpus (neardup index create, then neardup index add)"
        ], nothing
    docs, nkeys, ids, bad = scan_docs(db)
    want = {"post": nkeys, "key": np.full(len(docs), 2, dtype=np.int64)}
    if len(docs) and int(docs.max()) >= next_doc:
        return [f"document numbers reach {int(docs.max())}, past next_doc {next_doc}"], nothing
    if len(docs) != count:
        problems.append(f"the index counts {count} documents but holds {len(docs)}")
    twice = q("SELECT count(*) - count(DISTINCT id) FROM docs").fetchone()[0]
    if twice:
        problems.append(f"{twice} ids are stored more than once")
    live = np.zeros(next_doc, dtype=bool)
    live[docs] = True
    removed = set(r[0] for r in q("SELECT doc FROM removed"))
    short = np.zeros(len(docs), dtype=bool)
    runs: dict[str, list[int]] = {}
    misfit: dict[str, list[int]] = {}
    for family in families:
        held, found, damaged, misfit[family.name] = family.check(next_doc)
        runs[family.name] = sorted(damaged)
        off = held[docs] != want[family.name]
        short |= off
        problems += found + _disagreements(family, held, off & ~bad, live, removed, bool(damaged))
    if np.any(bad):
        problems.append(
            f"{int(np.count_nonzero(bad))} stored document record(s) are damaged (checksum fails)"
        )
    hit = np.flatnonzero(bad | (short & any(runs.values())))
    damage = Damage(docs[hit], [ids[i] for i in hit.tolist()], runs, misfit)
    return problems + _repairs(damage, where), damage


def _disagreements(
    family: Segments,
    held: IntArray,
    off: npt.NDArray[np.bool_],
    live: npt.NDArray[np.bool_],
    removed: set[int],
    damaged: bool,
) -> list[str]:
    """Where a family's postings disagree with the documents: sound documents (``off``) with
    other keys than they list, dead keys miscounted, keys of documents never removed."""
    problems = []
    if np.any(off) and not damaged:
        problems.append(
            f"{int(np.count_nonzero(off))} documents have other {family.name} keys than they list"
        )
    dead = int(held[~live].sum())
    if dead != family.dead and not damaged:
        problems.append(
            f"{dead} {family.name} keys belong to removed documents, but the index "
            f"counts {family.dead}"
        )
    if not set(np.flatnonzero((held > 0) & ~live).tolist()) <= removed:
        problems.append(f"{family.name} keys point to documents never removed")
    return problems


def _repairs(damage: Damage, where: str) -> list[str]:
    """What the damage means for the corpus, and the commands that repair it."""
    if damage.ids:
        shown = ", ".join(repr(i) for i in damage.ids[:_SHOWN])
        more = f" and {len(damage.ids) - _SHOWN} more" if len(damage.ids) > _SHOWN else ""
        return [
            f"{len(damage.ids)} damaged documents to add again: {shown}{more}; repair with: "
            f"neardup index repair {where} (removes them and lists their ids), then add "
            f"them again from your corpus: neardup index add {where} FILE (ids stored "
            "are replaced)"
        ]
    if damage:
        return [
            "no stored document is lost (the damaged runs hold keys of removed documents "
            f"only, segment rows are rebuilt from their runs); repair with: neardup index "
            f"repair {where} (no document needs adding again)"
        ]
    return []


def scan_docs(
    db: sqlite3.Connection,
) -> tuple[IntArray, IntArray, list[str], npt.NDArray[np.bool_]]:
    """(doc, nkeys, id, checksum fails) of every stored row, read a few thousand at a time."""
    docs: list[int] = []
    nkeys: list[int] = []
    ids: list[str] = []
    bad: list[bool] = []
    last = -1
    while True:
        rows = db.execute(
            f"SELECT {DOC_COLUMNS} FROM docs d WHERE d.doc > ? ORDER BY d.doc LIMIT ?",
            (last, CHECK_ROWS),
        ).fetchall()
        if not rows:
            break
        for r in rows:
            docs.append(r[0])
            nkeys.append(r[3] if isinstance(r[3], int) else -1)
            ids.append(r[1] if isinstance(r[1], str) else repr(r[1]))
            bad.append(doc_crc(r[:-1]) != r[-1])
        last = rows[-1][0]
    return (
        np.array(docs, dtype=np.int64),
        np.array(nkeys, dtype=np.int64),
        ids,
        np.array(bad, dtype=bool),
    )


def add_checksums(db: sqlite3.Connection, where: str) -> None:
    """Add the checksum columns of schema 4 and fill them (in the open transaction); refused
    when SQLite finds the file damaged, since its records would be checksummed as they are."""
    q = db.execute
    problems = [r[0] for r in q("PRAGMA integrity_check").fetchall() if r[0] != "ok"]
    if problems:
        raise IndexCorrupt(
            f"SQLite finds {where} damaged ({problems[0]}); rebuild the index from its "
            "corpus instead of upgrading it"
        )
    for table in ("docs", "post_runs", "key_runs", "post_segments", "key_segments"):
        q(f"ALTER TABLE {table} ADD COLUMN crc INTEGER NOT NULL DEFAULT 0")
    last = -1
    while rows := q(
        f"SELECT {DOC_COLUMNS} FROM docs d WHERE d.doc > ? ORDER BY d.doc LIMIT ?",
        (last, CHECK_ROWS),
    ).fetchall():
        db.executemany(
            "UPDATE docs SET crc = ? WHERE doc = ?", ((doc_crc(r[:-1]), r[0]) for r in rows)
        )
        last = rows[-1][0]
    for table in ("post_runs", "key_runs"):
        last = -(1 << 63)
        while rows := q(
            f"SELECT slot, postings FROM {table} WHERE slot > ? ORDER BY slot LIMIT ?",
            (last, CHECK_ROWS),
        ).fetchall():
            db.executemany(
                f"UPDATE {table} SET crc = ? WHERE slot = ?",
                ((run_crc(*r), r[0]) for r in rows),
            )
            last = rows[-1][0]
    for family in ("post", "key"):
        rows = q(f"SELECT seg, tier, bits, postings FROM {family}_segments").fetchall()
        db.executemany(
            f"UPDATE {family}_segments SET crc = ? WHERE seg = ?",
            ((segment_crc(*r), r[0]) for r in rows),
        )
