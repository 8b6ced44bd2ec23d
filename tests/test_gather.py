"""Pass 2's reads by byte span (``_jsonl_blocks._gather``): the ranges' bytes are those of the
file's slices whatever the buffer size, gaps and handle; reads stay inside runs and skip long
gaps; a file changed after pass 1 is the same one-line error."""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.errors import InputError
from neardup.io import _jsonl_blocks as blocks
from neardup.io._report import Entry

SRC = str(Path(__file__).resolve().parents[1] / "src")


class _Reads(io.BytesIO):
    """A file in memory that records each read as (offset, bytes) and reads at most ``most``
    bytes a call (short reads, as a remote file may give)."""

    def __init__(self, data: bytes, most: int) -> None:
        super().__init__(data)
        self.most = most
        self.reads: list[tuple[int, int]] = []

    def readinto(self, buffer: object) -> int:
        at = self.tell()
        n = super().readinto(memoryview(buffer)[: self.most])  # type: ignore[arg-type]
        self.reads.append((at, n))
        return n


def _runs(pairs: list[tuple[int, int]], skip: int) -> list[tuple[int, int]]:
    """The ranges merged across gaps of at most ``skip`` bytes: what may be read."""
    runs = [pairs[0]]
    for a, b in pairs[1:]:
        if a - runs[-1][1] > skip:
            runs.append((a, b))
        else:
            runs[-1] = (runs[-1][0], b)
    return runs


@st.composite
def _files(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, int]], list[int]]:
    """Random bytes, sorted disjoint non-empty ranges in them (dense, sparse or mixed gaps,
    adjacent ones included) and some offsets inside the ranges (the lines to check)."""
    widest_gap = draw(st.sampled_from([0, 3, 40, 400]))
    pairs: list[tuple[int, int]] = []
    end = 0
    for _ in range(draw(st.integers(1, 30))):
        a = end + draw(st.integers(0, widest_gap))
        end = a + draw(st.integers(1, draw(st.sampled_from([4, 60, 500]))))
        pairs.append((a, end))
    size = end + draw(st.integers(0, 50))
    data = np.random.default_rng(draw(st.integers(0, 2**32))).integers(0, 256, size, np.uint8)
    inside = [p for a, b in pairs for p in range(a, b)]
    lines = sorted(set(draw(st.lists(st.sampled_from(inside), max_size=40))) | {pairs[0][0]})
    return data.tobytes(), pairs, lines


def _gathered(
    entry: Entry, pairs: list[tuple[int, int]], lines: list[int], data: bytes
) -> tuple[bytes, list[int]]:
    """What ``_gather`` yields, joined, and the size of each piece (copied as it comes: a
    piece is valid only until the next)."""
    pieces = [
        piece.tobytes()
        for piece in blocks._gather(
            entry,
            np.array([a for a, _ in pairs], dtype=np.int64),
            np.array([b for _, b in pairs], dtype=np.int64),
            np.array(lines, dtype=np.int64),
            np.frombuffer(data, dtype=np.uint8)[lines],
        )
    ]
    return b"".join(pieces), [len(p) for p in pieces]


@settings(max_examples=300, deadline=None)
@given(
    case=_files(),
    chunk=st.integers(1, 700),
    skip=st.integers(0, 300),
    most=st.sampled_from([1, 7, 1 << 20]),
)
def test_gathered_bytes_are_the_slices_read_only_inside_runs_whatever_the_buffer(
    case: tuple[bytes, list[tuple[int, int]], list[int]], chunk: int, skip: int, most: int
) -> None:
    data, pairs, lines = case
    handles: list[_Reads] = []

    def opener() -> _Reads:
        handles.append(_Reads(data, most))
        return handles[-1]

    entry = Entry("c.jsonl", None, opener=opener)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocks, "CHUNK", chunk)
        mp.setattr(blocks, "SKIP_BYTES", skip)
        joined, sizes = _gathered(entry, pairs, lines, data)
    assert joined == b"".join(data[a:b] for a, b in pairs)
    assert max(sizes) <= chunk  # memory bounded by the buffer, not by the wanted bytes
    runs = _runs(pairs, skip)
    reads = handles[0].reads
    for at, n in reads:  # inside a run: never past its last range, never in a long gap
        assert any(a <= at and at + n <= b for a, b in runs), (at, n, runs)
    assert sum(n for _, n in reads) == sum(b - a for a, b in runs)  # each byte read once


