"""Never destroy input, always one clean line: outputs, errors and hostile records (issue 12).

One section per class of failure: inputs destroyed, special files replaced, tracebacks instead
of one line, problems found only after the work, runs that are not all-or-nothing, library
inputs; then a hypothesis fuzz test over JSONL bytes. Generated data only.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup import Deduplicator, DedupParams, OutputError, ParamError
from neardup.cli import main
from neardup.io import open_source, output_group, plan_outputs
from neardup.io._targets import write_all
from neardup.testing.synth import near_duplicate_corpus, random_documents

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _records(n: int = 60, seed: int = 5) -> list[dict[str, object]]:
    base = random_documents(n // 2, seed=seed, words=(30, 80))
    texts = near_duplicate_corpus(base, n, 0.5, seed=seed + 1).texts
    return [{"id": f"doc{i}", "text": t} for i, t in enumerate(texts)]


def _write_jsonl(path: Path, n: int = 60) -> bytes:
    data = "".join(json.dumps(r) + "\n" for r in _records(n)).encode()
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        path.write_bytes(data)
    return path.read_bytes()


def _one_error_line(err: str) -> str:
    """The stderr of a failed run: exactly one line, the neardup error, no traceback."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("neardup: error: "), err
    assert "Traceback" not in err
    return lines[0]


def _leftovers(folder: Path) -> list[str]:
    """Hidden temporary files or folders a run left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@contextlib.contextmanager
def _tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A small tmpfs mounted at ``where`` (root only); skips the test with the reason if not."""
    where.mkdir()
    if not IS_ROOT:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


# --------------------------------------------------------------------- 1. inputs destroyed
@pytest.mark.parametrize(
    ("input_name", "option"),
    [
        ("in.jsonl", "-o"),
        ("in.jsonl.gz", "-o"),
        ("in.parquet", "-o"),
        ("in.jsonl", "--clusters"),
        ("in.jsonl", "--pairs"),
        ("in.jsonl", "--summary-json"),
    ],
)
@pytest.mark.parametrize("through", ["same name", "symlink", "hard link"])
def test_an_output_naming_the_input_is_refused_and_the_input_survives(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    input_name: str,
    option: str,
    through: str,
) -> None:
    src = tmp_path / input_name
    if input_name.endswith(".parquet"):
        pq.write_table(pa.Table.from_pylist(_records()), src)
    else:
        _write_jsonl(src)
    before = src.read_bytes()
    target = src
    if through == "symlink":
        target = tmp_path / ("link" + input_name[2:])
        target.symlink_to(src.name)
    elif through == "hard link":
        target = tmp_path / ("hard" + input_name[2:])
        os.link(src, target)
    args = ["dedup", str(src), option, str(target)]
    if option != "-o":
        args += ["-o", str(tmp_path / ("kept" + input_name[2:]))]
    assert main(args) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "destroy the input" in line and option in line
    assert src.read_bytes() == before
    assert not (tmp_path / ("kept" + input_name[2:])).exists()


def test_an_output_inside_an_input_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, rec in enumerate(_records(10)):
        (folder / f"{i}.txt").write_text(str(rec["text"]))
    before = (folder / "3.txt").read_bytes()
    args = ["dedup", str(folder), "-o", str(tmp_path / "kept"), "--pairs", str(folder / "3.txt")]
    assert main(args) == 1
    assert "destroy the input" in _one_error_line(capsys.readouterr().err)
    assert (folder / "3.txt").read_bytes() == before


