"""Start-up: help, bad arguments and unreadable inputs never import Numba or pyarrow, a small
JSONL run never imports pyarrow (each is a tenth of a second or more before any work), and only
the command's own process skips the final garbage collection."""

from __future__ import annotations

import gc
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "numba",
    "llvmlite",
    "pyarrow",
    "pyarrow.compute",
    "pyarrow.parquet",
    "scipy",
    "scipy.linalg",
)

# Runs the CLI in a fresh interpreter, as its own process (``main()`` reads sys.argv), and
# prints which heavy modules it imported (a module marked absent, None, is not imported), as
# the process exits (a failed command ends its process at once, after its exit functions).
_PROBE = """
import atexit, json, sys
from neardup.cli import main
sys.argv = ["neardup", *sys.argv[1:]]
def report():
    heavy = sorted(m for m in {heavy!r} if sys.modules.get(m) is not None)
    print(json.dumps({{"heavy": heavy}}))
atexit.register(report)
sys.exit(main())
"""


def _heavy_imports(args: list[str], cwd: Path) -> tuple[object, list[str]]:
    """(exit status, heavy modules imported) of ``neardup ARGS`` in a new interpreter."""
    code = _PROBE.format(heavy=HEAVY)
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return proc.returncode, result["heavy"]


def _corpus(path: Path, n: int = 10) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"d{i}", "text": f"document {i % 4} of a small corpus"}))
            fh.write("\n")
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["dedup", "--help"],
        ["index", "--help"],
        ["dedup", "missing.jsonl", "-o", "kept.jsonl"],  # no such input
        ["dedup", "in.jsonl", "-o", "kept.jsonl", "--threshold", "2"],  # bad parameter
        ["dedup", "in.jsonl", "-o", "kept.jsonl", "--no-such-option"],  # bad command line
        ["dedup", "in.jsonl", "-o", "in.jsonl"],  # output would overwrite the input
    ],
)
def test_help_and_errors_import_neither_numba_nor_pyarrow(tmp_path: Path, args: list[str]) -> None:
    _corpus(tmp_path / "in.jsonl")
    code, heavy = _heavy_imports(args, tmp_path)
    assert code in (0, 1, 2)
    assert heavy == []
    assert not (tmp_path / "kept.jsonl").exists()


def test_a_small_default_run_interprets_its_kernels_and_imports_neither(tmp_path: Path) -> None:
    """Loading Numba and the compiled kernels (about 0.4 s) costs more than a small run's work
    interpreted; tests/test_interpreted.py proves the outputs the same."""
    words = [
        "a",
        "text",
        "of",
        "some",
        "length",
        "about",
        "nothing",
        "in",
        "particular",
        "that",
        "goes",
        "on",
    ]
    with (tmp_path / "in.jsonl").open("w") as fh:
        for i in range(10):
            text = " ".join(f"{words[(i % 4 + j) % len(words)]}{j}" for j in range(60))
            fh.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")
    code, heavy = _heavy_imports(["dedup", "in.jsonl", "-o", "kept.jsonl", "--quiet"], tmp_path)
    assert (code, heavy) == (0, [])
    assert len((tmp_path / "kept.jsonl").read_text().splitlines()) == 4


