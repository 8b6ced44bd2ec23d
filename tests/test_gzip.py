"""gzip goes through ISA-L: outputs any gzip reader reads, without a name or a time, the same
bytes for the same content; a damaged gzip input (whatever ISA-L or zlib raises) is one line."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.io._atomic import open_output
from neardup.io._gzip import GZIP_ERRORS, gzip_bytes, gzip_reader
from neardup.testing.synth import random_documents


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=5000))
def test_gzip_bytes_are_standard_gzip_without_a_name_or_a_time(data: bytes) -> None:
    packed = gzip_bytes(data)
    assert gzip.decompress(packed) == data
    assert packed[:4] == b"\x1f\x8b\x08\x00"  # deflate, no flags: no file name
    assert packed[4:8] == b"\x00\x00\x00\x00"  # no time
    assert gzip_bytes(data) == packed
    assert gzip_reader(io.BytesIO(packed + gzip.compress(data))).read() == data + data


def test_a_gz_output_is_gzip_with_the_same_bytes_every_time(tmp_path: Path) -> None:
    text = "".join(f'{{"id": "{i}", "text": "naïve {i}"}}\n' for i in range(5000)).encode()
    outs = [tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"]
    for out in outs:
        with open_output(out) as handle:
            handle.write(text)
    assert gzip.decompress(outs[0].read_bytes()) == text
    assert outs[0].read_bytes() == outs[1].read_bytes()


def _damaged(data: bytes) -> bytes:
    """``data`` gzipped, then one byte of its deflate stream changed so that decompressing it
    fails inside the stream (not at its end)."""
    packed = bytearray(gzip.compress(data))
    for at in range(len(packed) // 3, len(packed) - 64):
        trial = bytearray(packed)
        trial[at] ^= 0xFF
        try:
            gzip_reader(io.BytesIO(bytes(trial))).read()
        except GZIP_ERRORS:
            return bytes(trial)
        except (OSError, EOFError):
            continue
    raise AssertionError("no single changed byte breaks the stream")


def test_a_gzip_input_damaged_mid_stream_is_one_line_or_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = random_documents(3000, seed=21, words=(5, 30))
    lines = "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts))
    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(_damaged(lines.encode()))
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(src), "-o", str(out)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    # Bytes decoded between the damage and zlib's noticing it may make a line that is no
    # JSON, named first (gzip(1) and Python's gzip give them out too).
    assert len(err) == 1 and "in.jsonl.gz" in err[0]
    assert "reading failed" in err[0] or "not valid JSON" in err[0]
    assert not out.exists()
    summary = tmp_path / "summary.json"
    args = ["--on-error", "skip", "--summary-json", str(summary), "-q"]
    assert main(["dedup", str(src), "-o", str(out), *args]) == 0
    assert json.loads(summary.read_text())["skipped_records"] >= 1  # the unreadable rest
    kept = out.read_text().splitlines()
    assert 0 < len(kept) < len(texts)


def _gzip_lines(tmp_path: Path, n: int) -> tuple[bytes, list[str]]:
    texts = random_documents(n, seed=5, words=(5, 30))
    lines = "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts))
    return gzip.compress(lines.encode()), [str(i) for i in range(n)]


def _skip_run(tmp_path: Path, data: bytes) -> tuple[list[str], dict[str, object]]:
    """Kept ids and summary of ``dedup --on-error skip`` over ``data`` as a .jsonl.gz file."""
    src, out, summary = tmp_path / "in.jsonl.gz", tmp_path / "kept.jsonl", tmp_path / "s.json"
    src.write_bytes(data)
    args = ["--on-error", "skip", "--summary-json", str(summary), "-q", "--threshold", "0.99"]
    assert main(["dedup", str(src), "-o", str(out), *args]) == 0
    kept = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    return kept, json.loads(summary.read_text())


def test_a_gzip_input_with_bytes_after_its_end_loses_no_line_before_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packed, ids = _gzip_lines(tmp_path, 600)
    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(packed + b"garbage after the end")
    assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--threshold", "0.99"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reading failed after line 600 (Not a gzipped file" in err[0]
    kept, summary = _skip_run(tmp_path, packed + b"garbage after the end")
    assert kept == ids and summary["skipped_records"] == 1


def test_a_gzip_input_cut_short_gives_every_line_it_holds_whole(tmp_path: Path) -> None:
    packed, ids = _gzip_lines(tmp_path, 2000)
    for cut in (len(packed) // 4, len(packed) // 2, len(packed) - 5):
        whole = zlib.decompressobj(31).decompress(packed[:cut]).count(b"\n")
        kept, summary = _skip_run(tmp_path, packed[:cut])
        assert kept == ids[:whole] and summary["skipped_records"] == 1


def test_gzip_members_zero_padding_and_empty_members_read_whole(tmp_path: Path) -> None:
    packed, ids = _gzip_lines(tmp_path, 300)
    data = gzip.decompress(packed)
    cut = len(data) // 3
    joined = gzip.compress(data[:cut]) + gzip.compress(b"") + b"\0\0" + gzip.compress(data[cut:])
    assert gzip_reader(io.BytesIO(joined + b"\0" * 9)).read() == data
    kept, summary = _skip_run(tmp_path, joined)
    assert kept == ids and summary["skipped_records"] == 0


@settings(max_examples=30, deadline=None)
@given(
    data=st.binary(max_size=300_000),
    members=st.integers(1, 4),
    reads=st.lists(st.integers(0, 200_000), min_size=1, max_size=20),
)
def test_gzip_reader_seeks_and_reads_as_the_bytes_say(
    data: bytes, members: int, reads: list[int]
) -> None:
    """Forward and backward seeks (pass 2 reads kept spans by seeking) and reads of any size."""
    step = len(data) // members + 1
    packed = b"".join(gzip.compress(data[i : i + step]) for i in range(0, len(data), step))
    handle = gzip_reader(io.BytesIO(packed or gzip.compress(b"")))
    for i, n in enumerate(reads):
        at = (n * 7919) % (len(data) + 1) if i % 2 else handle.tell()
        assert handle.seek(at) == at
        assert handle.read(n) == data[at : at + n]
        assert handle.tell() == min(at + n, len(data))
