"""A cluster run writes what one machine writes: kept records, clusters and pairs, byte for byte.

For each corpus, ``neardup dedup CORPUS -o K --clusters C --pairs P`` runs once on this
machine, then once per worker count with ``--dask local:N`` writing part folders; each folder's
parts, concatenated in manifest order (``neardup.dask.read_output``), must equal the local
file. Options after ``--`` go to every run. Prints one line per comparison and exits 1 when any
differs. Issue 26 asks for 20news, PyPI summaries and synthetic data on 1, 2 and 4 workers:

    zcat ../shared/data/20news_bydate/docs.jsonl.gz > /tmp/news.jsonl
    zcat ../shared/data/pypi_summaries/docs.jsonl.gz > /tmp/pypi.jsonl
    python benchmarks/make_corpus.py /tmp/synth_1m.jsonl --n 1000000 --dup-fraction 0.3
    python benchmarks/check_dask_equal.py /tmp/news.jsonl /tmp/synth_1m.jsonl      # ~6 minutes
    python benchmarks/check_dask_equal.py /tmp/pypi.jsonl -- --tokens char -w 5    # ~4 minutes
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

OUTPUTS = {"kept": "-o", "clusters": "--clusters", "pairs": "--pairs"}


def _run(corpus: str, where: Path, extra: list[str], dask: str | None) -> None:
    """One ``neardup dedup`` of ``corpus`` writing the three outputs under ``where``."""
    args = [sys.executable, "-m", "neardup", "dedup", corpus, "-q", *extra]
    for name, flag in OUTPUTS.items():
        args += [flag, str(where / (name if dask else f"{name}.jsonl"))]
    if dask:
        args += ["--dask", dask]
    subprocess.run(args, check=True)


def check(corpus: str, workers: list[int], extra: list[str]) -> bool:
    """Whether every cluster run of ``corpus`` wrote the local run's bytes (one line each)."""
    from neardup.dask import read_output

    same = True
    with tempfile.TemporaryDirectory(prefix="neardup-equal-") as tmp:
        local = Path(tmp) / "local"
        local.mkdir()
        _run(corpus, local, extra, None)
        for n in workers:
            where = Path(tmp) / f"dask{n}"
            where.mkdir()
            _run(corpus, where, extra, f"local:{n}")
            for name in OUTPUTS:
                want = (local / f"{name}.jsonl").read_bytes()
                equal = read_output(str(where / name)) == want
                same &= equal
                lines = want.count(b"\n")
                print(
                    f"{corpus} local:{n} {name}: {'equal' if equal else 'DIFFER'} ({lines:,} lines)"
                )
    return same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="+")
    parser.add_argument("--workers", default="1,2,4", help="worker counts [1,2,4]")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    workers = [int(n) for n in args.workers.split(",")]
    ok = all([check(corpus, workers, extra) for corpus in args.corpora])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
