"""Hostile input (issue 28): a record-size limit enforced while reading, before a record is
held, in every format; decompression bombs bounded; a WARC cut anywhere is reported.

Bombs are generated streamed (gzip of zeros), never written out whole. Memory is checked in
a child process through its peak RSS against what holding the bomb would need."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup.cli import main
from neardup.errors import InputError
from neardup.io import _jsonl_blocks as blocks
from neardup.io import open_source
from neardup.io._report import size_text
from neardup.io._warc import WarcDoc, WarcSkip, iter_warc


def _line(i: int, size: int) -> bytes:
    """A JSONL record of exactly ``size`` bytes (newline not counted; at least its frame),
    with words of its own (so no two records resemble each other) and a non-ASCII letter."""
    head = f'{{"id": "r{i}", "text": "é'
    body = max(0, size - len(head.encode()) - 2)
    words = " ".join(f"r{i}w{j}" for j in range(body // 4 + 1))[:body]
    return (head + words + '"}').encode() + b"\n"


def _read(source_input: object, limit: int, batch: int = 3) -> tuple[list[str], dict[str, int]]:
    with open_source(source_input, on_error="skip", max_record_size=limit) as source:  # type: ignore[arg-type]
        ids = [rid for b in source.batches(batch) for rid in b.ids]
        return ids, dict(source.errors.counts)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(20, 300), min_size=1, max_size=12),
    limit=st.integers(20, 260),
    chunk=st.integers(1, 400),
    gz=st.booleans(),
    newline_at_end=st.booleans(),
)
def test_long_lines_are_skipped_alike_in_blocks_and_lines_whatever_the_chunk(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    limit: int,
    chunk: int,
    gz: bool,
    newline_at_end: bool,
) -> None:
    data = b"".join(_line(i, n) for i, n in enumerate(sizes))
    if not newline_at_end:
        data = data[:-1]
    lengths = [len(x) for x in data.split(b"\n") if x]
    want = [f"r{i}" for i, n in enumerate(lengths) if n <= limit]
    src = tmp_path_factory.mktemp("l") / ("in.jsonl.gz" if gz else "in.jsonl")
    src.write_bytes(gzip.compress(data) if gz else data)
    old = blocks.CHUNK
    blocks.CHUNK = chunk
    try:
        ids, counts = _read(src, limit)
        with open_source(src, on_error="skip", max_record_size=limit) as source:
            list(source.batches(2))
            out = src.with_name("kept.jsonl")
            source.write_kept(np.ones(len(want), dtype=bool), out)
    finally:
        blocks.CHUNK = old
    by_lines = _read(io.BytesIO(data), limit)
    assert ids == want == by_lines[0]
    assert (
        counts
        == by_lines[1]
        == ({"too_large": len(lengths) - len(want)} if len(want) < len(lengths) else {})
    )
    kept = [x for x in data.split(b"\n") if x and len(x) <= limit]
    assert out.read_bytes() == b"".join(x + b"\n" for x in kept)


@pytest.mark.parametrize("stream", [False, True])
def test_stop_names_file_line_and_limit_of_an_over_long_line(tmp_path: Path, stream: bool) -> None:
    data = _line(0, 50) + _line(1, 5000) + _line(2, 50)
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    with (
        pytest.raises(InputError) as err,
        open_source(io.BytesIO(data) if stream else src, max_record_size=1000) as source,
    ):
        list(source.batches(10))
    message = str(err.value)
    assert "line 2: the record is" in message and "--max-record-size" in message
    assert "1000 bytes" in message or size_text(1000) in message


def _zeros_gz(path: Path, size: int, prefix: bytes = b"") -> None:
    """``prefix`` then ``size`` zero bytes, gzipped, written in pieces (never held whole)."""
    piece = bytes(8 << 20)
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(prefix)
        left = size
        while left > 0:
            out.write(piece[: min(left, len(piece))])
            left -= len(piece)


def _peak_rss_mb_of(cmd: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``cmd`` in a child that reports its own peak RSS (MB) on the last line of stdout."""
    code = (
        "import resource, subprocess, sys; "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stderr.write(p.stderr); sys.stdout.write(p.stdout); "
        "print(); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024); "
        "sys.exit(p.returncode)"
    )
    done = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    return done, float(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("on_error", ["stop", "skip"])
def test_a_decompression_bomb_is_refused_or_skipped_in_bounded_memory(
    tmp_path: Path, on_error: str
) -> None:
    bomb = tmp_path / "bomb.jsonl.gz"
    good = b"".join(_line(i, 80) for i in range(3))
    _zeros_gz(bomb, 512 << 20, prefix=good)  # 512 MiB of zeros after three good lines
    out = tmp_path / "kept.jsonl"
    cmd = [sys.executable, "-m", "neardup", "dedup", str(bomb), "-o", str(out)]
    cmd += ["--on-error", on_error, "--max-record-size", "1M"]
    done, peak = _peak_rss_mb_of(cmd)
    assert "Traceback" not in done.stderr
    assert peak < 500, peak  # holding the bomb would take more than 512 MiB
    if on_error == "stop":
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "line 4: the record is longer than 1 MiB" in lines[0], lines
        assert not out.exists()
    else:
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == good
        assert "too_large 1" in done.stderr and "512 MiB" in done.stderr


def test_text_and_parquet_records_over_the_limit_are_bad_records(tmp_path: Path) -> None:
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("small text one")
    (folder / "b.txt").write_text("big " * 1000)
    ids, counts = _read(folder, 1000)
    assert [Path(i).name for i in ids] == ["a.txt"] and counts == {"too_large": 1}
    table = pa.table({"id": ["p0", "p1", "p2"], "text": ["tiny", "big " * 1000, "tiny too"]})
    pq.write_table(table, tmp_path / "t.parquet")
    ids, counts = _read(tmp_path / "t.parquet", 1000)
    assert ids == ["p0", "p2"] and counts == {"too_large": 1}
    with (
        pytest.raises(InputError, match=r"row 2: the record is 3\.9 KiB"),
        open_source(tmp_path / "t.parquet", max_record_size=1000) as source,
    ):
        list(source.batches(10))


def test_a_file_that_is_one_record_is_named_alone_not_by_a_line(tmp_path: Path) -> None:
    """An HTML or text file is one record: "a.html line 1" named a line the file has not."""
    pytest.importorskip("resiliparse")
    for name in ("a.html", "a.txt"):
        (tmp_path / name).write_text("<html><body><p>" + "big " * 400 + "</p></body></html>")
        with (
            pytest.raises(InputError, match=rf"/{name}: the record is 1\.6 KiB"),
            open_source(tmp_path / name, max_record_size=1000) as source,
        ):
            list(source.batches(10))


def test_a_bad_max_record_size_is_one_line_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(_line(0, 50))
    out = tmp_path / "o.jsonl"
    for value, says in (("lots", "a size must look like"), ("0", "max_record_size")):
        assert main(["dedup", str(src), "-o", str(out), "--max-record-size", value]) != 0
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert not out.exists()


# -- WARC -----------------------------------------------------------------------------------


def _warc(tmp_path: Path, gz: bool) -> bytes:
    pytest.importorskip("warcio")
    pytest.importorskip("fastwarc")
    from neardup.testing.web import random_pages, write_warc

    path = tmp_path / ("w.warc.gz" if gz else "w.warc")
    write_warc(path, random_pages(3, words=(30, 50)), gzip=gz, extras=True)
    return path.read_bytes()


def _boundaries(data: bytes, gz: bool) -> set[int]:
    """Where a file may end and still be whole: after a gzip member, before a WARC record."""
    if not gz:
        return {i for i in range(len(data)) if data.startswith(b"WARC/1.", i)} | {len(data)}
    ends, pos = set(), 0
    while pos < len(data):
        d = zlib.decompressobj(31)
        d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
        ends.add(pos)
    return ends


def _outcome(data: bytes) -> str:
    try:
        for item in iter_warc(io.BytesIO(data), 1 << 26):
            if isinstance(item, WarcSkip) and item.kind == "bad_record":
                return "reported"
    except (OSError, EOFError, zlib.error):
        return "reported"
    return "silent"


@pytest.mark.parametrize("gz", [True, False])
def test_a_warc_cut_anywhere_but_between_records_is_reported(tmp_path: Path, gz: bool) -> None:
    data = _warc(tmp_path, gz)
    whole = _boundaries(data, gz)
    silent = [
        cut for cut in range(1, len(data)) if cut not in whole and _outcome(data[:cut]) == "silent"
    ]
    assert silent == []
    assert _outcome(data) == "silent"  # the whole file reads without a problem


@pytest.mark.parametrize("on_error", ["stop", "skip"])
def test_a_warc_cut_in_a_member_header_stops_or_is_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], on_error: str
) -> None:
    data = _warc(tmp_path, gz=True)
    first = min(_boundaries(data, True))  # the end of the first member (a warcinfo record)
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: first + 5])  # five bytes into the second member's gzip header
    out = tmp_path / "kept.jsonl"
    code = main(["dedup", str(cut), "-o", str(out), "--on-error", on_error])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if on_error == "stop":
        assert code != 0 and "reading failed after record 1" in err
    else:  # the only record with a document was the cut one: nothing is written
        assert code == 1 and "every record of the input was skipped" in err
        assert "unreadable 1" in err and not out.exists()


def test_a_warc_record_or_body_over_the_limit_is_skipped_unread(tmp_path: Path) -> None:
    data = _warc(tmp_path, gz=False)
    docs = [x for x in iter_warc(io.BytesIO(data), 1 << 26) if isinstance(x, WarcDoc)]
    assert len(docs) == 3
    items = list(iter_warc(io.BytesIO(data), 100))
    assert not any(isinstance(x, WarcDoc) for x in items)
    assert sum(isinstance(x, WarcSkip) and x.kind == "too_large" for x in items) >= 3
    from neardup.io._warc import _decode_body, _TooLarge

    bomb = gzip.compress(bytes(50 << 20))  # 50 MiB of zeros in a gzip-encoded HTTP body
    with pytest.raises(_TooLarge):
        _decode_body(bomb, {"Content-Encoding": "gzip"}, 1 << 20)
    assert len(_decode_body(gzip.compress(b"<p>hi</p>"), {"Content-Encoding": "gzip"}, 100)) == 9
