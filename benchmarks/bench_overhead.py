"""Per-document overhead of ``neardup dedup``: wall time not spent in the dedup kernels.

    python benchmarks/bench_overhead.py ../shared/data/pypi_summaries/docs.jsonl.gz -- --tokens char -w 5
    PYTHONPATH=../main/src python benchmarks/bench_overhead.py CORPUS -- ...   # another checkout

Three child processes of ``neardup dedup CORPUS -o OUT --jobs 1 --quiet [options]``:

1. the run itself, best wall time of ``--repeat`` (default 2);
2. the same run under cProfile, for the time inside the Numba kernels of deduplication
   (``neardup._kernels``: shingling, sketches, features, candidates, removal...; the JSONL
   parsing kernel counts as reading, i.e. overhead, not as a dedup kernel);
3. ``neardup dedup`` on the corpus's first 10 documents: the start-up (imports, kernel loading).

overhead per document = (wall - kernels - start-up) / documents. Reading and parsing the input,
batching, the uniqueness of ids, verification glue and writing the kept records all count as
overhead; so does gzip decompression when the corpus is gzipped (reported separately).
"""

from __future__ import annotations

import argparse
import gzip
import json
import pstats
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

DEDUP_KERNELS = "neardup/_kernels/"
NOT_DEDUP = ("jsonl.py",)  # reading


def _timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("corpus")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("options", nargs="*", help="neardup dedup options (after --)")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="neardup-overhead-"))
    out = work / "kept.jsonl"
    base = [sys.executable, "-m", "neardup.cli", "dedup"]
    run = [*base, args.corpus, "-o", str(out), "--jobs", "1", "--quiet", *args.options]
    wall = min(_timed(run) for _ in range(args.repeat))
    prof = work / "run.prof"
    _timed([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "neardup.cli", *run[3:]])
    stats = pstats.Stats(str(prof)).stats  # type: ignore[attr-defined]
    kernels = reading = decompress = 0.0
    for (file, _, name), (_, _, tottime, _, _) in stats.items():
        if DEDUP_KERNELS in file:
            if file.endswith(NOT_DEDUP):
                reading += tottime
            else:
                kernels += tottime
        elif name in ("<method 'decompress' of 'zlib.Decompress' objects>",):
            decompress += tottime
    opener = gzip.open if args.corpus.endswith(".gz") else open
    with opener(args.corpus, "rb") as fh:
        head = list(islice(fh, 10))
        docs = 10 + sum(1 for line in fh if line.strip())
    small = work / "ten.jsonl"
    small.write_bytes(b"".join(head))
    startup = min(
        _timed([*base, str(small), "-o", str(work / "ten_kept.jsonl"), "--quiet", *args.options])
        for _ in range(args.repeat)
    )
    overhead = wall - kernels - startup
    result = {
        "documents": docs,
        "wall_s": round(wall, 3),
        "dedup_kernels_s": round(kernels, 3),
        "json_kernel_s": round(reading, 3),
        "gzip_s": round(decompress, 3),
        "startup_s": round(startup, 3),
        "overhead_us_per_doc": round(overhead / docs * 1e6, 2),
        "overhead_without_gzip_us_per_doc": round((overhead - decompress) / docs * 1e6, 2),
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
