"""What the command's own process does to start and stop fast: every trick in one place.

A small ``neardup dedup`` would spend most of its time starting: importing NumPy and Numba,
initialising Numba and loading the compiled kernels take longer than its work.
When the process is the command (``main()`` without arguments, as the ``neardup`` script
calls it; a library caller of ``main(argv)`` is never touched), it:

1. marks ``scipy.linalg`` absent before Numba starts (``skip_numba_blas_probe``);
2. runs the kernels interpreted, the same source with the same results, for a small input
   (``interpret_small_run``, limits ``INTERPRET_*``), with a budget of ``INTERPRET_SECONDS``;
3. if that run outlives its budget, starts again compiled, by ``execve`` with
   ``NEARDUP_KERNELS=numba``, before anything is written (``restart_compiled``);
4. freezes its objects at exit so the interpreter's shutdown does not collect them
   (``skip_final_collection``).

Measurements behind each: the start-up commands in benchmarks/README.md; ``tests/test_startup.py``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import math
import os
import stat
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from .._kernels import _jit
from ..io._jsonl_blocks import PYTHON_PARSE_BYTES
from .output import fail, info

if TYPE_CHECKING:
    pass

#: Input size (bytes of regular, uncompressed files) and lines up to which a command's own
#: process runs its kernels interpreted: up to this much text, interpreting costs less than
#: loading Numba and the compiled kernels (the start-up commands in benchmarks/README.md time
#: both paths).
INTERPRET_BYTES = 32 * 1024
INTERPRET_LINES = 24
#: Spaces every line must have: a text of few words fills few of a sketch's bins, and each
#: empty bin then looks through every filled one (t * filled lookups through the first-hit
#: table; t * t / filled probes past its reach, slow interpreted), so short texts go to the
#: compiled kernels directly.
INTERPRET_MIN_SPACES = 40
#: Seconds an interpreted run may take before it starts again compiled (a small input can still
#: be costly interpreted: a text of a few words leaves most sketch bins to probe for).
INTERPRET_SECONDS = 0.5


def skip_numba_blas_probe() -> None:
    """Keep Numba from importing ``scipy.linalg`` when it starts.

    Numba's first kernel call imports ``scipy.linalg.cython_blas`` only to learn whether
    ``np.cov``-style inner products may call BLAS; neardup's kernels call no BLAS, and nothing
    in a command's process uses ``scipy.linalg``, so the command's process marks it absent
    (Numba then uses its own loop).
    """
    if "scipy.linalg" not in sys.modules:
        sys.modules["scipy.linalg"] = None  # type: ignore[assignment]


def exit_at_once(status: int) -> NoReturn:
    """End a failed command's process now: the exit functions run (temporary files go), the
    standard streams are flushed, and the interpreter's teardown is skipped. An error can
    leave threads of pyarrow's CSV reader busy, and tearing them down at exit aborted the
    process now and then (SIGABRT, "terminate called without an active exception": exit
    status 134 after the command's one-line error, not 1)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # closed, or a pipe whose reader left
            stream.flush()
    os._exit(status)


def skip_final_collection() -> None:
    """Leave what the command allocated to the operating system at exit.

    Python's shutdown would walk and free some 100,000 objects, nearly all Numba's compiler
    state. Frozen objects are ignored by those collections. Nothing depends on their
    finalisers: outputs are closed and committed explicitly, and temporary files and folders
    are removed by ``weakref.finalize``, which runs at exit regardless.
    """
    gc.freeze()


def before_engine(args: argparse.Namespace) -> Callable[[], None]:
    """What runs once the job's outputs are checked, just before the engine loads: the kernels'
    mode is chosen (``interpret_small_run``, in the command's own process), as nothing is read
    before the outputs are checked; then, unless ``--quiet``, a note when Numba must compile."""

    def prepare() -> None:
        if args.own_process:
            interpret_small_run(args)
        if not args.quiet:
            _compile_notice(args)

    return prepare


def interpret_small_run(args: argparse.Namespace) -> None:
    """Run the kernels interpreted (same source, same results, no Numba to load) when the
    command is a ``dedup`` with the default MinHash (OPH sketches of word shingles, mixed
    fingerprints) whose inputs are regular, uncompressed files of at most INTERPRET_BYTES and
    INTERPRET_LINES in all, every line with INTERPRET_MIN_SPACES spaces or more. Other methods
    cost 2-20 times more interpreted, so they stay compiled. ``NEARDUP_KERNELS`` in the
    environment overrides the choice."""
    if args.command != "dedup" or args.dask or args.index or args.add:
        return
    method = (args.method, args.sketch or "oph", args.tokens, args.hash)
    if method != ("minhash", "oph", "word", "mix") or args.format == "parquet":
        return
    if _small_plain_files(args.inputs):
        _jit.interpret(budget=INTERPRET_SECONDS)


def _small_plain_files(names: list[str]) -> bool:
    """True when ``names`` are regular, uncompressed, non-Parquet files within the INTERPRET_
    limits, every line long enough."""
    size = lines = 0
    for name in names:
        if name == "-" or name.lower().endswith((".parquet", ".pq")):
            return False
        try:
            if not stat.S_ISREG(os.stat(name).st_mode):
                return False
            with open(name, "rb") as fh:
                data = fh.read(INTERPRET_BYTES + 1 - size)
        except OSError:
            return False  # the job itself reports the input's problem
        if data.startswith(b"\x1f\x8b"):  # gzip: its size says little of its text
            return False
        size += len(data)
        lines += data.count(b"\n") + (not data.endswith(b"\n"))
        if size > INTERPRET_BYTES or lines > INTERPRET_LINES:
            return False
        if any(x.strip() and x.count(b" ") < INTERPRET_MIN_SPACES for x in data.split(b"\n")):
            return False
    return True


def _compile_notice(args: argparse.Namespace) -> None:
    """One line on stderr when the run's kernels are not in Numba's cache yet (the first run
    after installing or upgrading): the silent seconds that follow are compiling, once."""
    if _jit.mode() != "numba":
        return
    cold = _jit.uncached(_run_kernels(args))
    if cold:
        seconds = _jit.compile_seconds(cold)
        info(
            f"compiling kernels once (about {seconds:.0f} s; later runs load them from "
            "Numba's cache) ..."
        )


def _run_kernels(args: argparse.Namespace) -> list[str]:
    """The kernel modules (under ``neardup._kernels``) whose kernels every such dedup run
    compiles on its first call: the reader's, shingling's and the method's."""
    modules = ["shingles", "buffers"]
    modules += ["minhash", "leaders"] if args.method == "minhash" else ["simhash", "hamming"]
    if _jsonl_bytes(args) > PYTHON_PARSE_BYTES:  # less is parsed in Python on a first run
        modules.append("jsonl")
    return modules


def _jsonl_bytes(args: argparse.Namespace) -> float:
    """Bytes of the JSONL inputs (infinite when unknown: standard input, gzip, a folder)."""
    if args.format not in (None, "jsonl"):
        return 0
    total: float = 0
    for name in args.inputs:
        low = name.lower()
        if name == "-" or low.endswith(".gz"):
            total = math.inf
        elif args.format or low.endswith((".jsonl", ".ndjson")):
            with contextlib.suppress(OSError):  # a missing input: the job reports it
                found = os.stat(name)
                total += found.st_size if stat.S_ISREG(found.st_mode) else math.inf
    return total


def restart_compiled() -> int:
    """Run this command again, compiled: its interpreted kernels ran past INTERPRET_SECONDS.
    Nothing was written yet (``_jit.settle`` ends the budget before outputs are), and the
    inputs are regular files, so reading them again gives the same records. Returns only if
    the new program cannot start (exit status 1, one line)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, sys.orig_argv, {**os.environ, "NEARDUP_KERNELS": "numba"})
    except OSError as exc:
        return fail(
            f"this small run was slow interpreted and could not start again compiled "
            f"({exc.strerror or exc}); run it with NEARDUP_KERNELS=numba"
        )