@settings(max_examples=100, deadline=None)
@given(case=_files(), chunk=st.integers(1, 700), skip=st.integers(0, 300))
def test_gathered_bytes_of_a_gzip_file_are_its_decompressed_slices(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[bytes, list[tuple[int, int]], list[int]],
    chunk: int,
    skip: int,
) -> None:
    data, pairs, lines = case
    src = tmp_path_factory.mktemp("gz") / "c.jsonl.gz"
    src.write_bytes(gzip.compress(data))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocks, "CHUNK", chunk)
        mp.setattr(blocks, "SKIP_BYTES", skip)
        joined, _ = _gathered(Entry(src.name, src), pairs, lines, data)
    assert joined == b"".join(data[a:b] for a, b in pairs)


@settings(max_examples=200, deadline=None)
@given(
    case=_files(),
    chunk=st.integers(1, 700),
    skip=st.integers(0, 300),
    change=st.sampled_from(["first byte", "shorter"]),
    which=st.integers(0, 2**16),
)
def test_a_file_changed_after_pass_one_is_one_error_line(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[bytes, list[tuple[int, int]], list[int]],
    chunk: int,
    skip: int,
    change: str,
    which: int,
) -> None:
    data, pairs, lines = case
    changed = bytearray(data)
    if change == "first byte":  # a line no longer starts with the byte pass 1 saw
        line = lines[which % len(lines)]
        changed[line] ^= 0xFF
    else:  # the file ends inside a range
        a, b = pairs[which % len(pairs)]
        del changed[a + which % (b - a) :]
    src: Path = tmp_path_factory.mktemp("changed") / "c.jsonl"
    src.write_bytes(bytes(changed))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocks, "CHUNK", chunk)
        mp.setattr(blocks, "SKIP_BYTES", skip)
        with pytest.raises(InputError) as raised:
            _gathered(Entry("c.jsonl", src), pairs, lines, data)
    message = str(raised.value)
    assert "changed between the two passes" in message and "\n" not in message


def _kept_corpus(path: Path, words: tuple[int, int] = (900, 1300)) -> None:
    """JSONL of near copies (about a third removed), its last line without a newline; lines
    long enough (about 7 KB) for the kernel to copy them."""
    from neardup.testing.synth import near_duplicate_corpus, random_documents

    base = random_documents(300, seed=4, words=words)
    texts = near_duplicate_corpus(base, 300, 0.35, seed=5).texts
    lines = [f'{{"id": "d{i}", "text": {json.dumps(t)}}}' for i, t in enumerate(texts)]
    path.write_text("\n".join(lines), encoding="utf-8")  # no newline after the last


