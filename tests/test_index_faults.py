"""A damaged index (checksums find every changed record, reads fail in one line, repair works),
a full disk during add, and create options that conflict."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from neardup import Index, IndexCorrupt, IndexMismatchError, InputError, ParamError
from neardup.cli import main
from neardup.index import SCHEMA_VERSION
from neardup.params import DedupParams
from neardup.testing.synth import random_documents

SRC = str(Path(__file__).resolve().parents[1] / "src")
POSTING = np.dtype([("key", "<u8"), ("doc", "<u4")])
#: What a damaged copy changes: a document row's field or a postings run.
KINDS = ["text", "hash", "evidence", "sig", "post", "key"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """An index of 300 texts added in 6 batches (several segments, merges), closed (no WAL)."""
    path = tmp_path_factory.mktemp("built") / "idx.db"
    texts = random_documents(300, seed=5, words=(30, 80))
    index = Index.create(str(path), DedupParams())
    for b in range(6):
        index.add([f"d{i}" for i in range(b * 50, b * 50 + 50)], texts[b * 50 : b * 50 + 50])
    index.remove(["d7", "d8"])  # postings of removed documents stay until they merge
    index.close()
    assert not Path(str(path) + "-wal").exists()
    return path, texts


def _docs(db: sqlite3.Connection) -> dict[int, str]:
    return dict(db.execute("SELECT doc, id FROM docs"))


def _doc_order(doc_id: str) -> int:
    return int(doc_id[1:])


def _flip(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes([blob[at] ^ 0xA5]) + blob[at + 1 :]


def _damage_sql(db: sqlite3.Connection, kind: str, rng: np.random.Generator) -> set[str]:
    """Change one record through SQL; returns the ids check must name."""
    ids = _docs(db)
    if kind in ("post", "key"):
        slots = [r[0] for r in db.execute(f"SELECT slot FROM {kind}_runs")]
        slot = int(rng.choice(slots))
        (blob,) = db.execute(f"SELECT postings FROM {kind}_runs WHERE slot = ?", (slot,)).fetchone()
        at = int(rng.integers(len(blob)))
        if rng.integers(2):
            db.execute(
                f"UPDATE {kind}_runs SET postings = ? WHERE slot = ?", (_flip(blob, at), slot)
            )
        else:  # SQL's || makes the blob a text, and not UTF-8: a read must not fail on it
            db.execute(
                f"UPDATE {kind}_runs SET postings = substr(postings, 1, ?1) || x'ff' || "
                "substr(postings, ?1 + 2) WHERE slot = ?2",
                (at, slot),
            )
        owners = np.frombuffer(blob, dtype=POSTING)["doc"].tolist()
        return {ids[d] for d in owners if d in ids}
    doc = int(rng.choice(sorted(ids)))
    if kind == "hash":
        bit = 1 << int(rng.integers(63))
        db.execute("UPDATE docs SET hash = (hash | ?1) - (hash & ?1) WHERE doc = ?2", (bit, doc))
    elif kind == "text":  # no longer UTF-8: the byte 0xff never occurs in it
        (text,) = db.execute("SELECT text FROM docs WHERE doc = ?", (doc,)).fetchone()
        raw = text.encode()
        at = int(rng.integers(len(raw)))
        db.execute(
            "UPDATE docs SET text = CAST(? AS TEXT) WHERE doc = ?",
            (raw[:at] + b"\xff" + raw[at + 1 :], doc),
        )
    else:
        column = {"evidence": "ev", "sig": "sig"}[kind]
        (blob,) = db.execute(f"SELECT {column} FROM docs WHERE doc = ?", (doc,)).fetchone()
        db.execute(
            f"UPDATE docs SET {column} = ? WHERE doc = ?",
            (_flip(blob, int(rng.integers(len(blob)))), doc),
        )
    return {ids[doc]}


def _damage_raw(path: Path, kind: str, rng: np.random.Generator) -> set[str]:
    """Change bytes of one record in the file itself, inside the page (SQLite cannot tell)."""
    db = sqlite3.connect(path)
    ids = _docs(db)
    data = bytearray(path.read_bytes())
    while True:  # a record whose bytes can be found once in the file
        if kind in ("post", "key"):
            slots = [r[0] for r in db.execute(f"SELECT slot FROM {kind}_runs")]
            (blob,) = db.execute(
                f"SELECT postings FROM {kind}_runs WHERE slot = ?", (int(rng.choice(slots)),)
            ).fetchone()
            owners = np.frombuffer(blob, dtype=POSTING)["doc"].tolist()
            want = {ids[d] for d in owners if d in ids}
        else:
            column = {"text": "text", "evidence": "ev", "sig": "sig"}[kind]
            doc = int(rng.choice(sorted(ids)))
            (blob,) = db.execute(f"SELECT {column} FROM docs WHERE doc = ?", (doc,)).fetchone()
            blob = blob.encode() if isinstance(blob, str) else blob
            want = {ids[doc]}
        start = int(rng.integers(max(len(blob) - 48, 1)))
        needle = bytes(blob[start : start + 48])
        at = data.find(needle)
        if len(needle) == 48 and at >= 0 and data.find(needle, at + 1) < 0:
            break
    db.close()
    data[at + 20] = 0xFF if data[at + 20] != 0xFF else 0xFE  # in a text: no longer UTF-8
    path.write_bytes(bytes(data))
    return want


def test_check_finds_every_damaged_record_in_20_random_copies(
    built: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, texts = built
    assert main(["index", "check", str(path)]) == 0
    capsys.readouterr()
    seen: set[tuple[str, str]] = set()
    for copy in range(20):
        rng = np.random.default_rng(copy)
        damaged = tmp_path / f"copy{copy}.db"
        shutil.copy(path, damaged)
        want: set[str] = set()
        kinds = [KINDS[copy % len(KINDS)], *rng.choice(KINDS, size=int(rng.integers(0, 3)))]
        for n, kind in enumerate(kinds):
            if kind != "hash" and (copy // len(KINDS) + n) % 2:
                want |= _damage_raw(damaged, str(kind), rng)
                seen.add((str(kind), "raw"))
            else:
                with _edited(damaged) as db:
                    want |= _damage_sql(db, str(kind), rng)
                seen.add((str(kind), "sql"))
        db = sqlite3.connect(damaged)
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]  # SQLite sees none
        db.close()
        index = Index.open(str(damaged))
        assert set(index.damage().ids) == want, (copy, kinds)
        index.close()
        assert main(["index", "check", str(damaged)]) == 1
        out, err = capsys.readouterr()
        assert err.count("\n") == 1 and "Traceback" not in err
        assert f"{len(want)} damaged documents" in err
        assert all(repr(i) in err for i in sorted(want, key=_doc_order)[:20]), (copy, kinds)
        assert set(out.split()) == want  # every one, on standard output
        assert f"neardup index repair {damaged}" in err
        # repair removes exactly those; adding them again gives a sound, whole index
        assert main(["index", "repair", str(damaged)]) == 0
        assert set(capsys.readouterr().out.split()) == want
        by_id = {f"d{i}": t for i, t in enumerate(texts) if f"d{i}" not in ("d7", "d8")}
        index = Index.open(str(damaged))
        assert index.check() == []
        index.add(sorted(want), [by_id[i] for i in sorted(want)])
        assert index.check() == [] and len(index) == 298
        assert index.query([by_id["d100"]])[0][0].id == "d100"
        index.close()
    # every kind of record changed both ways (a content hash only through SQL: no raw bytes)
    assert seen == {(k, m) for k in KINDS for m in ("sql", "raw")} - {("hash", "raw")}


@contextlib.contextmanager
def _edited(path: Path, copy_of: Path | None = None) -> Iterator[sqlite3.Connection]:
    """The index file ``path`` (first made a copy of ``copy_of`` when given) opened as a plain
    SQLite database to damage it; the changes are committed and the file closed on leaving."""
    if copy_of is not None:
        shutil.copy(copy_of, path)
    db = sqlite3.connect(path)
    try:
        yield db
        db.commit()
    finally:
        db.close()


def _query_cli(path: Path, text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "q.jsonl"
    src.write_text(json.dumps({"id": "q", "text": text}) + "\n")
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-m", "neardup.cli", "index", "query", str(path), str(src)],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("kind", ["text", "hash", "post", "post-as-text"])
def test_a_query_meeting_a_damaged_record_is_one_line(
    built: tuple[Path, list[str]], tmp_path: Path, kind: str
) -> None:
    path, texts = built
    damaged = tmp_path / "damaged.db"
    with _edited(damaged, copy_of=path) as db:
        if kind.startswith("post"):  # every run of the newest segment: the query reads one
            seg = db.execute("SELECT max(seg) FROM post_segments").fetchone()[0]
            change = (
                "postings || x'ff'" if kind == "post-as-text" else "CAST(postings || x'00' AS BLOB)"
            )
            db.execute(f"UPDATE post_runs SET postings = {change} WHERE slot >> 32 = ?", (seg,))
            doc = db.execute("SELECT doc FROM docs ORDER BY doc DESC LIMIT 1").fetchone()[0]
        else:
            doc = 100
            if kind == "text":
                db.execute(
                    "UPDATE docs SET text = CAST(x'ff20616263' AS TEXT) WHERE doc = ?", (doc,)
                )
            else:
                db.execute("UPDATE docs SET hash = hash + 1 WHERE doc = ?", (doc,))
    index = Index.open(str(damaged))
    with pytest.raises(IndexCorrupt, match="damaged"):
        index.query([texts[doc]])
    index.close()
    done = _query_cli(damaged, texts[doc], tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: ")
    assert "damaged" in done.stderr and f"neardup index check {damaged}" in done.stderr
    assert "sqlite3" not in done.stderr and "Traceback" not in done.stderr


def test_an_index_of_schema_3_is_refused_in_one_line_and_upgrades_in_place(
    built: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, texts = built
    old = tmp_path / "old.db"
    with _edited(old, copy_of=path) as db:  # schema 3: the same tables without their checksums
        for table in ("docs", "post_runs", "key_runs", "post_segments", "key_segments"):
            db.execute(f"ALTER TABLE {table} DROP COLUMN crc")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    with pytest.raises(IndexMismatchError, match=f"neardup index upgrade {old}"):
        Index.open(str(old))
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "text": texts[3]}) + "\n")
    assert main(["index", "query", str(old), str(queries)]) == 1
    assert "schema version 3" in capsys.readouterr().err
    assert main(["index", "upgrade", str(old)]) == 0
    assert "298 documents" in capsys.readouterr().err
    assert main(["index", "check", str(old)]) == 0
    index = Index.open(str(old))
    assert index.stats()["schema_version"] == SCHEMA_VERSION
    assert index.query([texts[3]])[0][0].id == "d3"
    index.close()


def test_upgrading_an_index_at_the_current_schema_says_it_had_nothing_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "idx.db")
    with Index.create(path) as index:
        index.add(["a", "b"], ["some words in a row", "other words in a line"])
    assert main(["index", "upgrade", path]) == 0
    err = capsys.readouterr().err
    assert err == (
        f"neardup: {path}: already at the current index schema (version {SCHEMA_VERSION}); "
        "nothing to do (2 documents)\n"
    )


def test_create_refuses_options_the_index_cannot_honour_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "i.db"
    with pytest.raises(ParamError, match=r"store_text=True.*verify='sketch'"):
        Index.create(str(path), store_text=False)
    with pytest.raises(ParamError, match="store_text"):
        Index.create(None, DedupParams(verify="hybrid"), store_text=False)
    assert main(["index", "create", str(path), "--no-store-text"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--store-text" in err and "--verify" in err
    assert not path.exists()  # refused before any work
    for other in ({"keep": "longest"}, {"removal": "components"}):  # never applied by an index
        with pytest.raises(ParamError, match="first copy it is given"):
            Index.create(str(path), DedupParams(**other))  # type: ignore[arg-type]
    assert main(["index", "create", str(tmp_path / "no" / "folder.db")]) == 1
    assert "folder exists" in capsys.readouterr().err
    assert not path.exists()
    assert main(["index", "create", str(path), "--no-store-text", "--verify", "sketch"]) == 0
    assert main(["index", "check", str(path)]) == 0


@contextlib.contextmanager
def _room(where: Path, how: str) -> Iterator[None]:
    """A folder with little room: a 1 MB tmpfs (root only; skipped elsewhere), or, for
    "rlimit", a plain folder (the test limits the child's file sizes)."""
    where.mkdir()
    if how == "rlimit":
        yield
        return
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.mark.parametrize("how", ["rlimit", "tmpfs"])
def test_a_full_disk_during_add_is_one_line_and_leaves_the_index_unchanged(
    tmp_path: Path, how: str
) -> None:
    texts = random_documents(1050, seed=3, words=(100, 200))
    src = tmp_path / "big.jsonl"  # one batch of ~1.5 MB of texts: more than there is room for
    src.write_text(
        "".join(json.dumps({"id": f"b{i}", "text": t}) + "\n" for i, t in enumerate(texts[50:]))
    )
    with _room(tmp_path / "disk", how):
        path = tmp_path / "disk" / "idx.db"
        index = Index.create(str(path))
        index.add([f"a{i}" for i in range(50)], texts[:50])
        index.close()
        before = sqlite3.connect(path).execute("SELECT id, crc FROM docs ORDER BY doc").fetchall()
        limit = os.path.getsize(path) + (256 << 10)

        def small_files() -> None:  # SIGXFSZ ignored: a write past the limit fails (EFBIG)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        args = ["index", "add", str(path), str(src), "--batch-size", "5000"]
        done = subprocess.run(
            [sys.executable, "-m", "neardup.cli", *args],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": SRC},
            preexec_fn=small_files if how == "rlimit" else None,
        )
        assert done.returncode == 1
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert str(path) in done.stderr and "disk is full" in done.stderr
        assert "rolled back" in done.stderr and "free space" in done.stderr
        index = Index.open(str(path))
        assert index.check() == [] and len(index) == 50
        index.close()
        after = sqlite3.connect(path).execute("SELECT id, crc FROM docs ORDER BY doc").fetchall()
        assert after == before
        if how == "rlimit":
            assert main(["index", "add", str(path), str(src)]) == 0  # with room, the add works
            assert len(Index.open(str(path))) == 1050


def test_a_damaged_run_of_removed_documents_only_is_dropped_by_repair(tmp_path: Path) -> None:
    path = tmp_path / "idx.db"
    texts = random_documents(20, seed=9, words=(30, 60))
    index = Index.create(str(path))
    index.add(["gone1", "gone2"], texts[:2])  # one segment of their keys alone
    index.add([f"d{i}" for i in range(2, 20)], texts[2:])
    index.remove(["gone1", "gone2"])
    index.close()
    with _edited(path) as db:
        db.execute(
            "UPDATE key_runs SET postings = CAST(postings || x'00' AS BLOB) WHERE slot >> 32 = 0"
        )
    index = Index.open(str(path))
    assert index.damage().ids == [] and index.damage().runs["key"]
    assert any("removed documents only" in p for p in index.check())
    assert index.repair() == []
    assert index.check() == [] and len(index) == 18
    assert index.query([texts[5]])[0][0].id == "d5"
    index.close()


def test_a_page_sqlite_cannot_read_is_one_line_never_an_sqlite3_error(
    built: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, texts = built
    damaged = tmp_path / "malformed.db"
    data = bytearray(path.read_bytes())
    page = data.find(texts[100].encode()[:60]) // 16384  # the page holding d100's row
    data[page * 16384 : (page + 1) * 16384] = np.random.default_rng(1).bytes(16384)
    damaged.write_bytes(bytes(data))
    index = Index.open(str(damaged))
    for call in (lambda: index.query([texts[100]]), lambda: index.get("d100"), index.check):
        with pytest.raises(IndexCorrupt, match=r"file itself is damaged.*rebuild the index"):
            call()
    index.close()
    assert main(["index", "check", str(damaged)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rebuild the index" in err


@pytest.mark.parametrize("change", ["bits = bits + 1", "postings = postings - 1", "tier = 7"])
def test_a_damaged_segment_row_is_found_refused_on_read_and_rebuilt_by_repair(
    built: tuple[Path, list[str]], tmp_path: Path, change: str
) -> None:
    path, texts = built
    damaged = tmp_path / "segment.db"
    with _edited(damaged, copy_of=path) as db:
        db.execute(
            f"UPDATE post_segments SET {change} WHERE seg = (SELECT max(seg) FROM post_segments)"
        )
    index = Index.open(str(damaged))
    problems = index.check()
    assert any("row of post segment" in p for p in problems)
    assert any("no stored document is lost" in p for p in problems)
    assert index.damage().ids == []
    with pytest.raises(IndexCorrupt, match="row of post segment"):
        index.query([texts[0]])  # never an answer from a segment read with the wrong key bits
    assert index.repair() == []
    assert index.check() == []
    found = index.query(texts)
    assert all(found[i][0].id == f"d{i}" for i in range(300) if i not in (7, 8))
    index.close()


def test_a_create_killed_midway_leaves_no_file_at_the_path_and_create_works_again(
    tmp_path: Path,
) -> None:
    # killed once the index is whole under its draft name, before it is linked into place
    path = tmp_path / "idx.db"
    code = (
        "import os, signal; from neardup import Index; "
        "os.link = lambda *a: os.kill(os.getpid(), signal.SIGKILL); "
        f"Index.create({str(path)!r})"
    )
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC})
    assert proc.returncode == -signal.SIGKILL
    assert not path.exists()  # it was a file no command could open or create again
    Index.create(str(path)).close()
    assert Index.open(str(path)).stats()["documents"] == 0


def test_of_two_creates_of_one_path_one_succeeds_and_the_other_leaves_its_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # both passed the "already exists" check; the other create's index lands first
    path = tmp_path / "idx.db"
    Index.create(str(tmp_path / "other.db")).close()
    link = os.link

    def other_first(src: str, dst: str) -> None:
        shutil.copyfile(tmp_path / "other.db", dst)
        link(src, dst)

    monkeypatch.setattr(os, "link", other_first)
    before = (tmp_path / "other.db").read_bytes()
    with pytest.raises(InputError, match=r"idx\.db already exists"):
        Index.create(str(path))
    assert path.read_bytes() == before  # the failed create removed it before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx.db", "other.db"]  # no draft
