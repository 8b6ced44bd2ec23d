"""The SQLite index's postings as merged sorted segments: same answers as memory, sound after
merges, removals and replacements, and the same index whatever the number of signing threads."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from neardup import Index, InputError
from neardup.index import segments
from neardup.index.segments import Segments
from neardup.params import DedupParams, SampledParams
from neardup.testing.synth import near_duplicate_corpus, random_documents


def _texts(n: int, seed: int) -> list[str]:
    base = random_documents(n, seed=seed, words=(15, 90))
    return list(near_duplicate_corpus(base, n, 0.4, seed=seed + 1, n_empty=2).texts)


def _answers(index: Index, probes: list[str]) -> list[list[dict[str, object]]]:
    return [[m.as_dict() for m in found] for found in index.query(probes)]


def _dump(path: Path) -> list[list[tuple[object, ...]]]:
    db = sqlite3.connect(path)
    try:
        return [
            db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in ("meta", "docs", "removed", "post_segments", "post_runs", "key_runs")
        ]
    finally:
        db.close()


@pytest.mark.parametrize(
    "params", [DedupParams(), DedupParams(method=SampledParams(m=2), threshold=0.8)]
)
def test_adds_removals_and_replacements_answer_like_the_memory_store_through_merges(
    params: DedupParams, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segments, "SLICE", 97)  # merges go slice by slice of the key space
    monkeypatch.setattr(segments, "LOOKUP_RUNS", 5)  # lookups read runs in groups
    texts = _texts(600, seed=5)
    rng = random.Random(7)
    disk = Index.create(str(tmp_path / "i.db"), params)
    memory = Index.create(None, params)
    live: list[str] = []
    removed = 0
    for step in range(40):
        ids = [f"d{rng.randrange(300)}" for _ in range(rng.randrange(1, 40))]
        ids = list(dict.fromkeys(ids))  # unique within a batch; some replace stored ids
        chosen = [texts[rng.randrange(len(texts))] for _ in ids]
        for index in (disk, memory):
            index.add(ids, chosen)
        live = sorted(set(live) | set(ids))
        if step % 3 == 2:
            gone = rng.sample(live, min(len(live), rng.randrange(1, 15)))
            for index in (disk, memory):
                index.remove(gone)
            live = sorted(set(live) - set(gone))
            removed += len(gone)
    probes = texts[::7]
    assert _answers(disk, probes) == _answers(memory, probes)
    assert sum(bool(a) for a in _answers(disk, probes)) > 10  # not vacuous
    assert len(disk) == len(memory) == len(live)
    assert disk.check() == []
    stats = disk.stats()
    assert stats["segments"] < 40  # merged, not one segment per batch
    for doc_id in live[:20]:
        assert disk.get(doc_id) == memory.get(doc_id)
    assert removed > 0


def test_merges_drop_the_postings_of_removed_documents(tmp_path: Path) -> None:
    texts = _texts(400, seed=9)
    index = Index.create(str(tmp_path / "i.db"), DedupParams(verify="sketch"))
    index.add([f"a{i}" for i in range(200)], texts[:200])
    index.remove([f"a{i}" for i in range(0, 200, 2)])
    dead = index.stats()["dead_postings"]
    assert dead > 0
    for b in range(20):  # enough batches that every segment merges
        index.add([f"b{b}-{i}" for i in range(10)], texts[200 + 10 * b : 210 + 10 * b])
    store = index.store
    assert isinstance(store.post, Segments)
    index.compact()  # everything into one segment a family
    assert store.post.dead == 0 and len(store.post.segments()) == 1
    assert index.check() == []
    assert index.stats()["postings"] == sum(
        int(r[0]) for r in store.db.execute("SELECT nkeys FROM docs")
    )


def test_threads_signing_batches_leave_the_same_index_as_one_thread(tmp_path: Path) -> None:
    texts = _texts(500, seed=11)
    batches = [
        ([*(f"d{i}" for i in range(s, s + 37)), "again"], [*texts[s : s + 37], texts[s]])
        for s in range(0, 450, 37)
    ]
    paths = []
    for jobs in (1, 3):
        path = tmp_path / f"j{jobs}.db"
        index = Index.create(str(path))
        seen: list[int] = []
        result = index.add_stream(batches, jobs, lambda b, seen=seen: seen.append(len(b[0])))
        assert seen == [len(b[0]) for b in batches]
        assert result.replaced == len(batches) - 1  # "again" comes back in every batch
        index.close()
        paths.append(path)
    assert _dump(paths[0]) == _dump(paths[1])


def test_check_finds_a_lost_run_a_wrong_dead_count_and_a_twice_stored_id(tmp_path: Path) -> None:
    path = tmp_path / "i.db"
    index = Index.create(str(path), DedupParams(verify="sketch"))
    texts = _texts(100, seed=3)
    index.add([f"d{i}" for i in range(100)], texts)
    index.remove(["d1"])
    index.close()
    db = sqlite3.connect(path)
    db.execute("DELETE FROM post_runs WHERE slot = (SELECT min(slot) FROM post_runs)")
    db.execute("UPDATE meta SET value = '0' WHERE key = 'post_dead'")
    db.execute("UPDATE docs SET id = 'd2' WHERE id = 'd3'")
    db.commit()
    db.close()
    problems = Index.open(str(path)).check()
    text = "\n".join(problems)
    assert "lists" in text and "holds" in text  # the segment lost postings
    assert "removed documents" in text
    assert "ids are stored more than once" in text


def test_ids_and_exact_copies_are_found_after_many_batches(tmp_path: Path) -> None:
    texts = _texts(300, seed=13)
    index = Index.create(str(tmp_path / "i.db"), DedupParams(verify="sketch"))
    for s in range(0, 300, 10):
        index.add([f"id-é日本-{i}" for i in range(s, s + 10)], texts[s : s + 10])
    assert f"id-é日本-{123}" in index
    assert "id-nope" not in index
    found = index.query([texts[42]])[0]
    assert ("exact", "id-é日本-42") in [(m.kind, m.id) for m in found]


def test_an_id_that_is_not_unicode_text_is_refused_with_nothing_changed(tmp_path: Path) -> None:
    index = Index.create(str(tmp_path / "i.db"))
    with pytest.raises(InputError, match="lone surrogate"):
        index.add(["ok", "bad-\udcff"], ["one text", "another text"])
    assert len(index) == 0


@pytest.mark.parametrize(
    "params", [DedupParams(), DedupParams(method=SampledParams(m=2), threshold=0.8)]
)
def test_postings_held_in_memory_answer_as_the_runs_do_through_writes_here_and_elsewhere(
    params: DedupParams, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segments, "HOLD_SHARE", 1 << 40)  # any lookup is worth holding for
    texts = _texts(500, seed=11)
    probes = texts[::5]
    path = str(tmp_path / "i.db")
    writer = Index.create(path, params)
    reader = Index.open(path)  # another connection: it sees the writer's commits
    small = Index.open(path)
    memory = Index.create(None, params)
    for index in (writer, reader):
        index.hold_postings(1 << 30)
    small.hold_postings(100)  # too little for the postings: lookups read runs
    rng = random.Random(3)
    held = 0
    for step in range(12):
        ids = list(dict.fromkeys(f"d{rng.randrange(250)}" for _ in range(rng.randrange(5, 60))))
        chosen = [texts[rng.randrange(len(texts))] for _ in ids]
        for index in (writer, memory):
            index.add(ids, chosen)
        if step % 4 == 3:
            gone = rng.sample(sorted(set(ids)), 3)
            for index in (writer, memory):
                index.remove(gone)
        if step % 4 == 0:  # a compaction elsewhere: the segments the reader held are gone
            for index in (writer, memory):
                index.compact()
        expected = _answers(memory, probes)
        assert _answers(reader, probes) == expected  # held, read again after each commit
        assert _answers(reader, probes) == expected  # held, as read
        held += reader.store.post._memory is not None  # type: ignore[attr-defined]
        assert _answers(writer, probes) == expected  # its own writes let go of them
        assert _answers(small, probes) == expected
        assert small.store.post._memory is None  # type: ignore[attr-defined]
    assert held == 12 and sum(bool(a) for a in expected) > 10


def test_postings_are_held_only_for_lookups_that_read_a_good_share_of_the_runs(
    tmp_path: Path,
) -> None:
    texts = _texts(1200, seed=13)
    index = Index.create(str(tmp_path / "i.db"))
    index.add([f"d{i}" for i in range(len(texts))], texts)  # one segment of about 1k runs
    index.hold_postings(1 << 30)
    post = index.store.post  # type: ignore[attr-defined]
    (_, bits, _), *_ = post.segments()
    assert (1 << bits) >= 1000
    index.query(texts[:1])  # one query reads a run per key: a few dozen
    assert post._memory is None
    index.query(texts[:600])  # half the documents: most runs
    assert post._memory is not None


def test_memory_store_after_small_adds_and_removals_answers_as_one_built_at_once() -> None:
    """The memory store keeps blocks of halving sizes and lists removed documents until enough
    pile up to rewrite the blocks: thousands of small adds, replacements and removals (past
    that rewrite) answer, count postings and check as one index built from the survivors."""
    texts = _texts(1500, seed=11)
    rng = random.Random(3)
    grown = Index.create(None)
    live: dict[str, str] = {}
    for step in range(400):
        ids = list(dict.fromkeys(f"d{rng.randrange(2200)}" for _ in range(rng.randrange(1, 12))))
        chosen = [texts[rng.randrange(len(texts))] for _ in ids]
        grown.add(ids, chosen)
        live.update(zip(ids, chosen, strict=True))
        if step % 4 == 3:
            gone = rng.sample(sorted(live), min(len(live), rng.randrange(1, 20)))
            grown.remove(gone)
            for doc_id in gone:
                del live[doc_id]
    whole = Index.create(None)
    whole.add(list(live), list(live.values()))
    probes = texts[::5]
    assert _answers(grown, probes) == _answers(whole, probes)
    assert sum(bool(a) for a in _answers(grown, probes)) > 50  # not vacuous
    assert grown.stats()["postings"] == whole.stats()["postings"]
    assert grown.check() == [] and len(grown) == len(live)
    assert len(grown.store._blocks) <= 12  # type: ignore[attr-defined]  # halving sizes: few


def _built(index: Index, texts: list[str]) -> list[str]:
    """Batches of adds, replacements and removals: several segments, some postings dead."""
    rng = random.Random(3)
    live: set[str] = set()
    for step in range(30):
        ids = list(dict.fromkeys(f"d{rng.randrange(200)}" for _ in range(rng.randrange(1, 25))))
        index.add(ids, [texts[rng.randrange(len(texts))] for _ in ids])
        live |= set(ids)
        if step % 4 == 3:
            gone = rng.sample(sorted(live), 5)
            index.remove(gone)
            live -= set(gone)
    return sorted(live)


@pytest.mark.parametrize("on_disk", [True, False])
@pytest.mark.parametrize(
    "params", [DedupParams(verify="sketch"), DedupParams(method=SampledParams(m=2), threshold=0.8)]
)
def test_compact_merges_every_segment_into_one_and_answers_as_before(
    params: DedupParams, on_disk: bool, tmp_path: Path
) -> None:
    texts = _texts(400, seed=17)
    index = Index.create(str(tmp_path / "i.db") if on_disk else None, params)
    live = _built(index, texts)
    probes = texts[::5]
    before = _answers(index, probes)
    assert sum(bool(a) for a in before) > 10  # not vacuous
    held = index.stats()["postings"]
    done = index.compact()
    assert done.segments_before > done.segments_after
    assert done.dropped > 0  # the removed documents' postings went
    assert _answers(index, probes) == before
    assert index.check() == []
    assert index.stats()["postings"] == held
    assert all(d in index for d in live) and len(index) == len(live)
    if on_disk:
        assert index.stats()["segments"] == done.segments_after == 2  # postings, id/hash keys
        assert index.stats()["dead_postings"] == 0
        again = index.compact()
        assert (again.segments_before, again.segments_after, again.dropped) == (2, 2, 0)
    index.add(["late"], [texts[1]])  # adds go on after a compaction
    assert ("exact", "late") in [(m.kind, m.id) for m in index.query([texts[1]])[0]]


def test_a_compaction_that_fails_midway_leaves_the_index_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "i.db"
    index = Index.create(str(path), DedupParams(verify="sketch"))
    _built(index, _texts(300, seed=19))
    was = _dump(path)
    written = []

    def failing(self: Segments, *args: object) -> None:
        written.append(args)
        if len(written) > 1:
            raise OSError("disk gone")
        real(self, *args)

    real = Segments._write_runs
    monkeypatch.setattr(Segments, "_write_runs", failing)
    with pytest.raises(OSError, match="disk gone"):
        index.compact()
    monkeypatch.setattr(Segments, "_write_runs", real)
    assert _dump(path) == was
    assert index.check() == []


def test_a_compaction_killed_midway_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    # SIGKILL once the postings are merged and written, in the open transaction, before the
    # id and hash keys are
    path = tmp_path / "i.db"
    index = Index.create(str(path), DedupParams(verify="sketch"))
    _built(index, texts := _texts(300, seed=29))
    probes = texts[::4]
    before, segs = _answers(index, probes), index.stats()["segments"]
    index.close()
    was = _dump(path)
    code = (
        "import os, signal; from neardup import Index; from neardup.index.segments import "
        "Segments as S; real = S._write_runs; calls = []; "
        "S._write_runs = lambda self, *a: calls.append(a) or (len(calls) > 1 and "
        "os.kill(os.getpid(), signal.SIGKILL)) or real(self, *a); "
        f"Index.open({str(path)!r}).compact()"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": src})
    assert proc.returncode == -signal.SIGKILL
    index = Index.open(str(path))
    assert index.check() == []
    assert index.stats()["segments"] == segs > 2
    assert _answers(index, probes) == before
    index.close()
    assert _dump(path) == was


def test_index_compact_says_what_it_merged_then_that_nothing_is_left_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from neardup.cli import main

    path = tmp_path / "i.db"
    index = Index.create(str(path), DedupParams(verify="sketch"))
    _built(index, _texts(300, seed=23))
    segs = index.stats()["segments"]
    index.close()
    assert main(["index", "compact", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"{path}: {segs:,} segments merged into 2, " in err and "postings of removed" in err
    assert main(["index", "compact", str(path)]) == 0
    assert (
        capsys.readouterr().err == f"neardup: {path}: already compact (2 segments); nothing to do\n"
    )
