"""The floor of ``neardup dedup``: start-up, reading, shingling and sketching alone vs end to end.

    python benchmarks/floor.py /tmp/news_large.jsonl   # written by make_copies.py --join 14
    python benchmarks/floor.py /tmp/pypi.jsonl --jobs 1,2 -- --tokens char -w 5

Parts timed on the corpus, each alone (best wall time of ``--repeat``):

- **imports**: a ``python -c "import neardup, numpy, numba"`` process;
- **start-up**: ``neardup dedup`` with the same options on the corpus's first 10 lines, compiled
  (``NEARDUP_KERNELS=numba``): imports, Numba's target and the run's kernels loaded from cache;
- **read + parse**: ``open_source(CORPUS).batches(None, --batch-size)`` iterated (the JSONL block
  reader: one parser block per batch);
- **shingle**: ``shingle_texts`` on those batches (the engine's pass: fingerprints and content
  hashes); **sketch**: ``sketch`` of their fingerprints with the run's sketch parameters.

floor = start-up + read + shingle + sketch, one thread. Then ``neardup dedup CORPUS -o /dev/null
--jobs J --quiet [options]`` for each J: end to end / floor (1.0 = nothing beyond the floor), and
the speed-up over ``--jobs 1``. ``2-core floor`` = start-up + (read + shingle + sketch) / 2.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import common

common.ensure_neardup()

T = TypeVar("T")


#: Children may write bytecode (``.pyc``), as after ``pip install``: without it every run
#: compiles neardup's modules again (about 0.1 s).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of the fastest of ``repeat`` runs of cmd (CPU: user + system, threads
    summed, so it shows whether a second thread found a core)."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        cpu, started = _children_cpu(), time.perf_counter()
        subprocess.run(cmd, check=True, env=env or CHILD_ENV, stdout=subprocess.DEVNULL)
        best = min(best, (time.perf_counter() - started, _children_cpu() - cpu))
    return best


def _wall(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    return _run(cmd, repeat, env)[0]


def _best(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    best, out = float("inf"), fn()
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - started)
    return best, out  # the first call is the warm-up (kernels loaded, file cached)


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = text.strip().lower()
    return int(s[:-1]) * units[s[-1]] if s[-1] in units else int(s)


def stages(corpus: str, options: list[str], batch_bytes: int, repeat: int) -> dict[str, float]:
    """read + parse, shingle and sketch in this process, each alone, best of ``repeat``."""
    from neardup.cli.convert import dedup_params
    from neardup.cli.parser import build_parser
    from neardup.engine import Deduplicator
    from neardup.io import DocBatch, open_source
    from neardup.minhash import sketch
    from neardup.shingles import shingle_texts

    args = build_parser().parse_args(["dedup", corpus, "-o", os.devnull, *options])
    params = dedup_params(args)
    sketch_params = Deduplicator(params).method.sketch_params  # type: ignore[attr-defined]

    def read() -> list[DocBatch]:
        return list(open_source(corpus).batches(None, batch_bytes))

    read_s, batches = _best(read, repeat)
    shingle_s, shingled = _best(
        lambda: [shingle_texts(b.texts, params.shingle) for b in batches], repeat
    )
    sketch_s, _ = _best(lambda: [sketch(f, o, sketch_params) for f, o, _ in shingled], repeat)
    return {
        "docs": sum(len(b) for b in batches),
        "batches": len(batches),
        "mb": sum(b.nbytes for b in batches) / 1e6,
        "t": sketch_params.t,
        "read_s": read_s,
        "shingle_s": shingle_s,
        "sketch_s": sketch_s,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0],
        epilog=__doc__.split("\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s [-h] [--jobs J,J] [--batch-size B] [--repeat N] [--startup-repeat N] "
        "corpus [-- neardup dedup options]",
    )
    p.add_argument("corpus", help="uncompressed JSONL with a text field")
    p.add_argument("--jobs", default="1,2", help="--jobs values end to end [1,2]")
    p.add_argument("--batch-size", default="4M", help="bytes per batch, as neardup's [4M]")
    p.add_argument("--repeat", type=int, default=3, help="runs per timing; the best counts [3]")
    p.add_argument("--startup-repeat", type=int, default=5, help="runs of the start-ups [5]")
    # neardup's options follow "--", wherever the script's own options are (argparse's own
    # positional list would refuse "--jobs 1,2 -- --tokens char")
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:cut])
    args.options = argv[cut + 1 :]
    py = sys.executable
    load = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="neardup-floor-"))
    head = work / "head.jsonl"
    with open(args.corpus, "rb") as f, open(head, "wb") as out:
        for _, line in zip(range(10), f, strict=False):
            out.write(line)
    numba_env = {**CHILD_ENV, "NEARDUP_KERNELS": "numba"}
    dedup = [py, "-m", "neardup", "dedup"]
    imports_s = _wall([py, "-c", "import neardup, numpy, numba"], args.startup_repeat)
    startup_s = _wall(
        [*dedup, str(head), "-o", os.devnull, "--quiet", *args.options],
        args.startup_repeat,
        numba_env,
    )
    parts = stages(args.corpus, args.options, _size(args.batch_size), args.repeat)
    work_s = parts["read_s"] + parts["shingle_s"] + parts["sketch_s"]
    floor_s = startup_s + work_s
    rows = []
    base = None
    for jobs in (int(j) for j in args.jobs.split(",")):
        cmd = [*dedup, args.corpus, "-o", os.devnull, "--quiet", "--jobs", str(jobs)]
        e2e, cpu = _run([*cmd, "--batch-size", args.batch_size, *args.options], args.repeat)
        base = base or e2e
        rows.append(
            {
                "jobs": jobs,
                "e2e": e2e,
                "cpu": cpu,
                "mbs": parts["mb"] / e2e,
                "ratio": e2e / floor_s,
                "ratio2": e2e / (startup_s + work_s / 2),
                "speedup": base / e2e,
            }
        )
    mb = parts["mb"]
    print(
        f"{args.corpus}: {parts['docs']:,} documents, {mb:.1f} MB, {parts['batches']} batches of "
        f"{args.batch_size}; options {' '.join(args.options) or '(defaults)'}; t={parts['t']}; "
        f"best of {args.repeat}; load {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    floor_rows = [
        {"part": "imports (python -c 'import neardup, numpy, numba')", "s": imports_s},
        {"part": "start-up (dedup of 10 lines, kernels from cache)", "s": startup_s},
        {"part": "read + parse", "s": parts["read_s"], "mbs": mb / parts["read_s"]},
        {"part": "shingle", "s": parts["shingle_s"], "mbs": mb / parts["shingle_s"]},
        {"part": "sketch", "s": parts["sketch_s"], "mbs": mb / parts["sketch_s"]},
        {"part": "floor = start-up + read + shingle + sketch", "s": floor_s, "mbs": mb / floor_s},
    ]
    common.print_table(
        floor_rows, [("part", "part", ""), ("s", "s", ".3f"), ("mbs", "MB/s", ".1f")]
    )
    common.print_table(
        rows,
        [
            ("jobs", "--jobs", ""),
            ("e2e", "end to end s", ".3f"),
            ("cpu", "CPU s", ".3f"),
            ("mbs", "MB/s", ".1f"),
            ("ratio", "/ floor", ".2f"),
            ("ratio2", "/ 2-core floor", ".2f"),
            ("speedup", "x --jobs 1", ".2f"),
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
