"""JSONL read in blocks by a kernel: every line reads as the Python parser reads it (records,
ids, texts, problems and their line numbers), whatever the chunk and batch sizes; pass 2 by
byte spans writes what the line-by-line pass writes."""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup._kernels import jsonl as k
from neardup._kernels.ranges import gather_ranges
from neardup.errors import InputError
from neardup.io import Source, open_source
from neardup.io import _jsonl_blocks as blocks
from neardup.io._jsonl import parse_record
from neardup.io._report import RecordProblem
from neardup.params import ShingleParams
from neardup.text import Utf8Texts
from neardup.textbatch import TextBatch

from . import reference

# Values a record may hold: the awkward ones included (escapes, surrogates, NaN, nesting).
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_KEYS = st.sampled_from(["text", "id", "Text", "i\u0064", "t\u00e9xt", "meta", ""])


@st.composite
def jsonl_lines(draw: st.DrawFn) -> bytes:
    """One line: a JSON record (text and id usually present), maybe damaged, maybe odd."""
    fields = draw(st.lists(st.tuples(_KEYS, _values | st.text()), max_size=5))
    if draw(st.booleans()):
        fields.append(("text", draw(st.text())))
    if draw(st.booleans()):
        fields.append(("id", draw(st.text(max_size=6) | st.integers(-(2**66), 2**66))))
    body = ", ".join(
        json.dumps(key, ensure_ascii=draw(st.booleans()))
        + ": "
        + json.dumps(value, ensure_ascii=draw(st.booleans()))
        for key, value in fields
    )
    line = ("{" + body + "}").encode("utf-8", "surrogatepass")
    edit = draw(st.integers(0, 9))
    if edit == 1 and line:  # cut short
        line = line[: draw(st.integers(0, len(line) - 1))]
    elif edit == 2:  # a stray byte somewhere
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(st.binary(min_size=1, max_size=2)) + line[at:]
    elif edit == 3:
        line = draw(st.sampled_from([b"", b"  \t", b"\x0c", b"[1]", b"\xef\xbb\xbf" + line]))
    elif edit == 4:
        line = (
            draw(st.sampled_from([b" ", b"\r", b""]))
            + line
            + draw(st.sampled_from([b" ", b"\r", b"{}"]))
        )
    return line.replace(b"\n", b"")  # one line


@pytest.fixture(autouse=True, scope="module")
def _the_kernel_parses() -> object:
    """Blocks go to the kernel even while it is not in Numba's cache (a first run hands up to
    PYTHON_PARSE_BYTES to the Python parser instead of compiling it): the kernel is under test."""
    saved = blocks.PYTHON_PARSE_BYTES
    blocks.PYTHON_PARSE_BYTES = 0
    yield
    blocks.PYTHON_PARSE_BYTES = saved


def python_reading(lines: list[bytes]) -> list[tuple[int, object]]:
    """Each non-blank line as the Python parser reads it: (line number, (id, text) or kind)."""
    out: list[tuple[int, object]] = []
    for recno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rid, text, _ = parse_record(line + b"\n", "text", "id")
        except RecordProblem as p:
            out.append((recno, p.kind))
            continue
        out.append((recno, (rid, text)))
    return out


def block_reading(lines: list[bytes]) -> list[tuple[int, object]]:
    data = b"".join(line + b"\n" for line in lines)
    block, n_lines = blocks.parse_block(data, "text", "id", 1, 0)
    assert n_lines == len(lines)
    got: list[tuple[int, object]] = [
        (int(r), (i, t)) for r, i, t in zip(block.recnos, block.id_list(), block.texts, strict=True)
    ]
    got += [(recno, kind) for recno, kind, _, _ in block.problems]
    return sorted(got, key=lambda x: x[0])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(jsonl_lines(), max_size=6))
@example(
    [b'{"id": "a", "text": "x", "text": "last"}', b'{"id": -0, "text": "\\ud83d\\ude00\\ud800"}']
)
@example([b'{"text": "a", "id": 1.5}', b'{"text": NaN}', b'{"text": "b", "x": [NaN, -Infinity]}'])
@example([b'{"text": "a", "id": "\\udc00"}', b'{"id": "1", "id": 2, "text": ""}'])
def test_the_kernel_reads_every_line_as_the_python_parser(lines: list[bytes]) -> None:
    assert block_reading(lines) == python_reading(lines)


