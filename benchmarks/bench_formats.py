"""One corpus in every input format: ``neardup dedup`` on JSONL, gzip JSONL, Parquet and CSV
copies of the same records, each writing its kept records in its own format (raw file -> kept
set, as a user of that format runs it), with wall time, peak memory and kept documents.

The formats differ in how pass 1 reads them (JSONL blocks by a Numba parser; Parquet and CSV
blocks over Arrow's buffers) and in how borderline texts are read again for exact re-checks (a
plain JSONL file by byte span; every other input once more, into a spool). The kept ids must be
the same in every format. Run from the repository root::

    python benchmarks/bench_formats.py --corpus /tmp/pypi.jsonl -- --tokens char -w 5

Arguments after ``--`` go to every ``neardup dedup``. The copies are written to a temporary
folder (``--keep DIR`` keeps them there for the next run).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

FORMATS = ("jsonl", "jsonl.gz", "parquet", "csv")


def copies(corpus: Path, folder: Path) -> dict[str, Path]:
    """The corpus's id and text fields in each format (made once; kept ones reused)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    paths = {fmt: folder / f"corpus.{fmt}" for fmt in FORMATS}
    if all(p.exists() for p in paths.values()):
        return paths
    ids, texts = [], []
    with corpus.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            record = json.loads(line)
            ids.append(str(record.get("id", n)))
            texts.append(record["text"])
    rows = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts, strict=True))
    paths["jsonl"].write_text(rows, encoding="utf-8")
    paths["jsonl.gz"].write_bytes(gzip.compress(rows.encode("utf-8"), compresslevel=6))
    table = pa.table({"id": ids, "text": texts})
    pq.write_table(table, paths["parquet"])
    pcsv.write_csv(table, paths["csv"])
    return paths


def kept_ids(kept: Path, fmt: str) -> list[str]:
    """The ids of a kept file in format ``fmt``."""
    if fmt in ("parquet", "csv"):
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq

        multiline = pcsv.ParseOptions(newlines_in_values=True)  # long texts hold newlines
        table = (
            pq.read_table(kept)
            if fmt == "parquet"
            else pcsv.read_csv(kept, parse_options=multiline)
        )
        return [str(i) for i in table.column("id").to_pylist()]
    with gzip.open(kept, "rb") if fmt.endswith(".gz") else kept.open("rb") as fh:
        return [json.loads(line)["id"] for line in fh]


def run(path: Path, fmt: str, extra: list[str], out: Path) -> dict[str, Any]:
    """One ``neardup dedup`` process: wall, peak RSS, and its kept ids."""
    kept = out / f"kept.{fmt}"
    cmd = [
        "/usr/bin/time", "-v", sys.executable, "-m", "neardup.cli", "dedup", str(path),
        "-o", str(kept), "--quiet", *extra,
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    peak = int(found.group(1)) / 1024 if found else None
    return {"wall": wall, "peak_mb": peak, "ids": kept_ids(kept, fmt)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a JSONL file with text, id")
    parser.add_argument("--runs", type=int, default=1, help="runs per format (best is shown)")
    parser.add_argument("--keep", type=Path, help="a folder to keep the copies in")
    parser.add_argument("extra", nargs="*", help="arguments for neardup dedup (after --)")
    args = parser.parse_args()
    common.ensure_neardup()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="neardup-formats-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        paths = copies(args.corpus, folder)
        rows, first_ids = [], None
        for fmt in FORMATS:
            out = Path(tempfile.mkdtemp(prefix="neardup-formats-out-"))
            try:
                results = [run(paths[fmt], fmt, args.extra, out) for _ in range(args.runs)]
            finally:
                shutil.rmtree(out, ignore_errors=True)
            best = min(results, key=lambda r: r["wall"])
            first_ids = best["ids"] if first_ids is None else first_ids
            rows.append(
                {
                    "format": fmt,
                    "MB": paths[fmt].stat().st_size / 1e6,
                    "wall s": best["wall"],
                    "peak MB": best["peak_mb"],
                    "kept": len(best["ids"]),
                    "same kept ids": best["ids"] == first_ids,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        columns = [
            ("format", "format", ""),
            ("MB", "MB", ".1f"),
            ("wall s", "wall s", ".2f"),
            ("peak MB", "peak MB", ".0f"),
            ("kept", "kept", ","),
            ("same kept ids", "same kept ids", ""),
        ]
        common.print_table(rows, columns)
        if not all(r["same kept ids"] for r in rows):
            raise SystemExit("the formats kept different documents")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
