"""What a Dask regrouping costs before any data: empty regroupings (``bundles.regroup``) on a
local cluster, by the number of sources and destinations.

Every stage of a cluster run (graph, finish, write, each components round) is one regrouping:
its tasks, the P2P shuffle's own tasks and its barrier cost the same whatever the corpus, so
this is the floor each stage adds. Run from the repository root::

    python benchmarks/bench_regroup.py              # local:2, 5 rounds, best of each

Prints, for each shape, the best wall time of ``--rounds`` regroupings of one tiny table per
(source, destination), and the task count Dask's task stream saw for one of them.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pyarrow as pa

from neardup.dask import connect
from neardup.dask.bundles import Pieces, regroup

SHAPES = ((18, 9), (36, 9), (18, 38), (9, 9), (18, 2))


def tiny(source: int, n_dests: int) -> Pieces:
    """Ten numbers for each destination."""
    return {d: {"n": pa.table({"n": np.arange(10)})} for d in range(n_dests)}


def count(dest: int, tables: dict[str, list[Any]]) -> dict[str, Any]:
    return {"rows": sum(t.num_rows for t in tables["n"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cluster", default="local:2")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from distributed import get_task_stream

    with connect(args.cluster) as client:
        regroup(range(2), tiny, (2,), 2, count, (), "warm-up")
        print(f"{'sources':>8} {'dests':>6} {'best s':>7} {'tasks':>6}")
        for sources, dests in SHAPES:
            best = float("inf")
            for _ in range(args.rounds):
                started = time.perf_counter()
                regroup(range(sources), tiny, (dests,), dests, count, (), "bench")
                best = min(best, time.perf_counter() - started)
            with get_task_stream(client) as stream:
                regroup(range(sources), tiny, (dests,), dests, count, (), "bench")
            print(f"{sources:>8} {dests:>6} {best:>7.3f} {len(stream.data):>6}")


if __name__ == "__main__":
    main()