def test_an_integer_id_past_64_bits_is_its_digits_in_both_readers() -> None:
    """orjson reads such an integer as a float, which is no id: the standard library judges."""
    big = 123456789012345678901234567890
    lines = [b'{"id": %d, "text": "big"}' % big, b'{"id": -%d, "text": "neg"}' % big]
    want = [(1, (str(big), "big")), (2, (f"-{big}", "neg"))]
    assert python_reading(lines) == want
    assert block_reading(lines) == want


def test_the_kernel_itself_reads_ordinary_records() -> None:
    lines = [
        b'{"id": "a", "text": "plain"}',
        b'{"text": "caf\\u00e9 \\ud83d\\ude00 \xe4\xb8\xad", "id": 7, "tags": [1, {"x": null}]}',
        b"   ",
        b'{"text": "no id", "score": 1e-3, "ok": true}',
    ]
    buf = np.frombuffer(b"\n".join(lines), dtype=np.uint8)
    key = np.frombuffer(b"text", dtype=np.uint8)
    newlines = np.flatnonzero(buf == 0x0A)
    _, status, *_ = k.parse_lines(buf, newlines, key, np.frombuffer(b"id", dtype=np.uint8))
    assert status.tolist() == [k.RECORD, k.RECORD, k.BLANK, k.RECORD]
    assert block_reading(lines) == python_reading(lines)


@settings(deadline=None)
@given(st.lists(st.text(), max_size=8))
def test_utf8_texts_hold_the_strings_and_their_lengths(texts: list[str]) -> None:
    u = Utf8Texts.from_strings(texts)
    assert list(u) == texts and len(u) == len(texts)
    assert [u[i] for i in range(len(texts))] == texts
    assert u.lengths().tolist() == [len(t) for t in texts]
    assert list(u[1:3]) == texts[1:3] and list(u[::2]) == texts[::2]
    rows = np.arange(len(texts), dtype=np.int64)[::-1].copy()
    assert list(u.take(rows)) == texts[::-1]
    assert list(Utf8Texts.concat([u[:2], u[2:]])) == texts
    assert list(pickle.loads(pickle.dumps(u[1:]))) == texts[1:]
    plain = TextBatch(texts, ShingleParams())
    same = TextBatch(u, ShingleParams())
    assert np.array_equal(plain.canonical, same.canonical)
    assert np.array_equal(plain.lengths, same.lengths)


@settings(deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=12), st.data())
def test_utf8_texts_take_any_rows_in_any_order_with_repeats(
    texts: list[str], data: st.DataObject
) -> None:
    u = Utf8Texts.from_strings(["skipped", *texts])[1:]  # a view not starting at offset 0
    rows = data.draw(st.lists(st.integers(0, len(texts) - 1), max_size=20))
    took = u.take(np.asarray(rows, dtype=np.int64))
    assert list(took) == [texts[i] for i in rows]
    assert took.offsets[0] == 0 and took.nbytes == len(took.buf)


# ------------------------------------------------------------------ the Source, both paths
LINES = [
    b'{"id": "a", "text": "first doc"}\n',
    b"\n",
    b'{"id": "b", "text": "second \\u00e9"}\n',
    b"not json\n",
    b'{"id": "a", "text": "a repeated id"}\n',
    b'{"id": 5, "text": "integer id"}\n',
    b'{"text": "no id"}\n',
    b'{"id": "c", "text": 3}\n',
    b'{"id": "d", "text": "\\ud800 lone"}\n',
    b'   {"id": "e", "text": "spaces"}  \r\n',
    b'{"id": "f"}\n',
    b'{"id": "g", "text": "last, no newline"}',
]


def read_all(
    source: Source, batch_size: int
) -> tuple[list[str], list[str], dict[str, int], list[str]]:
    ids: list[str] = []
    texts: list[str] = []
    for batch in source.batches(batch_size):
        assert len(batch) <= batch_size
        ids += batch.ids
        texts += list(batch.texts)
    return ids, texts, dict(source.errors.counts), list(source.errors.examples)


