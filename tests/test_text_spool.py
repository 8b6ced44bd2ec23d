"""Formats without an index of their records read their texts again once, into a spool, however
many times verification asks for some: the same texts, the same outputs as JSONL, no spool
left behind."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.errors import InputError
from neardup.io import open_source
from neardup.io._source import Source
from neardup.io._text_spool import TextSpool
from neardup.testing.synth import near_duplicate_corpus, random_documents

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TEXTS = [
    "plain ascii",
    "",
    "naïve café — ünïcode",
    "emoji \U0001f600 and a lone surrogate \ud800 kept",
    "日本語のテキスト",
    "x" * 10_000,
]
#: What a Parquet string column can hold (valid UTF-8: no lone surrogate).
VALID = [t for t in TEXTS if "\ud800" not in t]


def test_a_spool_gives_back_every_text_by_position_unicode_included() -> None:
    spool = TextSpool()
    spool.add(TEXTS[:2])
    spool.add([])
    spool.add(TEXTS[2:])
    spool.seal()
    assert len(spool) == len(TEXTS)
    order = np.array([5, 0, 3, 3, 1, 4, 2], dtype=np.int64)
    assert spool.texts(order) == [TEXTS[i] for i in order.tolist()]
    path = spool.path
    spool.close()
    assert not os.path.exists(path)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(max_size=40), max_size=30),
    picks=st.lists(st.integers(min_value=0, max_value=10**6), max_size=40),
)
def test_a_spool_reads_any_positions_in_any_order(texts: list[str], picks: list[int]) -> None:
    """Runs of texts adjacent in the file are read together; repeats and any order, empty
    texts and lone surrogates included, give back what was written."""
    spool = TextSpool()
    try:
        spool.add(texts[: len(texts) // 2])
        spool.add(texts[len(texts) // 2 :])
        spool.seal()
        order = np.array([p % len(texts) for p in picks] if texts else [], dtype=np.int64)
        assert spool.texts(order) == [texts[i] for i in order.tolist()]
        run = np.arange(len(texts), dtype=np.int64)
        assert spool.texts(run) == texts
    finally:
        spool.close()


def test_an_empty_spool_reads_nothing_and_leaves_nothing() -> None:
    spool = TextSpool()
    spool.add(["", ""])
    spool.seal()
    assert spool.texts(np.array([1, 0], dtype=np.int64)) == ["", ""]
    path = spool.path
    del spool
    assert not os.path.exists(path)


def _parquet(path: Path, texts: list[str]) -> None:
    ids = [f"d{i}" for i in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "text": texts}), path, row_group_size=7)


def _passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the runs of pass 1 from now on."""
    runs: list[int] = []
    original = Source._pass1

    def counted(self: Source, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        runs.append(1)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Source, "_pass1", counted)
    return runs


def test_a_parquet_source_reads_its_texts_again_once_for_any_number_of_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = random_documents(60, seed=5, words=(3, 30)) + VALID
    _parquet(tmp_path / "in.parquet", texts)
    source = open_source(str(tmp_path / "in.parquet"))
    for _ in source.batches(10):
        pass
    runs = _passes(monkeypatch)
    rng = np.random.default_rng(3)
    asked = [np.sort(rng.choice(len(texts), 9, replace=False)) for _ in range(8)]
    got: dict[int, list[str]] = {}

    def ask(i: int) -> None:
        got[i] = source.texts_at(asked[i], 10)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(asked))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] == [texts[j] for j in asked[i].tolist()] for i in range(len(asked)))
    assert len(runs) == 1  # one more pass 1 for all eight calls, not one each
    spool = source._texts
    assert spool is not None and os.path.exists(spool.path)
    source.close()
    assert not os.path.exists(spool.path)


def test_a_parquet_file_changed_after_pass_1_is_refused_when_read_again(tmp_path: Path) -> None:
    path = tmp_path / "in.parquet"
    _parquet(path, random_documents(20, seed=6, words=(3, 30)))
    source = open_source(str(path))
    for _ in source.batches(10):
        pass
    _parquet(path, random_documents(25, seed=7, words=(3, 30)))
    with pytest.raises(InputError, match="changed"):
        source.texts_at(np.array([0, 3], dtype=np.int64))


def test_parquet_and_jsonl_inputs_keep_the_same_documents_with_hybrid_rechecks(
    tmp_path: Path,
) -> None:
    base = random_documents(200, seed=11, words=(4, 40))
    texts = near_duplicate_corpus(base, 400, 0.5, seed=12).texts
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    _parquet(tmp_path / "in.parquet", texts)
    args = ["--verify", "hybrid", "--tokens", "char", "-w", "4", "-q"]
    summaries = []
    for name in ("in.jsonl", "in.parquet"):
        out, summary = tmp_path / f"{name}.kept.jsonl", tmp_path / f"{name}.summary.json"
        assert main(["dedup", str(tmp_path / name), "-o", str(out), "--summary-json",
                     str(summary), *args]) == 0  # fmt: skip
        summaries.append(json.loads(summary.read_text()))
    assert summaries[0]["exact_checks"] > 0  # borderline pairs were read again
    kept = [json.loads(line)["id"] for line in (tmp_path / "in.jsonl.kept.jsonl").open()]
    kept_pq = [json.loads(line)["id"] for line in (tmp_path / "in.parquet.kept.jsonl").open()]
    assert kept == kept_pq and summaries[0]["removed"] == summaries[1]["removed"] > 0


