"""Benchmark: ``Index.dedup_stream(..., add=True)`` when incoming documents take over stored ids.

Run:

    python benchmarks/bench_index_dedup.py                       # 5,000 / 10,000 / 20,000 docs
    python benchmarks/bench_index_dedup.py --docs 5000 --batch 500 --json out.json

An index (SQLite, in a temporary folder) holds ``--stored`` documents; then ``--docs`` new
documents (30% near copies) are deduplicated against it and added, in batches of ``--batch``,
the way ``neardup dedup FILE --index IDX --add`` does. A tenth of the incoming ids are stored ids
(the document is replaced). Two scenarios:

- ``plain``: nothing else;
- ``replaced``: after each replacing document, later in its batch, comes a copy of the stored
  text it replaced. One document at a time, that copy is kept (the id no longer holds the old
  text); the batch must give the same answer, and its cost must stay linear in the documents,
  not grow with the number of replaced ids a batch holds (each one freeing an old text).

Reported per scenario and size: seconds (best of ``--repeat``), microseconds per incoming
document, kept count; and whether the kept flags equal those of one batch holding everything
(the answer never depends on the batching).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import common

common.ensure_neardup()

from neardup import Index  # noqa: E402
from neardup.testing.synth import near_duplicate_corpus, random_documents  # noqa: E402


def scenario(
    name: str, stored: int, docs: int, batch: int, seed: int
) -> tuple[list[str], list[str], list[str], list[str]]:
    """(stored ids, stored texts, incoming ids, incoming texts) for one scenario."""
    rng = random.Random(seed)
    base = random_documents(stored + docs, seed=seed + 1, words=(15, 40))
    texts = list(near_duplicate_corpus(base, stored + docs, 0.3, seed=seed + 2).texts)
    stored_texts, incoming = texts[:stored], texts[stored:]
    stored_ids = [f"s{i}" for i in range(stored)]
    ids = [f"n{i}" for i in range(docs)]
    n_rep = min(docs // 10, stored)
    for pos, old in zip(
        rng.sample(range(docs), n_rep), rng.sample(range(stored), n_rep), strict=True
    ):
        ids[pos] = stored_ids[old]
        end = min((pos // batch + 1) * batch, docs)
        if name == "replaced" and pos + 1 < end:
            incoming[rng.randrange(pos + 1, end)] = stored_texts[old]
    return stored_ids, stored_texts, ids, incoming


def run_once(
    folder: Path, data: tuple[list[str], list[str], list[str], list[str]], batch: int
) -> tuple[float, np.ndarray]:
    """Seconds of one dedup (index built before, not timed) and its kept flags."""
    stored_ids, stored_texts, ids, incoming = data
    path = folder / f"i{time.monotonic_ns()}.db"
    index = Index.create(str(path))
    index.add(stored_ids, stored_texts)
    start = time.perf_counter()
    with index:  # the CLI's one transaction
        done = index.dedup_stream(
            [(ids[s : s + batch], incoming[s : s + batch]) for s in range(0, len(ids), batch)],
            add=True,
        )
    seconds = time.perf_counter() - start
    index.close()
    path.unlink()
    return seconds, done.kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[5000, 10000, 20000])
    parser.add_argument("--stored", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in ("plain", "replaced"):
            for n in args.docs:
                data = scenario(name, args.stored, n, args.batch, args.seed)
                runs = [run_once(folder, data, args.batch) for _ in range(args.repeat)]
                best = min(s for s, _ in runs)
                _, whole = run_once(folder, data, n)
                row = {
                    "scenario": name,
                    "docs": n,
                    "batch": args.batch,
                    "seconds": round(best, 3),
                    "us_per_doc": round(best / n * 1e6, 1),
                    "kept": int(runs[0][1].sum()),
                    "same_as_one_batch": bool(np.array_equal(runs[0][1], whole)),
                }
                rows.append(row)
                print(
                    f"{name:9s} docs={n:>7,} batch={args.batch}: {row['seconds']:7.3f} s "
                    f"{row['us_per_doc']:7.1f} us/doc  kept {row['kept']:,}  "
                    f"same as one batch: {row['same_as_one_batch']}",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