@pytest.mark.parametrize("chunk", [16, 64, 1 << 20])
@pytest.mark.parametrize("batch_size", [1, 2, 5, 100])
@pytest.mark.parametrize("gz", [False, True])
def test_blocks_read_what_lines_read_and_write_the_same_kept_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, batch_size: int, gz: bool
) -> None:
    monkeypatch.setattr(blocks, "CHUNK", chunk)
    data = b"".join(LINES)
    src = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    src.write_bytes(gzip.compress(data) if gz else data)
    by_lines = open_source(io.BytesIO(data), on_error="skip")  # a stream is read line by line
    by_blocks = open_source(src, on_error="skip")
    want = read_all(by_lines, batch_size)
    got = read_all(by_blocks, batch_size)
    got[3][:] = [m.replace(str(src), "<stdin>") for m in got[3]]
    assert got == want
    assert want[0] == ["a", "b", "5", "7", "d", "e", "g"]
    assert by_blocks._entries[0].spans is not None  # the block path was taken
    keep = np.array([i % 2 == 0 for i in range(len(want[0]))])
    by_lines.write_kept(keep, tmp_path / "lines.jsonl")
    by_blocks.write_kept(keep, tmp_path / "blocks.jsonl")
    assert (tmp_path / "blocks.jsonl").read_bytes() == (tmp_path / "lines.jsonl").read_bytes()
    assert by_blocks.texts_at([1, 4, 6]) == [want[1][1], want[1][4], want[1][6]]


BOM = b"\xef\xbb\xbf"
BOM_LINES = [
    BOM + b'{"id": "a", "text": "the mark opens the file"}\n',
    b'{"id": "b", "text": "no mark"}\n',
    BOM + b'  {"text": "a mark mid-file, no id: named by its line"}\r\n',
    b'{"id": "d", "text": "last"}\n',
]


@pytest.mark.parametrize("gz", [False, True])
def test_a_byte_order_mark_is_never_copied_into_the_kept_lines(tmp_path: Path, gz: bool) -> None:
    data = b"".join(BOM_LINES)
    src = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    src.write_bytes(gzip.compress(data) if gz else data)
    keep = np.array([True, False, True, True])
    want = b"".join(x.removeprefix(BOM) for x, k in zip(BOM_LINES, keep, strict=True) if k)
    for name, source in (("lines", open_source(io.BytesIO(data))), ("blocks", open_source(src))):
        ids, texts, _, _ = read_all(source, 2)
        assert ids == ["a", "b", "3", "d"]
        source.write_kept(keep, tmp_path / f"{name}.jsonl")
        assert (tmp_path / f"{name}.jsonl").read_bytes() == want, name
        assert source.texts_at([0, 2]) == [texts[0], texts[2]]  # by span, checked first bytes
    assert source._entries[0].spans is not None  # the block path was taken


@pytest.mark.parametrize("bad", [3, 4, 7, 10])
def test_stop_names_the_same_first_bad_line(tmp_path: Path, bad: int) -> None:
    lines = [x for i, x in enumerate(LINES) if i in (0, 2, bad, 11)]
    data = b"".join(lines)
    src = tmp_path / "c.jsonl"
    src.write_bytes(data)
    with pytest.raises(InputError) as by_lines:
        read_all(open_source(io.BytesIO(data)), 2)
    with pytest.raises(InputError) as by_blocks:
        read_all(open_source(src), 2)
    assert str(by_blocks.value).replace(str(src), "<stdin>") == str(by_lines.value)
    assert "line 3" in str(by_blocks.value)


def test_a_repeated_id_and_a_bad_line_in_one_block_are_reported_in_line_order(
    tmp_path: Path,
) -> None:
    data = b'{"id": "x", "text": "a"}\n{"id": "x", "text": "b"}\n[]\n{"id": "y", "text": "c"}\n'
    src = tmp_path / "c.jsonl"
    src.write_bytes(data)
    lines = open_source(io.BytesIO(data), on_error="skip")
    got = open_source(src, on_error="skip")
    assert read_all(got, 10)[:3] == read_all(lines, 10)[:3]
    assert "line 2" in got.errors.examples[0] and "line 3" in got.errors.examples[1]


