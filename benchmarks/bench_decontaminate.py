"""Benchmark: ``neardup decontaminate`` (exact containment) on Clough-Stevenson and on 20news.

Run from the repository root (about two minutes):

    python benchmarks/bench_decontaminate.py --json benchmarks/results/decontaminate.json

1. Clough-Stevenson (``/work/shared/data/clough_stevenson``): the 5 Wikipedia source passages
   are the benchmark items, the 95 short answers the training documents. Each answer was written
   by copy-paste (``cut``), light or heavy revision of its task's source, or independently
   (``non``). For each containment C (and shingle size w) the table gives the share of answers
   of each class found to contain their own task's source: recall for cut, light and heavy, the
   false-match rate for non; and matches to another task's source (all false). A second table
   gives the other direction (each answer as the item, the sources as documents: how much of
   the answer was taken from its source), for comparison.
2. Throughput on 20 Newsgroups (``/work/shared/data/20news_bydate/docs.jsonl.gz``, 18,846
   messages): the benchmark is 1,000 paragraphs (30 to 200 words) drawn from 20news itself
   (seed 1), so some messages really contain them (their own, and replies quoting them). Both
   commands run whole, as a user runs them, raw gzip file to output file:
   ``neardup decontaminate docs.jsonl.gz --against items.jsonl -o clean.jsonl`` and
   ``neardup dedup docs.jsonl.gz -o kept.jsonl``; MB/s is uncompressed JSONL MB over wall
   seconds, best of ``--repeat`` after a warm-up run (kernels compiled and cached).
   ``--dask local:2`` also times ``decontaminate --dask`` (the corpus decompressed, so it is
   cut into blocks) and checks its parts equal the local outputs; ``--skip-quality`` skips 1.
3. Items sharing a template: 20,000 items and 20,000 texts that all open with "which of the
   following is true" (no text contains an item): the whole command's wall time. Every item
   holds the phrase's shingles; only the items' rarer shingles may find candidates.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

common.ensure_neardup()

from neardup import DecontaminateParams, Decontaminator, ShingleParams  # noqa: E402

DATA = Path("/work/shared/data")
CLASSES = ("cut", "light", "heavy", "non")


def clough_stevenson(containments: list[float], sizes: list[int]) -> list[dict[str, Any]]:
    """Per (w, C): the share of answers of each class that contain their own source."""
    folder = DATA / "clough_stevenson"
    docs = {
        r["id"]: r["text"] for r in map(json.loads, (folder / "docs.jsonl").open(encoding="utf-8"))
    }
    pairs = [json.loads(x) for x in (folder / "pairs.jsonl").open(encoding="utf-8")]
    sources = sorted(i for i in docs if i.startswith("orig_"))
    answers = [p["a"] for p in pairs]
    own = [sources.index(p["b"]) for p in pairs]
    rows = []
    for w in sizes:
        for c in containments:
            params = DecontaminateParams(containment=c, shingle=ShingleParams(w=w))
            found = Decontaminator([docs[s] for s in sources], params).contains(
                [docs[a] for a in answers]
            )
            row: dict[str, Any] = {"w": w, "C": c}
            for kind in CLASSES:
                mine = [i for i, p in enumerate(pairs) if p["relation"] == kind]
                hit = sum(any(m.item == own[i] for m in found[i]) for i in mine)
                row[kind] = hit / len(mine)
                row[f"{kind}_n"] = len(mine)
            row["other_source"] = sum(m.item != own[i] for i, ms in enumerate(found) for m in ms)
            # The other direction, for comparison: each answer as the item, its source as the
            # document (how much of the answer was taken from the source).
            reverse = Decontaminator([docs[a] for a in answers], params).contains(
                [docs[s] for s in sources]
            )
            held = {(m.item, j) for j, ms in enumerate(reverse) for m in ms}
            for kind in CLASSES:
                mine = [i for i, p in enumerate(pairs) if p["relation"] == kind]
                row[f"{kind}_reverse"] = sum((i, own[i]) in held for i in mine) / len(mine)
            rows.append(row)
    return rows


def paragraphs(path: Path, n: int, seed: int = 1) -> list[str]:
    """``n`` distinct paragraphs of 30 to 200 words drawn from the corpus."""
    found: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            for para in re.split(r"\n\s*\n", json.loads(line)["text"]):
                if 30 <= len(para.split()) <= 200:
                    found.append(para)
    found = list(dict.fromkeys(found))
    return random.Random(seed).sample(found, n)


def uncompressed_mb(path: Path) -> float:
    with gzip.open(path, "rb") as fh:
        return sum(len(b) for b in iter(lambda: fh.read(1 << 20), b"")) / 1e6


def run(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one whole command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def throughput(
    corpus: Path, items: int, repeat: int, jobs: int | None, dask: str | None = None
) -> dict[str, Any]:
    """decontaminate vs dedup, whole commands on the same raw file; with ``dask``, also
    decontaminate on that cluster (outputs checked equal to the local run's)."""
    mb = uncompressed_mb(corpus)
    neardup = [sys.executable, "-m", "neardup.cli"]
    extra = [] if jobs is None else ["--jobs", str(jobs)]
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "items.jsonl"
        with bench.open("w", encoding="utf-8") as fh:
            for i, text in enumerate(paragraphs(corpus, items)):
                fh.write(json.dumps({"id": f"item{i}", "text": text}) + "\n")
        summary = Path(tmp) / "summary.json"
        commands = {
            "decontaminate": [
                *neardup, "decontaminate", str(corpus), "--against", str(bench),
                "-o", f"{tmp}/clean.jsonl", "--matches", f"{tmp}/matches.jsonl",
                "--summary-json", str(summary), "-q", *extra,
            ],
            "dedup": [*neardup, "dedup", str(corpus), "-o", f"{tmp}/kept.jsonl", "-q", *extra],
        }  # fmt: skip
        out: dict[str, Any] = {"corpus_mb": round(mb, 2), "items": items, "jobs": jobs}
        for name, cmd in commands.items():
            run(cmd)  # warm-up: kernels compiled and cached, file in the page cache
            times = [run(cmd) for _ in range(repeat)]
            wall, cpu = min(times)
            out[name] = {"seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
                         "mb_per_s": round(mb / wall, 2)}  # fmt: skip
        if dask:
            out["dask"] = cluster_run(neardup, corpus, bench, Path(tmp), dask, repeat)
            out["dask"]["mb_per_s"] = round(mb / out["dask"]["seconds"], 2)
        found = json.loads(summary.read_text())
        out["contaminated"] = found["contaminated"]
        out["matches"] = found["matches"]
        out["items_found"] = found["benchmark_items_matched"]
        out["ratio"] = round(out["decontaminate"]["mb_per_s"] / out["dedup"]["mb_per_s"], 3)
    return out


def cluster_run(
    neardup: list[str], corpus: Path, bench: Path, tmp: Path, dask: str, repeat: int
) -> dict[str, Any]:
    """``decontaminate --dask`` on the corpus decompressed (plain JSONL is cut into 32 MB
    blocks; a gzip file is one): wall seconds with the cluster's start, best of ``repeat``;
    the part files read back must equal the local run's outputs of the gzip file."""
    from neardup.dask import read_output

    plain = tmp / "corpus.jsonl"
    with gzip.open(corpus, "rb") as src, plain.open("wb") as dst:
        dst.write(src.read())
    cmd = [*neardup, "decontaminate", str(plain), "--against", str(bench), "-o", f"{tmp}/clean",
           "--matches", f"{tmp}/matches", "--dask", dask, "-q"]  # fmt: skip
    wall, cpu = min(run(cmd) for _ in range(repeat))
    same = (
        read_output(f"{tmp}/clean") == (tmp / "clean.jsonl").read_bytes()
        and read_output(f"{tmp}/matches") == (tmp / "matches.jsonl").read_bytes()
    )
    if not same:
        raise SystemExit("the cluster run's outputs differ from the local run's")
    return {"cluster": dask, "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "outputs_equal_local": same}  # fmt: skip


def template(items: int, docs: int, seed: int = 2) -> dict[str, Any]:
    """A benchmark whose items all open with one phrase ("which of the following is true", as
    multiple-choice questions do) against training texts that open with it too: the phrase's
    shingles are held by every item, so counting every item of every shingle a text holds
    costs items x texts; the whole command's wall seconds and its matches."""
    rng = random.Random(seed)
    phrase = "which of the following is true"
    with tempfile.TemporaryDirectory() as tmp:
        bench, train = Path(tmp) / "items.jsonl", Path(tmp) / "train.jsonl"
        for path, n, words, tag in ((bench, items, 20, "q"), (train, docs, 50, "z")):
            with path.open("w", encoding="utf-8") as fh:
                for i in range(n):
                    text = " ".join(
                        [phrase, *(f"{tag}{rng.randrange(10**6)}" for _ in range(words))]
                    )
                    fh.write(json.dumps({"id": f"{tag}{i}", "text": text}) + "\n")
        summary = Path(tmp) / "summary.json"
        cmd = [sys.executable, "-m", "neardup.cli", "decontaminate", str(train), "--against",
               str(bench), "--matches", f"{tmp}/m.jsonl", "--summary-json", str(summary), "-q"]  # fmt: skip
        run(cmd)  # warm-up
        wall, cpu = run(cmd)
        matches = json.loads(summary.read_text())["matches"]
    return {"items": items, "docs": docs, "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "matches": matches}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--containments", default="0.2,0.3,0.4,0.5,0.6,0.8,1.0")
    p.add_argument("--sizes", default="3,5,8", help="shingle sizes w for Clough-Stevenson")
    p.add_argument("--corpus", type=Path, default=DATA / "20news_bydate/docs.jsonl.gz")
    p.add_argument("--items", type=int, default=1000, help="benchmark paragraphs [1000]")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--jobs", type=int, help="--jobs of both commands [their default: all cores]")
    p.add_argument("--dask", metavar="CLUSTER", help="also decontaminate on Dask, e.g. local:2")
    p.add_argument("--skip-quality", action="store_true", help="throughput only")
    p.add_argument("--template-items", type=int, default=20_000,
                   help="items (and texts) sharing one phrase [20000]")  # fmt: skip
    p.add_argument("--json", type=Path, help="write every number here")
    args = p.parse_args()
    containments = [float(x) for x in args.containments.split(",")]
    rows = (
        []
        if args.skip_quality
        else clough_stevenson(containments, [int(x) for x in args.sizes.split(",")])
    )
    columns = [("w", "w", ""), ("C", "C", "")]
    if rows:
        columns += [(k, f"{k} (n={rows[0][k + '_n']})", ".2f") for k in CLASSES]
        columns += [("other_source", "other source", "")]
        common.print_table(rows, columns, "Clough-Stevenson: answers containing their own source")
        common.print_table(
            rows,
            [("w", "w", ""), ("C", "C", "")] + [(f"{k}_reverse", k, ".2f") for k in CLASSES],
            "Clough-Stevenson, the other direction: sources containing their answers",
        )
    speed = throughput(args.corpus, args.items, args.repeat, args.jobs, args.dask)
    speed_rows = [{"command": k, **speed[k]} for k in ("decontaminate", "dedup")]
    if args.dask:
        speed_rows.append({"command": f"decontaminate --dask {args.dask}", **speed["dask"]})
    common.print_table(
        speed_rows,
        [("command", "command", ""), ("seconds", "wall s", ".2f"), ("cpu_seconds", "CPU s", ".2f"),
         ("mb_per_s", "MB/s", ".1f")],
        f"20news ({speed['corpus_mb']} MB JSONL, gzip) against {speed['items']} of its "
        f"paragraphs, jobs={speed['jobs'] or 'all cores'}",
    )  # fmt: skip
    print(
        f"decontaminate / dedup MB/s: {speed['ratio']:.2f}; {speed['contaminated']:,} messages "
        f"contaminated, {speed['matches']:,} matches, {speed['items_found']:,} items found"
    )
    shared = template(args.template_items, args.template_items)
    print(
        f"template: {shared['items']:,} items and {shared['docs']:,} texts opening with one "
        f"phrase: {shared['seconds']:.2f} s wall, {shared['matches']:,} matches"
    )
    if args.json:
        common.write_json(
            args.json,
            {"machine": common.machine(), "clough_stevenson": rows, "throughput": speed,
             "template": shared,
             "command": " ".join(sys.argv), "cores": os.cpu_count()},
        )  # fmt: skip


if __name__ == "__main__":
    main()
