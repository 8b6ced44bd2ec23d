"""Sorted (key, doc) postings in SQLite as a log-structured merge: append a batch, look keys up.

Keys are hashes, so the postings of a batch land on random pages of a B-tree; once the tree
outgrows the page cache every batch rewrites nearly every page (an index with a (key, doc)
B-tree and B-tree indexes on id and content hash slowed from 4.5k to 1.2k documents/s between
300k and 1M documents). Here a batch appends one *segment*: its postings sorted by key
and cut by the key's top bits into *runs* of about ``run`` postings, one row per run under
``slot = segment << 32 | top bits`` holding one blob of packed 12-byte records (8-byte key,
4-byte document number; one blob, not two, because SQLite's cost is more per value than per
byte) and its checksum (``neardup.index.checksum``, of slot and blob, verified on every read),
so rows are written once, in increasing slot order.
Segments of one size tier merge when ``fanout`` accumulate, slice by slice of the key space so
a merge holds at most about ``SLICE`` postings in memory; postings of removed documents
(listed in the ``removed`` table) are dropped on the way. A lookup reads, for each segment, the
one run each key can be in: a primary-key seek.

Tables ``{name}_segments`` (segment, tier, bits, postings, crc) and ``{name}_runs`` (slot,
postings, crc), counters ``{name}_next_seg`` and ``{name}_dead`` (postings of removed documents
still held) in ``meta``. Every write runs in the caller's transaction, so a killed writer leaves the
segments as they were.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from zlib import crc32

import numpy as np

from .._types import IntArray, KeyArray
from ..candidates import distinct, in_sorted, matching
from ..errors import IndexCorrupt
from .checksum import run_crc, segment_crc

#: Postings of the smallest size tier: tier t holds segments of BASE * fanout**t postings on.
BASE = 4096
#: Postings a merge holds in memory at once: it works through the key space in slices.
SLICE = 1 << 22
#: Runs a lookup reads per statement (it keeps only the hits of each group).
LOOKUP_RUNS = 4096
#: A posting in a run: key and document number, packed (``MAX_DOCS`` documents ever added to
#: one index).
_POSTING = np.dtype([("key", "<u8"), ("doc", "<u4")])
MAX_DOCS = 1 << 32
#: Runs of a segment are keyed by at most this many top bits of the key.
_MAX_BITS = 31
_SEG_MASK = 0xFFFFFFFF


def schema(name: str) -> str:
    """SQL creating the tables and counters of the segments called ``name``."""
    return f"""
CREATE TABLE {name}_segments(
    seg INTEGER PRIMARY KEY,
    tier INTEGER NOT NULL,
    bits INTEGER NOT NULL,
    postings INTEGER NOT NULL,
    crc INTEGER NOT NULL
);
CREATE TABLE {name}_runs(slot INTEGER PRIMARY KEY, postings BLOB NOT NULL, crc INTEGER NOT NULL);
INSERT INTO meta VALUES ('{name}_next_seg', '0'), ('{name}_dead', '0');
"""


def tier_of(n: int, fanout: int) -> int:
    """Size tier of a segment of ``n`` postings: segments of one tier are merged together."""
    tier, size = 0, BASE * fanout
    while n >= size:
        tier, size = tier + 1, size * fanout
    return tier


def top_bits(keys: KeyArray, bits: int) -> KeyArray:
    """The run each key falls in: its top ``bits`` bits."""
    if bits == 0:
        return np.zeros(len(keys), dtype=np.uint64)
    return np.asarray(keys, dtype=np.uint64) >> np.uint64(64 - bits)


def _unpack(parts: list[bytes]) -> tuple[KeyArray, IntArray]:
    """(keys, document numbers) of runs' packed postings, in order."""
    records = np.frombuffer(b"".join(parts), dtype=_POSTING)
    return records["key"].copy(), records["doc"].astype(np.int64)


def run_sound(slot: object, blob: object, crc: object) -> bool:
    """Whether a stored run is as written: its checksum holds and it packs whole postings."""
    return (
        run_crc(slot, blob) == crc
        and isinstance(blob, bytes)
        and len(blob) % _POSTING.itemsize == 0
    )