def test_a_changed_line_is_noticed_in_pass_two(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_bytes(b'{"text": "a"}\n{"text": "b"}\n')
    source = open_source(src)
    read_all(source, 10)
    stat = src.stat()  # same size and time: only the bytes tell
    src.write_bytes(b'{"text": "a"}\n"text": "bb"}\n')
    os.utime(src, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(InputError, match="changed between the two passes"):
        source.texts_at([1])


@st.composite
def _ranges(draw: st.DrawFn) -> tuple[bytes, list[tuple[int, int]]]:
    data = draw(st.text(max_size=40)).encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    pairs = list(zip(cuts[::2], cuts[1::2], strict=False))
    return data, pairs


@given(_ranges())
def test_gathering_ranges_copies_what_joining_their_slices_gives(
    case: tuple[bytes, list[tuple[int, int]]],
) -> None:
    data, pairs = case
    starts = np.array([a for a, _ in pairs], dtype=np.int64)
    ends = np.array([b for _, b in pairs], dtype=np.int64)
    out = np.full(len(data) + 3, 0xFF, dtype=np.uint8)
    n = gather_ranges(np.frombuffer(data, dtype=np.uint8), starts, ends, out)
    assert out[:n].tobytes() == reference.gather_ranges(data, pairs)
    assert (out[n:] == 0xFF).all()  # nothing written past the gathered bytes


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 30), min_size=1, max_size=25),
    keep_bits=st.integers(0, 2**25 - 1),
    chunk=st.integers(8, 120),
    skip=st.integers(0, 80),
    newline_at_end=st.booleans(),
)
def test_kept_lines_and_texts_read_again_are_the_same_whatever_the_chunk(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    keep_bits: int,
    chunk: int,
    skip: int,
    newline_at_end: bool,
) -> None:
    lines = [json.dumps({"text": "w" * n + f" {i}"}).encode() + b"\n" for i, n in enumerate(sizes)]
    data = b"".join(lines)
    if not newline_at_end:
        data = data[:-1]
    src = tmp_path_factory.mktemp("g") / "c.jsonl"
    src.write_bytes(data)
    keep = np.array([(keep_bits >> i) & 1 == 1 for i in range(len(lines))])
    source = open_source(src)
    read_all(source, 7)
    old = blocks.CHUNK, blocks.SKIP_BYTES
    # small chunks: lines span them; small skips: short gaps are seeked over too
    blocks.CHUNK, blocks.SKIP_BYTES = chunk, skip
    try:
        source.write_kept(keep, src.with_name("kept.jsonl"))
        wanted = np.flatnonzero(keep)
        texts = source.texts_at(wanted)
    finally:
        blocks.CHUNK, blocks.SKIP_BYTES = old
    expected = b"".join(line for line, k in zip(lines, keep, strict=True) if k)
    assert src.with_name("kept.jsonl").read_bytes() == expected
    assert texts == ["w" * sizes[i] + f" {i}" for i in wanted]


def test_texts_read_again_read_near_the_wanted_lines_not_the_file_before_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text(
        "".join(json.dumps({"text": f"line {i} " + "w" * 80}) + "\n" for i in range(3000))
    )
    source = open_source(src)
    read_all(source, 100)
    reads: list[int] = []
    real_open = blocks.open_jsonl

    def counting(entry: object) -> object:
        handle = real_open(entry)  # type: ignore[arg-type]
        real_readinto = handle.readinto  # type: ignore[attr-defined]

        def readinto(buffer: memoryview) -> int:
            n = real_readinto(buffer)
            reads.append(n)
            return n

        handle.readinto = readinto  # type: ignore[attr-defined]
        return handle

    monkeypatch.setattr(blocks, "open_jsonl", counting)
    wanted = [2500, 2501, 2990]  # lines of ~100 bytes: 2990 is 49 kB after 2501
    assert source.texts_at(wanted) == [f"line {i} " + "w" * 80 for i in wanted]
    assert len(reads) == 1 and sum(reads) < 60_000  # one read of the run; 250 kB come before
    reads.clear()
    monkeypatch.setattr(blocks, "SKIP_BYTES", 1000)  # the 49 kB gap is now seeked over
    assert source.texts_at(wanted) == [f"line {i} " + "w" * 80 for i in wanted]
    assert len(reads) == 2 and sum(reads) < 400
