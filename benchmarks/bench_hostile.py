"""Hostile inputs: decompression bombs and giant lines against the record-size limit.

    python benchmarks/bench_hostile.py [--dir /tmp/hostile] [--sizes 4,10]

Writes, streamed (never whole, on disk or in memory), gzipped JSONL files that decompress to
N GiB: zeros without a newline (a bomb) and one JSON line with an N GiB text. Runs
``neardup dedup`` on each with ``--on-error stop`` and ``skip`` and ``neardup index add``, and
prints wall time, peak RSS of the process (ru_maxrss of the child) and the one-line outcome.
The issue's bar: peak RSS at most 1 GB, a one-line error or a counted skip.
"""

from __future__ import annotations

import argparse
import gzip
import resource
import subprocess
import sys
import time
from pathlib import Path

PIECE = 16 << 20


def write_bomb(path: Path, gib: int, line: bool) -> None:
    """``gib`` GiB of zeros (``line``: one JSON record whose text is that many "a"), gzipped."""
    if path.exists():
        return
    tmp = path.with_suffix(".part")
    with gzip.open(tmp, "wb", compresslevel=9) as out:
        total = gib << 30
        if line:
            head = b'{"id": "big", "text": "'
            out.write(head)
            total -= len(head) + 3
        zeros = (b"a" if line else b"\0") * PIECE
        while total > 0:
            out.write(zeros[: min(PIECE, total)])
            total -= PIECE
        if line:
            out.write(b'"}\n')
    tmp.rename(path)


def run(cmd: list[str]) -> tuple[float, float, int, str]:
    """(seconds, peak RSS MB of the child, exit status, last line of stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:  # ru_maxrss of children is the largest so far: an earlier child's
        peak = before
    lines = [x for x in done.stderr.strip().splitlines() if x.strip()]
    return wall, peak / 1024, done.returncode, (lines[-1] if lines else "")[:160]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/hostile")
    ap.add_argument("--sizes", default="4,10", help="GiB of the bombs, comma-separated")
    args = ap.parse_args()
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    cases: list[tuple[str, Path]] = []
    for gib in (int(x) for x in args.sizes.split(",")):
        bomb = folder / f"zeros_{gib}g.jsonl.gz"
        write_bomb(bomb, gib, line=False)
        cases.append((f"{gib} GiB of zeros", bomb))
    line = folder / "line_4g.jsonl.gz"
    write_bomb(line, 4, line=True)
    cases.append(("one 4 GiB line", line))
    neardup = [sys.executable, "-m", "neardup"]
    print("| input | command | wall s | peak RSS MB | exit | message |")
    print("|---|---|---|---|---|---|")
    for name, path in cases:
        out = folder / "kept.jsonl"
        index = folder / "index.db"
        index.unlink(missing_ok=True)
        subprocess.run([*neardup, "index", "create", str(index)], check=True, capture_output=True)
        for label, cmd in (
            ("dedup stop", [*neardup, "dedup", str(path), "-o", str(out)]),
            ("dedup skip", [*neardup, "dedup", str(path), "-o", str(out), "--on-error", "skip"]),
            ("index add", [*neardup, "index", "add", str(index), str(path)]),
        ):
            # Each run in its own child, so ru_maxrss is that run's alone.
            wrapper = [sys.executable, __file__, "--measure", *cmd]
            done = subprocess.run(wrapper, capture_output=True, text=True)
            print(f"| {name} | {label} | {done.stdout.strip()}")
            sys.stdout.flush()


def measure() -> None:
    """Run argv after --measure; print its row cells (wall, peak, exit, message)."""
    cmd = sys.argv[sys.argv.index("--measure") + 1 :]
    wall, peak, code, message = run(cmd)
    print(f"{wall:.1f} | {peak:.0f} | {code} | {message.replace('|', '/')} |")


if __name__ == "__main__":
    if "--measure" in sys.argv:
        measure()
    else:
        main()