def unpack_run(blob: bytes) -> IntArray:
    """Document numbers of one run's postings (of a damaged run: what its bytes say)."""
    whole = len(blob) - len(blob) % _POSTING.itemsize
    return np.frombuffer(blob[:whole], dtype=_POSTING)["doc"].astype(np.int64)


def _fits(keys: KeyArray, runs: IntArray, bits: object) -> bool:
    """Whether cutting by the top ``bits`` bits puts every posting in the run it is in."""
    if not (isinstance(bits, int) and 0 <= bits <= _MAX_BITS):
        return False
    return bool(np.array_equal(top_bits(keys, bits).astype(np.int64), runs))


#: Bytes a posting takes held in memory (``Segments.hold``): its key and document number.
POSTING_BYTES = 12
#: A lookup reading at least one run in this many lets the postings be held in memory.
HOLD_SHARE = 4


class _Held:
    """Every posting of a set of segments, in memory: per segment its packed records (keys
    ascending, as the runs hold them), and the segments and database version read."""

    def __init__(
        self, shape: tuple[tuple[int, int], ...], version: int, parts: list[np.ndarray]
    ) -> None:
        self.shape = shape
        self.version = version
        self.parts = parts

    def lookup(self, wanted: KeyArray) -> tuple[KeyArray, IntArray]:
        """(key, doc) of the postings of ``wanted`` (ascending, distinct), in the order the
        runs give them: segment by segment, keys ascending, equal keys as stored."""
        hit_keys: list[KeyArray] = [np.zeros(0, dtype=np.uint64)]
        hit_docs: list[IntArray] = [np.zeros(0, dtype=np.int64)]
        for records in self.parts:
            keys = records["key"]
            at = matching(wanted, keys)
            hit_keys.append(keys[at])
            hit_docs.append(records["doc"][at].astype(np.int64))
        return np.concatenate(hit_keys), np.concatenate(hit_docs)