@pytest.mark.parametrize(
    ("first", "second"),
    [("-o", "--clusters"), ("--clusters", "--pairs"), ("--pairs", "--summary-json")],
)
def test_two_outputs_naming_one_file_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    out = tmp_path / "out.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(out.name)  # a dangling link to the same new file
    assert main(["dedup", str(src), first, str(out), second, str(link)]) == 1
    assert "both write" in _one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_standard_output_twice_is_refused_in_a_subprocess(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    done = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "dedup", str(src), "-o", "-", "--clusters", "-"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "standard output" in _one_error_line(done.stderr)
    assert done.stdout == ""


def test_stdout_appending_to_the_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    before = _write_jsonl(src)
    with open(src, "ab") as append:
        done = subprocess.run(
            [sys.executable, "-m", "neardup.cli", "dedup", str(src), "-o", "-"],
            stdout=append,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 1
    assert "destroy the input" in _one_error_line(done.stderr)
    assert src.read_bytes() == before


# --------------------------------------------------------------------- 2. special files
def _device(path: Path, minor: int) -> Path:
    """A character device node like /dev/null (minor 3) or /dev/full (minor 7), made in a test
    folder so that a regression replaces a test file, never the machine's own device."""
    if not IS_ROOT:
        pytest.skip("making a device node needs root")
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        with open(path, "wb"):
            pass
    except OSError as exc:
        pytest.skip(f"cannot make or open a device node here: {exc}")
    return path


def test_a_device_output_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    null = _device(tmp_path / "null", 3)
    args = ["dedup", str(src), "-o", str(null), "--clusters", str(null), "--pairs", str(null)]
    assert main([*args, "-q"]) == 0
    assert stat.S_ISCHR(null.stat().st_mode)
    assert _leftovers(tmp_path) == []
    with open(null, "wb") as stdout:  # standard output is that same device: still allowed
        done = subprocess.run(
            [sys.executable, "-m", "neardup.cli", *args, "-q"],
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(null.stat().st_mode)


def test_a_full_device_is_reported_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    full = _device(tmp_path / "full", 7)
    assert main(["dedup", str(src), "-o", str(full)]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert str(full) in line and "disk is full" in line
    assert stat.S_ISCHR(full.stat().st_mode)


def test_a_fifo_output_is_written_in_place(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    fifo = tmp_path / "kept.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    expected = tmp_path / "kept.jsonl"
    assert main(["dedup", str(src), "-o", str(fifo), "-q"]) == 0
    reader.join(timeout=30)
    assert main(["dedup", str(src), "-o", str(expected), "-q"]) == 0
    assert got == [expected.read_bytes()]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_symlink_to_dev_stdout_stays_a_symlink_and_gets_the_output(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    link = tmp_path / "out.jsonl"
    link.symlink_to("/dev/stdout")
    for stdout in (subprocess.PIPE, open(tmp_path / "redirected", "wb")):  # noqa: SIM115
        done = subprocess.run(
            [sys.executable, "-m", "neardup.cli", "dedup", str(src), "-o", str(link), "-q"],
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
        assert done.returncode == 0, done.stderr
        assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    kept = done.stdout if done.stdout else (tmp_path / "redirected").read_bytes()
    assert kept and all(json.loads(line)["id"] for line in kept.splitlines())


@pytest.mark.parametrize("command", ["dedup", "decontaminate"])
def test_dev_stdout_redirected_to_a_file_gets_the_input_format(
    tmp_path: Path, command: str
) -> None:
    # its name says no format, and /dev/stdout then is a regular file: it was refused
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    extra = ["--against", str(src)] if command == "decontaminate" else []
    args = [command, str(src), *extra, "-o", "/dev/stdout", "-q"]
    with open(tmp_path / "redirected", "wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "neardup.cli", *args], stdout=out, stderr=subprocess.PIPE
        )
    assert done.returncode == 0, done.stderr
    kept = (tmp_path / "redirected").read_bytes()
    if command == "dedup":
        assert main(["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "-q"]) == 0
        assert kept == (tmp_path / "k.jsonl").read_bytes()
    assert all(json.loads(line)["id"] for line in kept.splitlines())


# --------------------------------------------------------------------- 3. one line, never a traceback
def test_an_unwritable_output_folder_is_one_line_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    if IS_ROOT:
        ctx: contextlib.AbstractContextManager[Path] = _tmpfs(tmp_path / "ro", "ro,size=64k")
    else:
        (tmp_path / "ro").mkdir()
        (tmp_path / "ro").chmod(0o555)
        ctx = contextlib.nullcontext(tmp_path / "ro")
    with ctx as folder:
        assert main(["dedup", str(src), "-o", str(folder / "kept.jsonl")]) == 1
        line = _one_error_line(capsys.readouterr().err)
        assert "kept.jsonl" in line and ("read-only" in line or "permission" in line)


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_new_file_whatever_its_permissions_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # /proc says writable to root: the run read and deduplicated everything, then failed
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "one"}\nnot json\n')  # reading it would stop at line 2
    assert main(["dedup", str(src), "-o", "/proc/kept.jsonl"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert line.startswith("neardup: error: cannot create /proc/kept.jsonl in folder /proc: ")
    assert not list(Path("/proc").glob(".neardup-probe-*"))


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "parquet", "text"])
def test_a_full_disk_is_one_line_and_leaves_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    records = _records(400)  # far more than the 16 KiB file system takes, even gzipped
    if kind == "parquet":
        src = tmp_path / "in.parquet"
        pq.write_table(pa.Table.from_pylist(records), src)
    elif kind == "text":
        src = tmp_path / "docs"
        src.mkdir()
        for i, rec in enumerate(records):
            (src / f"{i}.txt").write_text(str(rec["text"]))
    else:
        src = tmp_path / f"in.{kind}"
        _write_jsonl(src, 400)
    with _tmpfs(tmp_path / "small", "size=16k") as disk:
        old = disk / ("kept" if kind == "text" else f"kept.{kind}")
        if kind != "text":
            old.write_bytes(b"previous output\n")
        clusters = tmp_path / "clusters.jsonl"
        args = ["dedup", str(src), "--clusters", str(clusters), "-o", str(old)]
        assert main(args) == 1
        line = _one_error_line(capsys.readouterr().err)
        assert str(old) in line and "disk is full" in line
        if kind == "text":
            assert not old.exists()
        else:
            assert old.read_bytes() == b"previous output\n"  # untouched
        assert not clusters.exists()  # the other output does not appear alone
        assert _leftovers(disk) == [] and _leftovers(tmp_path) == []


def test_a_closed_standard_output_is_one_line_before_reading(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    for args in (["dedup", str(src), "-o", "-"], ["plan", "--threshold", "0.8"]):
        done = subprocess.run(
            [sys.executable, "-m", "neardup.cli", *args],
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: os.close(1),  # the test needs standard output closed
        )
        assert done.returncode == 1
        assert "standard output" in _one_error_line(done.stderr)


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_reader_closing_the_pipe_early_is_one_line(tmp_path: Path, unbuffered: str) -> None:
    # PYTHONUNBUFFERED makes standard output a raw stream that may take part of a write: the
    # rest must still be written (and fail here), not dropped with exit status 0.
    src = tmp_path / "in.jsonl"
    records = [{"id": i, "text": f"w{i} " + "x" * 2000} for i in range(600)]
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup.cli", "dedup", str(src), "-o", "-", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "broken pipe" in _one_error_line(err)


def test_ids_that_cannot_be_encoded_are_written_escaped(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    text = "the same few words over and over again"
    src.write_text(
        json.dumps({"id": "a\ud800", "text": text}) + "\n"
        + json.dumps({"id": "b\udcff", "text": text}) + "\n"
    )  # fmt: skip
    cl, pairs = tmp_path / "c.jsonl", tmp_path / "p.jsonl"
    assert main(["dedup", str(src), "--clusters", str(cl), "--pairs", str(pairs), "-q"]) == 0
    ids = [json.loads(line)["id"] for line in cl.read_text("utf-8").splitlines()]
    assert ids == ["a\ud800", "b\udcff"]
    pair = json.loads(pairs.read_text("utf-8"))
    assert (pair["id_a"], pair["id_b"]) == ("a\ud800", "b\udcff")


def test_file_names_that_are_not_utf8_are_written_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9.txt")  # Latin-1 bytes: not UTF-8
    try:
        (folder / name).write_text("one text written twice to two files")
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    (folder / "plain.txt").write_text("one text written twice to two files")
    cl = tmp_path / "c.jsonl"
    assert main(["dedup", str(folder), "-o", str(tmp_path / "kept"), "--clusters", str(cl)]) == 0
    ids = {json.loads(line)["id"] for line in cl.read_text("utf-8").splitlines()}
    assert str(folder / name) in ids
    assert os.fsencode(str(folder / name)) in {os.fsencode(i) for i in ids}


def test_a_pipe_input_is_read_like_standard_input(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    data = _write_jsonl(src)
    expected = tmp_path / "expected.jsonl"
    assert main(["dedup", str(src), "-o", str(expected), "-q"]) == 0
    for payload in (data, gzip.compress(data)):  # <(cat f) and <(gzip -c f)
        fifo = tmp_path / "63"
        os.mkfifo(fifo)
        writer = threading.Thread(target=fifo.write_bytes, args=(payload,), daemon=True)
        writer.start()
        out = tmp_path / "kept.jsonl"
        assert main(["dedup", str(fifo), "-o", str(out), "-q"]) == 0
        writer.join(timeout=30)
        assert out.read_bytes() == expected.read_bytes()
        fifo.unlink()


def test_a_stream_starting_like_gzip_is_read_again_as_the_lines_it_gave(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = json.dumps({"id": "a", "text": "some words to keep"}).encode()
    stdin = io.TextIOWrapper(io.BytesIO(b"\x1f\x8b\n" + record + b"\n"))  # no peek: not gunzipped
    out = tmp_path / "kept.jsonl"
    with mock.patch.object(sys, "stdin", stdin):
        assert main(["dedup", "-", "-o", str(out), "--on-error", "skip", "-q"]) == 0
    assert out.read_bytes() == record + b"\n"  # the spool is not taken for gzip in pass 2


def test_plan_plot_into_a_missing_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "curve.png"
    assert main(["plan", "--threshold", "0.8", "--plot", str(target)]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "does not exist" in line
    assert capsys.readouterr().out == ""  # refused before the plan is printed


def test_plan_plot_with_an_unknown_picture_type_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    assert main(["plan", "--threshold", "0.8", "--plot", str(tmp_path / "curve.xyz")]) == 1
    assert "picture type" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "curve.xyz").exists()


def _hostile_lines() -> list[bytes]:
    good = [json.dumps(r).encode() for r in _records(20)]
    deep = b'{"id": "deep", "text": "x", "n": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    digits = b'{"id": "big", "text": "x", "n": ' + b"9" * 20_000 + b"}"
    return [*good[:10], deep, digits, *good[10:]]


def test_hostile_records_are_skipped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "hostile.jsonl"
    src.write_bytes(b"\n".join(_hostile_lines()) + b"\n")
    out = tmp_path / "kept.jsonl"
    assert main(["dedup", str(src), "-o", str(out), "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    assert "skipped 2 problems (bad_json 2)" in err and "Traceback" not in err
    ids = {json.loads(line)["id"] for line in out.read_text().splitlines()}
    assert ids and not ids & {"deep", "big"}


@pytest.mark.parametrize(("index", "words"), [(10, "nested too deeply"), (11, "digits")])
def test_a_hostile_record_stops_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int, words: str
) -> None:
    src = tmp_path / "hostile.jsonl"
    lines = _hostile_lines()
    src.write_bytes(b"\n".join([*lines[:10], lines[index]]) + b"\n")
    assert main(["dedup", str(src), "-o", str(tmp_path / "kept.jsonl")]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "line 11" in line and words in line


# --------------------------------------------------------------------- 4. found before the work
@pytest.fixture
def no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading any input fail loudly: the error under test must come first."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the input was read before the problem was reported")

    monkeypatch.setattr("neardup.io._source.Source._pass1", refuse)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["-o", "{tmp}/missing/kept.jsonl"], "does not exist"),
        (["-o", "{tmp}/kept.jsonl", "--clusters", "{tmp}/missing/c.jsonl"], "does not exist"),
        (["-o", "{tmp}/kept.jsonl", "--max-bucket", "1"], "max_bucket"),
        (["-o", "{tmp}/kept.jsonl", "--max-perm", "0"], "max_t"),
        (["-o", "{tmp}/kept.jsonl", "--method", "simhash", "--qgram", "0"], "q"),
        (["-o", "{tmp}/kept.jsonl", "--keep", "longest", "--keep-field", "n"], "--keep-field"),
        (["-o", "{tmp}"], "is a folder"),
    ],
)
def test_problems_are_reported_before_any_input_is_read(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_reading: None,
    extra: list[str],
    words: str,
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    args = ["dedup", str(src), *(a.replace("{tmp}", str(tmp_path)) for a in extra)]
    assert main(args) == 1
    assert words in _one_error_line(capsys.readouterr().err)


def test_standard_output_for_a_folder_input_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_reading: None
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text")
    assert main(["dedup", str(tmp_path / "docs"), "-o", "-"]) == 1
    assert "folder" in _one_error_line(capsys.readouterr().err)


# --------------------------------------------------------------------- 5. all or nothing
def test_a_failing_output_leaves_no_output_and_no_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    old_kept = tmp_path / "kept.jsonl"
    old_kept.write_text("previous\n")

    def fail(*args: object, **kwargs: object) -> None:
        raise OutputError("cannot write pairs.jsonl: the disk is full")

    monkeypatch.setattr("neardup.run.write_pairs", fail)
    args = ["dedup", str(src), "-o", str(old_kept), "--clusters", str(tmp_path / "c.jsonl")]
    assert main([*args, "--pairs", str(tmp_path / "p.jsonl")]) == 1
    _one_error_line(capsys.readouterr().err)  # no summary printed before the error
    assert old_kept.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "kept.jsonl"]


def test_output_group_renames_every_file_or_none(tmp_path: Path) -> None:
    from neardup.io import atomic_write

    (tmp_path / "b").write_text("old b")
    with pytest.raises(RuntimeError), output_group():
        for name in ("a", "b"):
            with atomic_write(tmp_path / name, "w") as fh:
                fh.write("new " + name)
        assert not (tmp_path / "a").exists()  # complete, but held back until the group ends
        raise RuntimeError("a later step failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert (tmp_path / "b").read_text() == "old b"
    with output_group():
        for name in ("a", "b"):
            with atomic_write(tmp_path / name, "w") as fh:
                fh.write("new " + name)
    assert [(tmp_path / n).read_text() for n in "ab"] == ["new a", "new b"]


def test_a_failed_rename_undoes_the_renames_before_it(tmp_path: Path) -> None:
    from neardup.io import atomic_write

    (tmp_path / "a").write_text("old a")
    blocker = tmp_path / "z"
    with pytest.raises(OutputError), output_group():
        for name in ("a", "z"):
            with atomic_write(tmp_path / name, "w") as fh:
                fh.write("new " + name)
        blocker.mkdir()  # a folder appears where the second file goes: its rename fails
        (blocker / "inside").write_text("x")
    assert (tmp_path / "a").read_text() == "old a"
    assert _leftovers(tmp_path) == []


def test_a_symlinked_output_keeps_its_link_and_replaces_its_target(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    (tmp_path / "store").mkdir()
    target = tmp_path / "store" / "kept.jsonl"
    target.write_text("old\n")
    link = tmp_path / "kept.jsonl"
    link.symlink_to(target)
    assert main(["dedup", str(src), "-o", str(link), "-q"]) == 0
    assert link.is_symlink() and target.read_text() != "old\n"
    assert _leftovers(tmp_path / "store") == []


def test_a_rollback_without_hard_links_never_deletes_a_replaced_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neardup.io import atomic_write

    def no_links(*args: object) -> None:
        raise OSError("hard links are not supported here")

    monkeypatch.setattr("neardup.io._atomic.os.link", no_links)
    (tmp_path / "a").write_text("old a")
    with pytest.raises(OutputError), output_group():
        for name in ("a", "b", "z"):
            with atomic_write(tmp_path / name, "w") as fh:
                fh.write("new " + name)
        (tmp_path / "z").mkdir()  # the last rename fails
        (tmp_path / "z" / "inside").write_text("x")
    assert (tmp_path / "a").read_text() == "new a"  # cannot be undone, but never lost
    assert not (tmp_path / "b").exists()  # a new file is taken back
    assert _leftovers(tmp_path) == []


def test_plan_outputs_resolves_kinds_and_refuses_conflicts(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    plan = plan_outputs([src], {"-o": str(tmp_path / "k.jsonl"), "--pairs": None})
    assert plan["-o"] == (tmp_path / "k.jsonl").resolve() and "--pairs" not in plan
    with pytest.raises(ParamError, match="destroy the input"):
        plan_outputs([tmp_path], {"-o": str(src)})  # an input folder's file
    with pytest.raises(ParamError, match="both write"):
        plan_outputs([src], {"-o": "x.jsonl", "--pairs": "./x.jsonl"})


# --------------------------------------------------------------------- 6. library inputs
@pytest.mark.parametrize(("bad", "kind"), [(None, "NoneType"), (b"bytes", "bytes"), (7, "int")])
def test_a_non_string_text_is_a_type_error_naming_its_position(bad: object, kind: str) -> None:
    texts = ["first text here", "second text", bad, "fourth"]
    with pytest.raises(TypeError, match=rf"\[2\] is {kind}, not str"):
        Deduplicator().fit(texts)  # type: ignore[arg-type]
    dedup = Deduplicator().partial_fit(["a b c", "d e f"])
    with pytest.raises(TypeError, match=rf"\[1\] is {kind}, not str"):
        dedup.partial_fit(["x", bad])  # type: ignore[list-item]


@pytest.mark.parametrize("whole", ["a bare string of text", b"bytes"])
def test_a_bare_string_is_refused(whole: object) -> None:
    with pytest.raises(TypeError, match="must be a list of strings"):
        Deduplicator().fit(whole)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a list of strings"):
        Deduplicator().partial_fit(whole)  # type: ignore[arg-type]


def test_string_subclasses_are_texts() -> None:
    texts = np.array(["the cat sat on the mat", "the cat sat on the mat", "other"])
    assert Deduplicator().fit(list(texts)).kept_.tolist() == [True, False, True]


@pytest.mark.parametrize("size", [0, -1, 1.5, True])
def test_batch_size_must_be_a_positive_integer(size: object) -> None:
    with pytest.raises(ParamError, match="batch_size"):
        Deduplicator().fit(["a", "b"], batch_size=size)  # type: ignore[arg-type]


def test_threshold_one_is_accepted_and_finds_equal_shingle_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts = ["a b c d e f g h", "a b c d e f g h!", "a b c d e f g x"]
    dedup = Deduplicator(DedupParams(threshold=1.0)).fit(texts)
    assert dedup.kept_.tolist() == [True, False, True]
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    assert main(["dedup", str(src), "--threshold", "1", "-o", str(tmp_path / "k.jsonl")]) == 0


def test_library_sources_refuse_a_pipe_mixed_with_files(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    with pytest.raises(ParamError, match="only input"):
        open_source([fifo, src])


# --------------------------------------------------------------------- fuzz
_GOOD = [json.dumps(r).encode() for r in _records(12, seed=9)]
_LINES = st.one_of(
    st.sampled_from(_GOOD),
    st.binary(max_size=40),
    st.sampled_from(
        [
            b"",
            b"   ",
            b"null",
            b"[1, 2]",
            b'{"text": 5}',
            b'{"id": null, "text": "a"}',
            b'{"id": "x", "text": "dup id"}',
            b'{"id": "\\ud800", "text": "lone surrogate id and text \\udfff"}',
            b'{"id": "k", "text": "bom"}'.join([b"\xef\xbb\xbf", b""]),
            b'{"id": "bad utf8 \xff", "text": "t"}',
            b'{"id": ' + b"9" * 5000 + b', "text": "t"}',
            b'{"text": "x", "deep": ' + b"[" * 5000 + b"]" * 5000 + b"}",
            b'{"text": "NaN key", "n": NaN}',
            b'{"id": 1e999, "text": "float id"}',
        ]
    ),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(_LINES, max_size=12),
    on_error=st.sampled_from(["stop", "skip"]),
    keep_field=st.booleans(),
    via=st.sampled_from(["file", "gzip", "stdin"]),
)
def test_fuzz_any_jsonl_bytes_end_in_success_or_one_clean_line(
    capsys: pytest.CaptureFixture[str],
    lines: list[bytes],
    on_error: str,
    keep_field: bool,
    via: str,
) -> None:
    data = b"\n".join(lines)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        src = folder / ("in.jsonl.gz" if via == "gzip" else "in.jsonl")
        src.write_bytes(gzip.compress(data) if via == "gzip" else data)
        outs = [folder / "kept.jsonl", folder / "c.jsonl", folder / "p.jsonl"]
        args = ["dedup", "-" if via == "stdin" else str(src), "-o", str(outs[0])]
        args += ["--clusters", str(outs[1]), "--pairs", str(outs[2]), "--on-error", on_error]
        args += ["-q", "--batch-size", "3"]
        if keep_field:
            args += ["--keep-field", "n"]
        capsys.readouterr()
        stdin = io.TextIOWrapper(io.BytesIO(data))
        with mock.patch.object(sys, "stdin", stdin):
            code = main(args)
        err = capsys.readouterr().err
        assert code in (0, 1)
        if code == 1:
            _one_error_line(err)
            assert not any(p.exists() for p in outs)  # never a partial output
        else:
            assert "Traceback" not in err
            assert all(p.exists() for p in outs)
        assert _leftovers(folder) == []


# -- every command that writes: report, plan --sample, index query, dedup --index -------------


def _snapshot(paths: list[Path]) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


def _refused_once(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and message in err[0]


def test_report_refuses_to_overwrite_what_it_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    clusters = tmp_path / "clusters.jsonl"
    assert main(["dedup", str(src), "--clusters", str(clusters), "--quiet"]) == 0
    before = _snapshot([src, clusters])
    for victim in (src, clusters):
        args = ["report", str(src), "--clusters", str(clusters), "-o", str(victim)]
        _refused_once(capsys, args, "would destroy the input")
    assert _snapshot([src, clusters]) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clusters.jsonl", "in.jsonl"]


def test_plan_sample_refuses_a_plot_over_its_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "sample.png"  # a corpus whose name a careless --plot could hit
    _write_jsonl(src)
    before = _snapshot([src])
    args = ["plan", "--sample", str(src), "--format", "jsonl", "--threshold", "0.8"]
    _refused_once(capsys, [*args, "--plot", str(src)], "would destroy the input")
    assert _snapshot([src]) == before


def test_index_query_and_dedup_index_refuse_the_index_and_the_input_as_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    idx = tmp_path / "idx.db"
    assert main(["index", "create", str(idx)]) == 0
    assert main(["index", "add", str(idx), str(src)]) == 0
    capsys.readouterr()
    before = _snapshot([src, idx])
    for victim in (src, idx):
        _refused_once(
            capsys, ["index", "query", str(idx), str(src), "-o", str(victim)], "would destroy"
        )
        _refused_once(
            capsys, ["dedup", str(src), "--index", str(idx), "-o", str(victim)], "would destroy"
        )
        args = ["dedup", str(src), "--index", str(idx), "--summary-json", str(victim)]
        _refused_once(capsys, args, "would destroy")
    assert _snapshot([src, idx]) == before


def test_dedup_index_writes_the_kept_file_and_summary_together(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src)
    idx = tmp_path / "idx.db"
    assert main(["index", "create", str(idx)]) == 0
    kept, summary = tmp_path / "kept.jsonl", tmp_path / "summary.json"
    args = ["dedup", str(src), "--index", str(idx), "-o", str(kept), "--quiet"]
    assert main([*args, "--summary-json", str(summary)]) == 0
    assert json.loads(summary.read_text())["kept"] == len(kept.read_text().splitlines())
    # a summary that cannot be written leaves no kept file behind either
    kept.unlink()
    summary.unlink()
    missing = tmp_path / "no" / "summary.json"
    assert main([*args, "--summary-json", str(missing)]) == 1
    assert not kept.exists()


class _Grudging(io.RawIOBase):
    """A sink that takes at most 7 bytes a call and, every third call, none (would block)."""

    def __init__(self) -> None:
        super().__init__()
        self.got = bytearray()
        self.calls = 0

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return sys.__stderr__.fileno()  # always writable: select returns at once

    def write(self, data: object) -> int | None:  # type: ignore[override]
        self.calls += 1
        if self.calls % 3 == 0:
            return None
        piece = bytes(memoryview(data)[:7])  # type: ignore[arg-type]
        self.got += piece
        return len(piece)


def test_a_sink_that_takes_part_of_each_write_still_gets_every_byte() -> None:
    sink = _Grudging()
    data = bytes(range(256)) * 3
    assert write_all(sink, data, "the sink") == len(data)  # type: ignore[arg-type]
    assert bytes(sink.got) == data


def test_results_printed_to_a_redirected_text_stdout_arrive_whole() -> None:
    captured = io.StringIO()  # no binary buffer underneath: what redirect_stdout gives
    with contextlib.redirect_stdout(captured):
        assert main(["plan", "--threshold", "0.8"]) == 0
    assert "threshold" in captured.getvalue().lower() and captured.getvalue().endswith("\n")


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_an_id_field_no_record_has_is_refused_not_read_as_line_numbers(
    tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt --id-field named every record by its line, silently, in every output; the
    default field may be absent (records are then named by line), a named one may not."""
    rows = [{"id": f"d{i}", "text": f"document number {i} with a few words"} for i in range(6)]
    src = tmp_path / f"in{suffix}"
    if suffix == ".jsonl":
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(rows), src)
    else:
        src.write_text("id,text\n" + "".join(f"{r['id']},{r['text']}\n" for r in rows))
    out = tmp_path / f"k{suffix}"
    assert main(["dedup", str(src), "-o", str(out), "--id-field", "uid", "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "neardup: error: no record has the field 'uid' that --id-field names; check its name, "
        "or leave --id-field out to name records by their line (or row)"
    ]
    assert not out.exists()
    assert main(["dedup", str(src), "-o", str(out), "--id-field", "text", "-q"]) == 0
    assert main(["dedup", str(src), "-o", str(out), "--id-field", "id", "-q"]) == 0


def test_an_id_field_some_records_have_names_the_others_by_line(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "one two three"}\n{"uid": "b", "text": "four five six"}\n')
    clusters = tmp_path / "c.jsonl"
    args = ["dedup", str(src), "-o", str(tmp_path / "k.jsonl"), "--id-field", "uid", "-q"]
    assert main([*args, "--pairs", str(clusters)]) == 0


def test_one_file_given_twice_is_refused_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # its records met themselves: "id 'd0' is already used by b.jsonl line 1", or under
    # --on-error skip a run that dropped the whole second copy as duplicate ids
    folder = tmp_path / "d"
    folder.mkdir()
    src = folder / "in.jsonl"
    _write_jsonl(src)
    os.link(src, tmp_path / "link.jsonl")
    cases = [
        ([src, src], f"the input {src} is given twice"),
        ([folder, src], f"the input {src} is given twice"),
        (
            [src, tmp_path / "link.jsonl"],
            f"the inputs {src} and {tmp_path}/link.jsonl are one file",
        ),
    ]
    for inputs, said in cases:
        args = ["dedup", *map(str, inputs), "-o", str(tmp_path / "k.jsonl"), "--on-error", "skip"]
        assert main(args) == 1
        assert _one_error_line(capsys.readouterr().err) == (
            f"neardup: error: {said}; give each input once"
        )
    assert not (tmp_path / "k.jsonl").exists()


@pytest.mark.parametrize(
    ("params", "outputs", "read", "message"),
    [
        (None, "outputs", None, r"params must be a DedupParams, got NoneType"),
        ("params", None, None, r"outputs must be a DedupOutputs, got NoneType"),
        ("params", "outputs", {"key_field": "q"}, r"read must be a ReadOptions, got dict"),
    ],
)
def test_dedup_source_names_an_argument_of_the_wrong_type(
    tmp_path: Path, params: object, outputs: object, read: object, message: str
) -> None:
    from neardup.run import DedupOutputs, dedup_source

    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "the cat sat on the mat"}\n')
    params = DedupParams() if params == "params" else params
    outputs = DedupOutputs(kept=str(tmp_path / "out.jsonl")) if outputs == "outputs" else outputs
    with pytest.raises(ParamError, match=message):
        dedup_source(str(src), params, outputs, read)  # type: ignore[arg-type]
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("inputs", [None, 3, [None], ["in.jsonl", 3]])
def test_dedup_source_names_inputs_that_are_not_paths(inputs: object) -> None:
    # TypeError: 'NoneType' object is not iterable, from inside the reader
    from neardup.run import DedupOutputs, dedup_source

    with pytest.raises(ParamError, match=r"^inputs must be a path, '-' or a list of paths, got"):
        dedup_source(inputs, DedupParams(), DedupOutputs())  # type: ignore[arg-type]


def test_a_path_object_is_one_input_for_every_job_function(tmp_path: Path) -> None:
    # the readers took a Path, the job functions' output checks iterated it: TypeError
    from neardup.decontaminate_run import DecontaminateOutputs, decontaminate_source
    from neardup.run import DedupOutputs, dedup_source

    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": i, "text": f"words {i} a b c d"}) + "\n" for i in range(5))
    )
    kept = tmp_path / "kept.jsonl"
    done = dedup_source(src, DedupParams(), DedupOutputs(kept=str(kept)))
    assert done.summary["documents"] == 5 and kept.read_text() == src.read_text()
    assert dedup_source([src], DedupParams(), DedupOutputs()).summary["documents"] == 5
    summary = decontaminate_source(
        src, src, None, DecontaminateOutputs(summary_json=str(tmp_path / "s.json"))
    )
    assert summary["documents"] == 5 and summary["contaminated"] == 5