def _jsonl(texts: list[str]) -> bytes:
    return "".join(
        json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)
    ).encode()


@pytest.mark.parametrize("kind", ["gzip", "keep-field"])
def test_jsonl_that_cannot_seek_to_a_record_reads_its_texts_again_once(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzip file (every seek back decompresses from its start) and a file read line by line
    (no byte spans) are spooled like formats without an index; a plain file is read by span."""
    import gzip

    texts = random_documents(50, seed=9, words=(3, 30)) + TEXTS
    plain = tmp_path / "in.jsonl"
    plain.write_bytes(_jsonl(texts))
    path, key = plain, None
    if kind == "gzip":
        path = tmp_path / "in.jsonl.gz"
        path.write_bytes(gzip.compress(_jsonl(texts)))
    else:
        key = "id"
    source = open_source(str(path), key_field=key)
    for _ in source.batches(10):
        pass
    by_span = open_source(str(plain))
    for _ in by_span.batches(10):
        pass
    assert not any(source.format.reads_again(e) for e in source._entries)
    assert all(by_span.format.reads_again(e) for e in by_span._entries)
    runs = _passes(monkeypatch)
    asked = [np.arange(i, len(texts), 5, dtype=np.int64) for i in range(5)]
    for wanted in asked:
        assert source.texts_at(wanted) == [texts[j] for j in wanted.tolist()]
        assert by_span.texts_at(wanted) == [texts[j] for j in wanted.tolist()]
    assert len(runs) == 1 and source._texts is not None and by_span._texts is None
    source.close()
    by_span.close()


def test_a_spool_that_cannot_be_written_says_so_in_one_line(tmp_path: Path) -> None:
    """A full disk (here: a file size limit) names the spool, as other outputs' errors do."""
    import subprocess
    import sys

    code = (
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from neardup.errors import OutputError\n"
        "from neardup.io._text_spool import TextSpool\n"
        f"spool = TextSpool({str(tmp_path)!r})\n"
        "try:\n"
        "    spool.add(['x' * 100_000])\n"
        "    spool.seal()\n"
        "except OutputError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert message.startswith("cannot write the copy of the texts kept for exact re-checks")
    assert str(tmp_path) in message and "\n" not in message


@pytest.mark.parametrize("kind", ["parquet", "gzip", "keep-field"])
def test_a_source_told_to_keep_texts_spools_them_in_pass_1_and_never_reads_again(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pass 1 more at the first re-read: the texts are those pass 1 read, even once the
    input has been moved away."""
    import gzip

    texts = random_documents(40, seed=13, words=(3, 30)) + VALID
    path, key = tmp_path / "in.jsonl", None
    if kind == "parquet":
        path = tmp_path / "in.parquet"
        _parquet(path, texts)
    elif kind == "gzip":
        path = tmp_path / "in.jsonl.gz"
        path.write_bytes(gzip.compress(_jsonl(texts)))
    else:
        path.write_bytes(_jsonl(texts))
        key = "id"
    source = open_source(str(path), key_field=key)
    source.keep_texts = True
    for _ in source.batches(10):
        pass
    spool = source._texts
    assert spool is not None and os.path.exists(spool.path)
    runs = _passes(monkeypatch)
    path.rename(tmp_path / "moved")
    wanted = np.arange(1, len(texts), 3, dtype=np.int64)
    assert source.texts_at(wanted) == [texts[j] for j in wanted.tolist()]
    assert not runs
    source.close()
    assert not os.path.exists(spool.path)


@pytest.fixture
def spools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder where every spool of the test goes."""
    import tempfile

    folder = tmp_path / "spools"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_plain_jsonl_source_told_to_keep_texts_writes_no_spool(
    tmp_path: Path, spools: Path
) -> None:
    """A file read again by span needs no copy of its texts."""
    texts = random_documents(30, seed=14, words=(3, 30))
    (tmp_path / "in.jsonl").write_bytes(_jsonl(texts))
    source = open_source(str(tmp_path / "in.jsonl"))
    source.keep_texts = True
    for _ in source.batches(10):
        pass
    assert source._texts is None and not list(spools.iterdir())
    assert source.texts_at(np.array([2, 7], dtype=np.int64)) == [texts[2], texts[7]]
    source.close()


def test_a_pass_1_stopped_early_leaves_no_spool(tmp_path: Path, spools: Path) -> None:
    _parquet(tmp_path / "in.parquet", random_documents(50, seed=15, words=(3, 30)))
    source = open_source(str(tmp_path / "in.parquet"))
    source.keep_texts = True
    batches = source.batches(10)
    next(batches)
    assert len(list(spools.iterdir())) == 1
    batches.close()
    assert not list(spools.iterdir()) and source._texts is None
    source.close()