class Segments:
    """One family of segments (see the module docstring) over an open SQLite connection."""

    def __init__(
        self, db: sqlite3.Connection, name: str, run: int, fanout: int, where: str = "index"
    ) -> None:
        self.db = db
        self.name = name
        self.where = where
        self.run = run
        self.fanout = fanout
        #: Bytes of postings lookups may hold in memory (``hold``; 0: they read runs).
        self._budget = 0
        self._memory: _Held | None = None

    # -- counters ----------------------------------------------------------------------------
    def _get(self, counter: str) -> int:
        row = self.db.execute(
            "SELECT value FROM meta WHERE key = ?", (f"{self.name}_{counter}",)
        ).fetchone()
        return int(row[0])

    def _set(self, counter: str, value: int) -> None:
        self.db.execute(
            "UPDATE meta SET value = ? WHERE key = ?", (str(value), f"{self.name}_{counter}")
        )

    @property
    def dead(self) -> int:
        """Postings of removed documents still held (dropped when their segment merges)."""
        return self._get("dead")

    def add_dead(self, n: int) -> None:
        self._set("dead", self.dead + n)

    def bits_for(self, n: int) -> int:
        """Top key bits that cut ``n`` sorted postings into runs of about ``run``."""
        return max(0, min(_MAX_BITS, math.ceil(math.log2(max(n, 1) / self.run))))

    # -- writes ------------------------------------------------------------------------------
    def append(self, keys: KeyArray, docs: IntArray) -> None:
        """Add postings as a new segment, then merge any full tier."""
        self.let_go()
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        docs = np.ascontiguousarray(docs, dtype=np.int64)
        if len(keys) == 0:
            return
        if np.any(keys[1:] < keys[:-1]):
            order = np.argsort(keys, kind="stable")
            keys, docs = keys[order], docs[order]
        seg = self._next_seg()
        bits = self.bits_for(len(keys))
        self._write_runs(seg, bits, keys, docs)
        self._insert_segment(seg, len(keys), bits)
        self._compact()

    def _next_seg(self) -> int:
        seg = self._get("next_seg")
        self._set("next_seg", seg + 1)
        return seg

    def _insert_segment(self, seg: int, n: int, bits: int) -> None:
        self.db.execute(
            f"INSERT INTO {self.name}_segments VALUES (?, ?, ?, ?, ?)",
            (seg, tier := tier_of(n, self.fanout), bits, n, segment_crc(seg, tier, bits, n)),
        )

    def _write_runs(self, seg: int, bits: int, keys: KeyArray, docs: IntArray) -> None:
        n = len(keys)
        if n == 0:
            return
        top = top_bits(keys, bits)
        starts = np.flatnonzero(np.r_[True, top[1:] != top[:-1]])
        ends = np.r_[starts[1:], n]
        slots = (np.int64(seg) << np.int64(32)) | top[starts].astype(np.int64)
        records = np.empty(n, dtype=_POSTING)
        records["key"] = keys
        records["doc"] = docs
        raw = records.tobytes()
        size = _POSTING.itemsize
        blobs = [
            raw[size * a : size * e] for a, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        slot_list = slots.tolist()
        self.db.executemany(
            f"INSERT INTO {self.name}_runs VALUES (?, ?, ?)",
            zip(
                slot_list,
                blobs,
                [run_crc(k, b) for k, b in zip(slot_list, blobs, strict=True)],
                strict=True,
            ),
        )

    def _compact(self) -> None:
        """Merge the segments of any size tier holding ``fanout`` or more (smallest first)."""
        while True:
            tiers: dict[int, list[tuple[int, int, int]]] = {}
            for seg, tier, bits, count in sorted(self._verified_rows(), key=lambda r: r[1]):
                tiers.setdefault(tier, []).append((seg, bits, count))
            full = [t for t in sorted(tiers) if len(tiers[t]) >= self.fanout]
            if not full:
                return
            self.merge(tiers[full[0]])

    def compact(self) -> tuple[int, int, int]:
        """Merge every segment into one, dropping removed documents' postings, so a lookup
        reads one run per key; (segments before, after, postings dropped)."""
        segs = self.segments()
        dead = self.dead
        if len(segs) > 1 or (segs and dead):
            self.merge(segs)
        return len(segs), len(self.segments()), dead - self.dead

    def merge(self, segs: Sequence[tuple[int, int, int]]) -> None:
        """One segment from ``segs`` (seg, bits, postings), postings of removed documents dropped.

        Equal keys keep the order of ``segs``, then of each segment: the same history gives
        the same file.
        """
        self.let_go()
        total = sum(count for _, _, count in segs)
        dead = self.dead
        seg = self._next_seg()
        bits = self.bits_for(total)
        sb = min(16, max(0, math.ceil(math.log2(max(total, 1) / SLICE))))
        written = dropped = 0
        for s in range(1 << sb):
            lo, hi = s << (64 - sb), (s + 1) << (64 - sb)
            keys, docs = self.read_range([(g, b) for g, b, _ in segs], lo, hi)
            if dead and len(docs):
                gone = self._removed(int(docs.min()), int(docs.max()))
                if len(gone):
                    alive = ~np.isin(docs, gone)
                    dropped += int(len(docs) - alive.sum())
                    keys, docs = keys[alive], docs[alive]
            order = np.argsort(keys, kind="stable")  # sorted runs: a merge; ties in input order
            self._write_runs(seg, bits, keys[order], docs[order])
            written += len(keys)
        for g, _, _ in segs:
            self.db.execute(
                f"DELETE FROM {self.name}_runs WHERE slot BETWEEN ? AND ?",
                (g << 32, (g << 32) | _SEG_MASK),
            )
            self.db.execute(f"DELETE FROM {self.name}_segments WHERE seg = ?", (g,))
        if written:
            self._insert_segment(seg, written, bits)
        self._set("dead", dead - dropped)

    def _removed(self, lo: int, hi: int) -> IntArray:
        """Numbers of removed documents from lo to hi (their postings may remain)."""
        rows = self.db.execute("SELECT doc FROM removed WHERE doc BETWEEN ? AND ?", (lo, hi))
        return np.array([r[0] for r in rows], dtype=np.int64)

    # -- reads -------------------------------------------------------------------------------
    def segments(self) -> list[tuple[int, int, int]]:
        """(seg, bits, postings) of every segment."""
        return [(seg, bits, count) for seg, _tier, bits, count in self._verified_rows()]

    def _rows(self) -> list[tuple[int, int, int, int, int]]:
        """(seg, tier, bits, postings, crc) of every segment, as stored."""
        return self.db.execute(
            f"SELECT seg, tier, bits, postings, crc FROM {self.name}_segments ORDER BY seg"
        ).fetchall()

    def _verified_rows(self) -> list[tuple[int, int, int, int]]:
        """(seg, tier, bits, postings) of every segment; IndexCorrupt when a row is damaged."""
        rows = self._rows()
        for seg, tier, bits, count, crc in rows:
            if segment_crc(seg, tier, bits, count) != crc or not 0 <= bits <= _MAX_BITS:
                raise IndexCorrupt(
                    f"{self.where}: the row of {self.name} segment {seg} is damaged (its "
                    f"checksum fails); run neardup index check {self.where}, then neardup "
                    f"index repair {self.where}"
                )
        return [r[:4] for r in rows]

    def read_range(
        self, segs: Sequence[tuple[int, int]], lo: int, hi: int
    ) -> tuple[KeyArray, IntArray]:
        """(key, doc) postings of the segments (seg, bits) with lo <= key < hi."""
        parts: list[bytes] = []
        for seg, bits in segs:
            first = lo >> (64 - bits) if bits else 0
            last = (hi - 1) >> (64 - bits) if bits else 0
            parts.extend(self._runs(seg, first, last))
        keys, docs = _unpack(parts)
        if lo == 0 and hi == 1 << 64:
            return keys, docs
        inside = (keys >= np.uint64(lo)) & (keys <= np.uint64(hi - 1))
        return keys[inside], docs[inside]

    def _runs(self, seg: int, first: int, last: int) -> list[bytes]:
        """The verified blobs of segment ``seg``'s runs ``first`` to ``last``, in order."""
        return self._verified(
            self.db.execute(
                f"SELECT slot, postings, crc FROM {self.name}_runs "
                "WHERE slot BETWEEN ? AND ? ORDER BY slot",
                ((seg << 32) | first, (seg << 32) | last),
            )
        )

    def lookup(self, keys: KeyArray) -> tuple[KeyArray, IntArray]:
        """(key, doc) of every held posting of ``keys``: one run read per key and segment.

        Runs are read ``LOOKUP_RUNS`` at a time and filtered before the next, so a large batch
        of queries holds only its hits, not every run it reads.
        """
        wanted = distinct(np.asarray(keys, dtype=np.uint64))  # ascending: a run's top bits too
        segs = self.segments()
        memory = self._still_held(segs)  # the runs a lookup reads are not listed then
        if memory is None:
            slots = [
                (np.int64(seg) << np.int64(32)) | distinct(top_bits(wanted, bits)).astype(np.int64)
                for seg, bits, _ in segs
            ]
            every = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
            memory = self._held_now(segs, len(every))
        if memory is not None:
            return memory.lookup(wanted)
        hit_keys: list[KeyArray] = []
        hit_docs: list[IntArray] = []
        for start in range(0, len(every), LOOKUP_RUNS):
            rows = self.db.execute(
                f"SELECT r.slot, r.postings, r.crc FROM json_each(?) j JOIN {self.name}_runs r "
                "ON r.slot = j.value",
                (json.dumps(every[start : start + LOOKUP_RUNS].tolist()),),
            )
            hit_key, hit_doc = _unpack(self._verified(rows))
            held = in_sorted(hit_key, wanted)
            hit_keys.append(hit_key[held])
            hit_docs.append(hit_doc[held])
        if not hit_keys:
            return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
        return np.concatenate(hit_keys), np.concatenate(hit_docs)

    def hold(self, budget: int) -> None:
        """Let lookups hold every posting in memory, up to ``budget`` bytes (``POSTING_BYTES``
        a posting), once one lookup reads at least ``1 / HOLD_SHARE`` of the runs: a long batch
        job (``index query``) whose every batch reads nearly every run then reads them once and
        searches its keys in memory. Held only while the index stays as read: a commit by
        another connection (``PRAGMA data_version``), another set of segments or a write
        through this one lets them go."""
        self._budget = max(0, int(budget))
        if not self._budget:
            self.let_go()

    def let_go(self) -> None:
        """Drop the postings held in memory (a write changes them); lookups read runs again."""
        self._memory = None

    def _still_held(self, segs: list[tuple[int, int, int]]) -> _Held | None:
        """The postings held in memory, if held and the index is still as they were read."""
        if self._memory is None:
            return None
        if (self._memory.shape, self._memory.version) == self._as_now(segs):
            return self._memory
        self._memory = None
        return None

    def _as_now(self, segs: list[tuple[int, int, int]]) -> tuple[tuple[tuple[int, int], ...], int]:
        """What held postings must match: the segments' (number, bits), the database's
        ``PRAGMA data_version`` (which another connection's write changes)."""
        version = int(self.db.execute("PRAGMA data_version").fetchone()[0])
        return tuple((seg, bits) for seg, bits, _ in segs), version

    def _held_now(self, segs: list[tuple[int, int, int]], slots: int) -> _Held | None:
        """Every posting of ``segs``, read now for a lookup of ``slots`` runs when allowed
        (within the budget) and worth it (a good share of the runs); None: read the runs."""
        if not self._budget or sum(count for *_, count in segs) * POSTING_BYTES > self._budget:
            return None
        if slots * HOLD_SHARE < sum(1 << bits for _, bits, _ in segs):
            return None
        shape, version = self._as_now(segs)
        parts = [  # each segment's packed records as read: no copy of keys or documents
            np.frombuffer(b"".join(self._runs(seg, 0, _SEG_MASK)), dtype=_POSTING)
            for seg, _, _ in segs
        ]
        self._memory = _Held(shape, version, parts)
        return self._memory

    def _verified(self, rows: Iterable[tuple[int, bytes, int]]) -> list[bytes]:
        """The blobs of (slot, postings, crc) rows; IndexCorrupt at the first damaged one."""
        rows = list(rows)
        size = _POSTING.itemsize
        try:  # inlined: a query verifies thousands of runs
            bad = [
                r
                for r in rows
                if crc32(r[1], (r[0] ^ (r[0] >> 32)) & 0xFFFFFFFF) != r[2] or len(r[1]) % size
            ]  # run_crc, its seed (run_seed) inlined
        except TypeError:  # a blob rewritten as another type
            bad = [r for r in rows if not run_sound(*r)]
        for slot, _blob, _crc in bad[:1]:
            raise IndexCorrupt(
                f"{self.where}: a postings run ({self.name} segment {slot >> 32}, run "
                f"{slot & _SEG_MASK}) is damaged (its checksum fails); find the documents it "
                f"holds with: neardup index check {self.where}"
            )
        return [row[1] for row in rows]

    def held(self) -> int:
        """Postings held, those of removed documents included."""
        row = self.db.execute(
            f"SELECT coalesce(sum(postings), 0) FROM {self.name}_segments"
        ).fetchone()
        return int(row[0])

    def check(self, next_doc: int) -> tuple[IntArray, list[str], dict[int, IntArray], list[int]]:
        """Postings held per document number in sound runs, problems found in the segments,
        the damaged runs (slot -> the document numbers their bytes name), and the segments
        whose row disagrees with their runs (key bits or postings count: ``refit`` mends)."""
        problems: list[str] = []
        damaged: dict[int, IntArray] = {}
        misfit: list[int] = []
        held = np.zeros(next_doc, dtype=np.int64)
        for seg, tier, bits, count, crc in self._rows():
            slots, keys, owners, bad = self._read_segment(seg)
            damaged.update(bad)
            where = f"{self.name} segment {seg}"
            if segment_crc(seg, tier, bits, count) != crc:
                problems.append(f"the row of {where} is damaged (checksum fails)")
                misfit.append(seg)
            elif not bad and len(keys) != count:
                problems.append(f"{where} lists {count} postings but holds {len(keys)}")
                misfit.append(seg)
            if not _fits(keys, slots, bits):
                problems.append(f"{where} lists {bits} key bits, not those its runs were cut by")
                misfit.append(seg)
            if np.any(keys[1:] < keys[:-1]):
                problems.append(f"{where} is not sorted by key")
            if len(owners) and (owners.min() < 0 or owners.max() >= next_doc):
                problems.append(f"{where} has postings of documents never numbered")
                continue
            held += np.bincount(owners, minlength=next_doc)
        if damaged:
            problems.append(
                f"{len(damaged)} postings run(s) of '{self.name}' are damaged (checksum fails)"
            )
        stray = self.db.execute(
            f"SELECT count(*) FROM {self.name}_runs WHERE (slot >> 32) NOT IN "
            f"(SELECT seg FROM {self.name}_segments)"
        ).fetchone()[0]
        if stray:
            problems.append(f"{stray} {self.name} runs belong to no segment")
        return held, problems, damaged, sorted(set(misfit))

    def _read_segment(self, seg: int) -> tuple[IntArray, KeyArray, IntArray, dict[int, IntArray]]:
        """(run number of each posting, keys, documents) of a segment's sound runs, and its
        damaged runs (slot -> the document numbers their bytes name)."""
        parts: list[bytes] = []
        runs: list[int] = []
        bad: dict[int, IntArray] = {}
        for slot, blob, crc in self.db.execute(
            f"SELECT slot, postings, crc FROM {self.name}_runs WHERE slot BETWEEN ? AND ? "
            "ORDER BY slot",
            (seg << 32, (seg << 32) | _SEG_MASK),
        ):
            if run_sound(slot, blob, crc):
                parts.append(blob)
                runs.append(slot & _SEG_MASK)
            else:
                bad[slot] = unpack_run(blob if isinstance(blob, bytes) else b"")
        sizes = [len(p) // _POSTING.itemsize for p in parts]
        keys, owners = _unpack(parts)
        return np.repeat(np.array(runs, dtype=np.int64), sizes), keys, owners, bad

    def refit(self, segs: Iterable[int]) -> None:
        """Rebuild segment rows from their (sound) runs: the postings they hold, their tier and
        the key bits the runs were cut by (any bits that put every posting in its run find
        every key); a segment without runs goes."""
        for seg in segs:
            runs, keys, _, _ = self._read_segment(seg)
            bits = next((b for b in range(_MAX_BITS + 1) if _fits(keys, runs, b)), None)
            if bits is None or len(keys) == 0:  # nothing, or no cut explains the runs: drop
                self.db.execute(
                    f"DELETE FROM {self.name}_runs WHERE slot BETWEEN ? AND ?",
                    (seg << 32, (seg << 32) | _SEG_MASK),
                )
                self.db.execute(f"DELETE FROM {self.name}_segments WHERE seg = ?", (seg,))
                continue
            n, tier = len(keys), tier_of(len(keys), self.fanout)
            self.db.execute(
                f"UPDATE {self.name}_segments SET tier = ?, bits = ?, postings = ?, crc = ? "
                "WHERE seg = ?",
                (tier, bits, n, segment_crc(seg, tier, bits, n), seg),
            )

    def drop_runs(self, slots: Iterable[int]) -> list[int]:
        """Delete runs (damaged ones, in a repair); returns their segments, to ``refit``."""
        slots = [int(s) for s in slots]
        self.db.executemany(f"DELETE FROM {self.name}_runs WHERE slot = ?", [(s,) for s in slots])
        return sorted({s >> 32 for s in slots})

    def set_dead(self, n: int) -> None:
        self._set("dead", n)
