"""A big run's memory limit changes nothing: on a subset, spilled and in-memory runs keep the same.

A 10M-document run cannot also run in memory on this machine to compare against, so this check
takes the first ``--n`` documents of the same corpus and runs ``neardup dedup`` on them twice,
as separate processes with the run's other settings: once with everything in memory
(``--memory-limit`` far above the data) and once forced to spill (``--memory-limit 16M``, so
the blocks go to disk, memory-mapped, as in the big run). The kept files must be identical byte
for byte; it prints both runs' time and peak memory and exits 1 when they differ.

    python benchmarks/check_spill_subset.py /tmp/news_10m.jsonl --n 1000000
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path


def run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one ``neardup dedup`` child process."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "neardup.cli", "dedup", *args, "--quiet"])
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"neardup dedup failed ({status}): {args}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("corpus", help="JSONL corpus (e.g. the 10M corpus of make_corpus.py)")
    p.add_argument("--n", type=int, default=1_000_000, help="documents in the subset")
    p.add_argument("--workdir", default=tempfile.gettempdir(), help="where files go [/tmp]")
    p.add_argument("extra", nargs="*", help="more neardup dedup options (after --)")
    args = p.parse_args(argv)
    work = Path(args.workdir)
    subset = work / f"subset_{args.n}.jsonl"
    with open(args.corpus, "rb") as src, open(subset, "wb") as out:
        out.writelines(islice(src, args.n))
    runs = {"in memory": ["--memory-limit", "1T"], "spilled": ["--memory-limit", "16M"]}
    kept = {}
    for name, limit in runs.items():
        kept[name] = work / f"subset_kept_{name.replace(' ', '_')}.jsonl"
        seconds, peak = run([str(subset), "-o", str(kept[name]), *limit, *args.extra])
        print(f"{name:10s} {seconds:7.1f} s  peak {peak:8.0f} MB")
    same = filecmp.cmp(kept["in memory"], kept["spilled"], shallow=False)
    with open(kept["spilled"], "rb") as fh:
        lines = sum(1 for _ in fh)
    print(f"kept {lines:,} of {args.n:,}; identical kept files: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
