"""End-to-end dedup time of this checkout against another source tree (e.g. before a refactor).

    python benchmarks/bench_versions.py --ref-src /work/old-ref/src       # ~3 minutes
    python benchmarks/bench_versions.py --ref-src /work/old-ref/src --near-docs 4000 --raw-docs 4000

Both sides run the same library call, ``Deduplicator(params).fit(texts)``, on the same texts,
each in its own child process (``PYTHONPATH`` = that side's ``src``), one native thread, after a
warm-up that loads the cached Numba kernels; each child times ``--repeat`` fits and keeps the
best (CPU clock by default, robust when the machine is shared). The sides alternate within each
of ``--rounds`` rounds, so a burst of load on the machine hits both. Corpora: the controlled-edit
corpus (``neardup.testing.synth.near_duplicate_corpus`` over 20news, as in ``bench_dedup.py``)
and the raw 20news messages; generated text when /work/shared/data is absent.

Configurations are named by verification + removal. The reference side understands the
pre-restructure parameters (flat ``DedupParams(verify=...)``, connected components only); this
side gets ``removal="components"`` explicitly for the comparable rows, and runs the new defaults
(keep-aware removal) alone. For every comparable row the kept sets and clusters of both sides
must be identical (their SHA-256 is compared), so the two sides did the same work.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common

#: (name, verify, removal, compared with the reference?)
CONFIGS = (
    ("sketch + components", "sketch", "components", True),
    ("hybrid + components", "hybrid", "components", True),
    ("exact + components", "exact", "components", True),
    ("sketch + keep-aware", "sketch", "keep-aware", False),
    ("hybrid + keep-aware (default)", "hybrid", "keep-aware", False),
)


# ---------------------------------------------------------------- child


def _params(verify: str, removal: str, threshold: float) -> Any:
    """DedupParams for whichever API the imported neardup has."""
    import neardup.params as p
    from neardup.engine import DedupParams

    if hasattr(p, "MinhashParams"):  # restructured API: removal policy is a parameter
        return DedupParams(threshold=threshold, verify=verify, removal=removal)
    if removal != "components":
        raise SystemExit("the reference tree has no keep-aware removal")
    return DedupParams(threshold=threshold, verify=verify)


def child(args: argparse.Namespace) -> int:
    """Time ``--repeat`` fits of one configuration; print one JSON line."""
    common.limit_threads(1)
    import numpy as np

    from neardup.engine import Deduplicator

    clock = common.CLOCKS[args.clock]
    texts = json.loads(Path(args.corpus_file).read_text(encoding="utf-8"))
    params = _params(args.verify, args.removal, args.threshold)
    Deduplicator(params).fit(common.synthetic_texts(200))  # load / compile the kernels
    times = []
    d = None
    for _ in range(args.repeat):
        d = None
        common.release_memory()
        t0 = clock()
        d = Deduplicator(params).fit(texts)
        times.append(clock() - t0)
    assert d is not None
    kept = np.ascontiguousarray(d.kept_, dtype=np.bool_)
    clusters = np.ascontiguousarray(d.clusters_, dtype=np.int64)
    print(
        json.dumps(
            {
                "times": times,
                "kept_sha": hashlib.sha256(kept.tobytes()).hexdigest()[:16],
                "clusters_sha": hashlib.sha256(clusters.tobytes()).hexdigest()[:16],
                "removed": int(len(kept) - kept.sum()),
                "pairs": len(d.pairs_[0]),
                "neardup": str(Path(sys.modules["neardup"].__file__ or "").parent),
            }
        )
    )
    return 0


# ---------------------------------------------------------------- parent


def run_child(
    src: Path, corpus_file: Path, verify: str, removal: str, args: argparse.Namespace
) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", "--corpus-file", str(corpus_file)]
    cmd += ["--verify", verify, "--removal", removal, "--threshold", str(args.threshold)]
    cmd += ["--repeat", str(args.repeat), "--clock", args.clock]
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    if Path(result["neardup"]).resolve() != (src / "neardup").resolve():
        raise SystemExit(f"child imported {result['neardup']}, not {src / 'neardup'}")
    return result


def corpora(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    common.limit_threads(1)
    common.ensure_neardup()
    from neardup.testing.synth import near_duplicate_corpus, random_documents

    path = common.default_corpus()
    base = list(common.iter_texts(path)) if path else common.synthetic_texts(20_000)
    name = "20news" if path else "synthetic"
    out = []
    if args.near_docs:
        missing = args.near_docs - round(0.3 * args.near_docs) - len(base)
        near_base = base + (random_documents(missing, args.seed) if missing > 0 else [])
        corpus = near_duplicate_corpus(near_base, args.near_docs, 0.3, seed=args.seed)
        out.append((f"near-dup ({name} + edits)", list(corpus.texts)))
    if args.raw_docs:
        out.append((f"{name} raw", base[: args.raw_docs]))
    return out


def parent(args: argparse.Namespace) -> int:
    here = common.REPO / "src"
    ref = Path(args.ref_src).resolve()
    if not (ref / "neardup").is_dir():
        raise SystemExit(f"--ref-src {ref} has no neardup package")
    print("machine:", common.machine())
    print(f"this: {here}\nref:  {ref}")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="neardup_versions_") as tmp:
        for name, texts in corpora(args):
            corpus_file = Path(tmp) / "corpus.json"
            corpus_file.write_text(json.dumps(texts), encoding="utf-8")
            mb = common.utf8_mb(texts)
            for label, verify, removal, compared in CONFIGS:
                sides = [("this", here)] + ([("ref", ref)] if compared else [])
                best: dict[str, list[float]] = {s: [] for s, _ in sides}
                last: dict[str, dict[str, Any]] = {}
                for rnd in range(args.rounds):
                    order = sides if rnd % 2 == 0 else sides[::-1]
                    for side, src in order:
                        r = run_child(src, corpus_file, verify, removal, args)
                        best[side].append(min(r["times"]))
                        last[side] = r
                row: dict[str, Any] = {
                    "corpus": name,
                    "docs": len(texts),
                    "mb": mb,
                    "config": label,
                    "this_s": min(best["this"]),
                    "this_runs": best["this"],
                    "removed": last["this"]["removed"],
                }
                if compared:
                    row["ref_s"] = min(best["ref"])
                    row["ref_runs"] = best["ref"]
                    row["ratio"] = row["this_s"] / row["ref_s"]
                    row["median_ratio"] = statistics.median(best["this"]) / statistics.median(
                        best["ref"]
                    )
                    same = all(
                        last["this"][k] == last["ref"][k] for k in ("kept_sha", "clusters_sha")
                    )
                    row["same_output"] = "yes" if same else "NO"
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if not k.endswith("runs")}))
    common.print_table(
        rows,
        [
            ("corpus", "corpus", ""),
            ("config", "verify + removal", ""),
            ("ref_s", "ref s", ".3f"),
            ("this_s", "this s", ".3f"),
            ("ratio", "this/ref", ".3f"),
            ("median_ratio", "median this/ref", ".3f"),
            ("same_output", "same kept", ""),
            ("removed", "removed", ","),
        ],
        f"Deduplicator.fit at t={args.threshold}, {args.clock} seconds, best of {args.repeat} "
        f"fits x {args.rounds} child processes per side",
    )
    if args.json:
        common.write_json(args.json, {"machine": common.machine(), "rows": rows})
    return 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--ref-src", default="/work/old-ref/src", help="the other tree's src folder")
    p.add_argument("--near-docs", type=int, default=15000, help="near-dup corpus size (0: skip)")
    p.add_argument("--raw-docs", type=int, default=10**9, help="raw 20news docs [all] (0: skip)")
    p.add_argument("--threshold", type=float, default=0.8)
    p.add_argument("--repeat", type=int, default=3, help="fits per child (best kept) [3]")
    p.add_argument("--rounds", type=int, default=2, help="child processes per side [2]")
    p.add_argument("--clock", choices=sorted(common.CLOCKS), default="cpu")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=Path, help="write all results as JSON here")
    p.add_argument("--threads", type=int, default=1, help="(always 1)")
    # child mode (internal)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--corpus-file", help=argparse.SUPPRESS)
    p.add_argument("--verify", help=argparse.SUPPRESS)
    p.add_argument("--removal", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    return child(args) if args.child else parent(args)


if __name__ == "__main__":
    sys.exit(main())