@pytest.mark.parametrize(
    "extra",
    [
        ["--tokens", "char"],  # a method that costs more interpreted
        ["--method", "simhash"],
        ["--big"],  # more text than INTERPRET_BYTES
        ["--gzip"],  # compressed: its size says little of its text
        ["--env"],  # NEARDUP_KERNELS=numba chooses
        [],  # texts of six words: compiled, sketching them takes long interpreted
    ],
)
def test_other_runs_import_numba_but_not_pyarrow_or_scipy_linalg(
    tmp_path: Path, extra: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nor scipy.linalg, which Numba's start imports (0.13-0.19 s) when SciPy is installed,
    only to probe for a BLAS no kernel of neardup calls."""
    from neardup.cli._startup import INTERPRET_BYTES

    name = "in.jsonl"
    n = 10
    if extra == ["--big"]:
        n = INTERPRET_BYTES // 40 + 1
    _corpus(tmp_path / name, n)
    if extra == ["--gzip"]:
        data = (tmp_path / name).read_bytes()
        name = "in.jsonl.gz"
        (tmp_path / name).write_bytes(gzip.compress(data))
    if extra == ["--env"]:
        monkeypatch.setenv("NEARDUP_KERNELS", "numba")
    args = [a for a in extra if a not in ("--big", "--gzip", "--env")]
    code, heavy = _heavy_imports(["dedup", name, "-o", "kept.jsonl", "--quiet", *args], tmp_path)
    assert code == 0
    assert "numba" in heavy and not any(m.startswith("pyarrow") for m in heavy)
    assert "scipy.linalg" not in heavy
    assert (tmp_path / "kept.jsonl").stat().st_size > 0


def test_main_called_with_arguments_leaves_garbage_collection_alone(tmp_path: Path) -> None:
    from neardup.cli import main

    src = _corpus(tmp_path / "in.jsonl")
    frozen = gc.get_freeze_count()
    assert main(["dedup", str(src), "-o", str(tmp_path / "kept.jsonl"), "--quiet"]) == 0
    assert gc.get_freeze_count() == frozen


def test_the_command_process_skips_the_final_collection(tmp_path: Path) -> None:
    _corpus(tmp_path / "in.jsonl")
    code = (
        "import gc, sys\n"
        "from neardup.cli import main\n"
        "sys.argv = ['neardup', 'dedup', 'in.jsonl', '-o', 'kept.jsonl', '--quiet']\n"
        "code = main()\n"
        "print(code, gc.get_freeze_count() > 0)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.stdout.split() == ["0", "True"]


def test_a_small_run_too_slow_interpreted_restarts_compiled_and_writes_once(tmp_path: Path) -> None:
    """Texts of six words (padded with spaces to pass the command's guess) have two shingles:
    with sketches of 1,280 values (past the first-hit table's reach) each densifies by some
    800,000 probes, seconds for 20 documents interpreted. The command starts again compiled
    (its environment then says so) before writing anything, so standard output gets the kept
    records once."""
    pad = " " * 50
    lines = [
        json.dumps({"id": f"d{i}", "text": f"alpha{i} beta{i} gamma delta{pad}epsilon zeta{i % 3}"})
        for i in range(20)
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    code = (
        "import atexit, os, sys\n"
        "atexit.register(lambda: sys.stderr.write(os.environ.get('NEARDUP_KERNELS', '-')))\n"
        "from neardup.cli import main\n"
        "sys.argv = ['neardup', *sys.argv[1:]]\n"
        "sys.exit(main())\n"
    )
    args = [
        "dedup",
        "in.jsonl",
        "-o",
        "-",
        "--quiet",
        "--threshold",
        "0.3",
        "--features",
        "160,8,2",
    ]
    env = {k: v for k, v in os.environ.items() if k != "NEARDUP_KERNELS"}
    runs = {}
    for kernels in ("", "numba"):
        proc = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=tmp_path,
            env={**env, "NEARDUP_KERNELS": kernels} if kernels else env,
            capture_output=True,
            timeout=300,
        )
        runs[kernels] = (proc.returncode, proc.stdout, proc.stderr)
    assert runs[""][0] == 0 and runs[""][2] == b"numba"  # restarted, and said nothing else
    assert runs[""] == runs["numba"]
    assert len(runs[""][1].splitlines()) == 20


def test_an_unknown_kernels_mode_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    _corpus(tmp_path / "in.jsonl")
    proc = subprocess.run(
        [sys.executable, "-m", "neardup.cli", "dedup", "in.jsonl", "-o", "kept.jsonl"],
        cwd=tmp_path,
        env={**os.environ, "NEARDUP_KERNELS": "fast"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "neardup: error: NEARDUP_KERNELS='fast': set it to 'numba' (the default) or 'python'"
    ]
    assert not (tmp_path / "kept.jsonl").exists()


def test_a_restart_that_cannot_start_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from neardup.cli import _startup

    def refuse(*args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(_startup.os, "execve", refuse)
    assert _startup.restart_compiled() == 1
    assert capsys.readouterr().err.splitlines() == [
        "neardup: error: this small run was slow interpreted and could not start again compiled "
        "(Permission denied); run it with NEARDUP_KERNELS=numba"
    ]


def test_a_failed_command_ends_at_once_after_its_exit_functions_and_flushed_output() -> None:
    # a failed command skips the interpreter's teardown, where pyarrow's busy CSV threads
    # aborted the process now and then (exit status 134 after the one-line error, not 1);
    # its exit functions (temporary files) still run and its output is still flushed
    code = (
        "import atexit, sys\n"
        "from neardup.cli._startup import exit_at_once\n"
        "atexit.register(lambda: print('exit functions ran'))\n"
        "sys.stdout.write('unflushed ')\n"
        "exit_at_once(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stdout == "unflushed exit functions ran\n"
