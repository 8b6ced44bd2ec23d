"""Batches sized in bytes (issue 27): a JSONL file's parser block is the batch, so a corpus of
a few large documents still gives every core batches; outputs never depend on the sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup.cli import main
from neardup.io import open_source
from neardup.testing.synth import near_duplicate_corpus, random_documents


def _corpus(path: Path, n: int, words: tuple[int, int]) -> Path:
    base = random_documents(n // 2, seed=7, words=words)
    texts = near_duplicate_corpus(base, n, 0.5, seed=8).texts
    path.write_text(
        "".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts))
    )
    return path


def test_large_documents_come_in_many_batches_of_about_the_size_asked(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "big.jsonl", 40, (1500, 2500))  # ~10-15 kB each
    size = src.stat().st_size
    with open_source(src) as source:
        batches = list(source.batches(None, 64 << 10))
    assert len(batches) >= size // (64 << 10) - 1  # not one batch of every document
    assert all(b.nbytes <= (64 << 10) + 20_000 for b in batches)  # a block ends at a line
    with open_source(src) as source:
        by_count = [rid for b in source.batches(5000) for rid in b.ids]
    assert [rid for b in batches for rid in b.ids] == by_count


def test_small_blocks_are_joined_not_passed_one_by_one(tmp_path: Path) -> None:
    files = []
    for i in range(6):
        path = tmp_path / f"f{i}.jsonl"
        path.write_text(json.dumps({"id": f"x{i}", "text": f"tiny document number {i}"}) + "\n")
        files.append(path)
    with open_source(files) as source:
        batches = list(source.batches(None, 1 << 20))
    assert len(batches) < 6 and sum(len(b) for b in batches) == 6


@pytest.mark.parametrize("words", [(1500, 2500), (3, 12)], ids=["large", "one-line"])
def test_outputs_are_the_same_for_any_batch_size_and_jobs(
    tmp_path: Path, words: tuple[int, int]
) -> None:
    src = _corpus(tmp_path / "in.jsonl", 120 if words[0] > 100 else 600, words)
    outputs = {}
    for size in ("2K", "64K", "4M", "17", "5000"):
        for jobs in ("1", "2"):
            kept, clusters = tmp_path / f"k{size}{jobs}.jsonl", tmp_path / f"c{size}{jobs}.jsonl"
            args = ["dedup", str(src), "-o", str(kept), "--clusters", str(clusters), "-q"]
            assert main([*args, "--batch-size", size, "--jobs", jobs]) == 0
            outputs[size, jobs] = (kept.read_bytes(), clusters.read_bytes())
    assert len(set(outputs.values())) == 1


def test_index_add_and_query_give_the_same_answers_for_any_batch_size_and_jobs(
    tmp_path: Path,
) -> None:
    src = _corpus(tmp_path / "in.jsonl", 200, (40, 80))
    answers = set()
    for size, jobs in (("1K", "1"), ("1K", "2"), ("4M", "2"), ("13", "2")):
        idx = tmp_path / f"i{size}{jobs}.db"
        out = tmp_path / f"q{size}{jobs}.jsonl"
        assert main(["index", "create", str(idx)]) == 0
        args = ["--batch-size", size, "--jobs", jobs]
        assert main(["index", "add", str(idx), str(src), *args]) == 0
        assert main(["index", "query", str(idx), str(src), "-o", str(out), *args]) == 0
        answers.add(out.read_bytes())
    assert len(answers) == 1


@pytest.mark.parametrize("command", ["dedup", "decontaminate"])
@pytest.mark.parametrize("size", ["1.5", "0", "100B", "2T", "4Q", "3000000000"])
def test_a_batch_size_it_cannot_take_is_quoted_as_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, size: str
) -> None:
    src = _corpus(tmp_path / "in.jsonl", 4, (5, 10))
    extra = ["--against", str(src)] if command == "decontaminate" else []
    out = tmp_path / "out.jsonl"
    assert main([command, str(src), *extra, "-o", str(out), "--batch-size", size]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--batch-size must be" in err and f"got {size!r}" in err
    assert "a byte size" in err and "a whole number of documents" in err
    assert not out.exists()
