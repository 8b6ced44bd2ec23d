"""gzip goes through ISA-L: outputs any gzip reader reads, without a name or a time, the same
bytes for the same content; a damaged gzip input (whatever ISA-L or zlib raises) is one line."""

from __future__ import annotations

import gzip
import io
import json
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
    assert len(err) == 1 and "in.jsonl.gz" in err[0] and "reading failed" in err[0]
    assert not out.exists()
    summary = tmp_path / "summary.json"
    args = ["--on-error", "skip", "--summary-json", str(summary), "-q"]
    assert main(["dedup", str(src), "-o", str(out), *args]) == 0
    assert json.loads(summary.read_text())["skipped_records"] == 1  # the unreadable rest
    kept = out.read_text().splitlines()
    assert 0 < len(kept) < len(texts)