def test_kept_lines_copied_by_the_kernel_are_the_bytes_read_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain JSONL file into a file: the kept runs go through ``os.copy_file_range``, and the
    output is byte for byte the one read and written through Python (where the kernel copy is
    refused: another filesystem), the last line given its newline both ways."""
    src = tmp_path / "in.jsonl"
    _kept_corpus(src)
    calls = []
    real = os.copy_file_range

    def counted(*args: int) -> int:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(os, "copy_file_range", counted)
    assert main(["dedup", str(src), "-o", str(tmp_path / "kernel.jsonl"), "-q"]) == 0
    assert len(calls) > 5  # runs between removed lines

    def refused(*args: int) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", refused)
    assert main(["dedup", str(src), "-o", str(tmp_path / "python.jsonl"), "-q"]) == 0
    kernel, python = (
        (tmp_path / "kernel.jsonl").read_bytes(),
        (tmp_path / "python.jsonl").read_bytes(),
    )
    assert kernel == python and kernel.endswith(b"}\n")
    assert 150 < kernel.count(b"\n") < 300


def _appended(src: Path, data: bytes) -> None:
    with src.open("ab") as fh:  # someone appends while pass 2 copies
        fh.write(b'\n{"id": "late", "text": "late"}')


def _forged(src: Path, data: bytes) -> None:
    """A line in the middle loses its first bytes, the size and modification time kept."""
    stamp = src.stat()
    cut = data.index(b"\n", len(data) // 2) + 1
    src.write_bytes(data[:cut] + data[cut + 5 :] + b"     ")
    os.utime(src, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))


@pytest.mark.parametrize("change", [_appended, _forged], ids=["appended", "same stamp"])
def test_an_input_changed_while_the_kernel_copies_it_is_one_error_line_and_no_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[Path, bytes], None],
) -> None:
    """Changed after the first run is copied: its stamp tells, and where the stamp was forged
    back, a line's first byte (as on the path that reads the lines); no output is left."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _kept_corpus(src)
    real, data = os.copy_file_range, src.read_bytes()

    def then_changed(*args: int) -> int:
        n = real(*args)
        monkeypatch.setattr(os, "copy_file_range", real)
        change(src, data)
        return n

    monkeypatch.setattr(os, "copy_file_range", then_changed)
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert "changed between the two passes" in err and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG])
def test_a_full_disk_met_by_the_kernel_copy_names_the_output_as_a_write_does(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: int,
) -> None:
    """The kernel's copy writes the output: a full disk (or quota, or file size limit) met there
    is the output's error, named as on the path that reads and writes, and no output is left."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _kept_corpus(src)

    def full(*args: int) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "copy_file_range", full)
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"cannot write {out}:" in err and len(err.splitlines()) == 1
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_an_io_error_in_the_kernel_copy_names_the_input_and_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """EIO from the kernel's copy can be the input's disk or the output's: one line naming
    both (not an unnamed "Input/output error"), and no output left."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _kept_corpus(src)
    copied: list[int] = []
    real = os.copy_file_range

    def failing(*args: int) -> int:
        if copied:  # the first range goes through: EIO is not the "no kernel copy here" case
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        copied.append(1)
        return real(*args)

    monkeypatch.setattr(os, "copy_file_range", failing)
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"cannot copy the kept lines of {src} into {out}:" in err and "I/O error" in err
    assert len(err.splitlines()) == 1
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_an_io_error_checking_the_copied_lines_names_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the copy, each kept line's first byte is read from the input: an EIO there is the
    input's, said in one line naming it."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _kept_corpus(src)
    real = os.pread

    def failing(fd: int, n: int, at: int) -> bytes:
        if n == 1:  # the kernel copy's one-byte checks
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(fd, n, at)

    monkeypatch.setattr(os, "pread", failing)
    assert main(["dedup", str(src), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert f"{src}: cannot read it (an I/O error on the device; check the disk)" in err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_short_kept_lines_are_read_and_written_not_copied_line_by_line_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One-line texts: checking each line's first byte by a system call would cost more than
    the kernel's copy saves, so the lines are read and written (the same bytes)."""
    src = tmp_path / "in.jsonl"
    _kept_corpus(src, words=(20, 60))
    calls: list[tuple[int, ...]] = []
    real = os.copy_file_range
    monkeypatch.setattr(os, "copy_file_range", lambda *a: calls.append(a) or real(*a))
    assert main(["dedup", str(src), "-o", str(tmp_path / "out.jsonl"), "-q"]) == 0
    assert calls == []


def test_kept_lines_written_to_standard_output_appending_to_a_file_follow_what_it_held(
    tmp_path: Path,
) -> None:
    """``-o - >> file``: standard output is written through its wrapper (the kernel's copy is
    not asked; it would refuse an appending file), the lines after what the file held."""
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _kept_corpus(src)
    assert main(["dedup", str(src), "-o", str(tmp_path / "whole.jsonl"), "-q"]) == 0
    out.write_bytes(b"before\n")
    with out.open("ab") as appended:
        proc = subprocess.run(
            [sys.executable, "-m", "neardup", "dedup", str(src), "-o", "-", "-q"],
            stdout=appended,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": SRC},
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == b"before\n" + (tmp_path / "whole.jsonl").read_bytes()
