"""Benchmark: the standing index (SQLite) against datasketch MinHashLSH, at up to 1M documents.

Run (the 1M run takes a few minutes; ``--jobs 2`` signs the next batch while one is written):

    python benchmarks/bench_index.py --docs 1000000 --peer-docs 100000 --jobs 2 \
        --json benchmarks/results/index.json
    python benchmarks/bench_index.py --docs 20000 --peer-docs 5000      # quick look

Documents are generated (``common.iter_synthetic``, ``--mean-words`` words, 2% of them near
copies of an earlier one) into a JSONL file first (not timed), then added the way ``neardup
index add FILE --batch-size B --jobs J`` adds them (``neardup.index.jobs.add_source``: reading,
parsing, signing and writing, one transaction per ``--batch`` batch), timed end to end.
Reported: add throughput into SQLite, bytes on disk per document, and, in a fresh process that opens the finished index (so its memory is what a query
process needs, whatever the index size): single-query latency p50/p99 over ``--queries`` queries
(half near copies of indexed documents, half new text), batch-query throughput, and peak RSS.
datasketch ``MinHashLSH`` (threshold 0.8, 128 permutations, in memory) is timed on the first
``--peer-docs`` documents: insert throughput (MinHash computed by datasketch, as its users do)
and single-query latency. Its Redis storage is not measured unless a ``redis-server`` runs.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # before numba is imported: one thread

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import common

common.ensure_neardup()

from neardup import DedupParams, Index  # noqa: E402


def corpus(n: int, mean_words: int, seed: int = 0) -> Iterator[tuple[str, str]]:
    """(id, text): synthetic documents; 2% are an earlier document with a few words changed."""
    rng = random.Random(seed + 1)
    recent: list[str] = []
    for i, text in enumerate(common.iter_synthetic(n, seed, mean_words)):
        if recent and rng.random() < 0.02:
            words = rng.choice(recent).split()
            for _ in range(max(1, len(words) // 50)):
                words[rng.randrange(len(words))] = "changed"
            text = " ".join(words)
        if len(recent) < 1000:
            recent.append(text)
        else:
            recent[rng.randrange(1000)] = text
        yield f"d{i}", text


def queries(n_docs: int, n: int, mean_words: int) -> list[str]:
    """Half near copies of indexed documents (spread over the index), half new documents."""
    wanted = set(np.linspace(0, n_docs - 1, n // 2).astype(int).tolist())
    near = []
    for i, (_, text) in enumerate(corpus(max(wanted) + 1, mean_words)):
        if i in wanted:
            words = text.split()
            words[len(words) // 2] = "edited"
            near.append(" ".join(words))
    fresh = common.synthetic_texts(n - len(near), seed=777, mean_words=mean_words)
    return near + fresh


def write_corpus(path: str, args: argparse.Namespace) -> None:
    """The generated documents as JSONL (not timed)."""
    with open(path, "w", encoding="utf-8") as out:
        for doc_id, text in corpus(args.docs, args.mean_words):
            out.write(json.dumps({"id": doc_id, "text": text}) + "\n")


def add_phase(path: str, source: str, args: argparse.Namespace) -> dict[str, float]:
    """``neardup index add`` (its library function) from the JSONL file, timed end to end."""
    from neardup.index.jobs import add_source as index_add_source
    from neardup.run import ReadOptions

    index = Index.create(path, DedupParams(threshold=args.threshold, verify=args.verify))
    index.add(["warm-up"], ["a few words to compile the kernels before timing"])
    index.remove(["warm-up"])
    index.close()
    started = time.perf_counter()
    done = index_add_source(
        path, source, ReadOptions(batch_size=args.batch), progress=args.progress, jobs=args.jobs
    )
    seconds = time.perf_counter() - started
    index = Index.open(path)
    stats = index.stats()
    index.close()
    return {
        "add_seconds": round(seconds, 1),
        "add_docs_per_s": round(done["read"] / seconds),
        "add_jobs": args.jobs,
        "bytes_per_doc": stats["bytes_per_document"],
        "postings_per_doc": round(stats["postings"] / args.docs, 1),
        "segments": stats["segments"],
        "method": stats["method"],
    }


def query_phase(path: str, args: argparse.Namespace) -> dict[str, float]:
    """Run in a fresh process: open, query one by one, then in one batch; peak memory."""
    qs = queries(args.docs, args.queries, args.mean_words)
    index = Index.open(path)
    index.query(qs[:5])
    lat = []
    found = 0
    for q in qs:
        t = time.perf_counter()
        found += bool(index.query([q])[0])
        lat.append(time.perf_counter() - t)
    t = time.perf_counter()
    index.query(qs)
    batch_s = time.perf_counter() - t
    return {
        "query_p50_ms": round(float(np.percentile(lat, 50)) * 1e3, 3),
        "query_p99_ms": round(float(np.percentile(lat, 99)) * 1e3, 3),
        "batch_queries_per_s": round(len(qs) / batch_s),
        "queries_with_matches": found,
        "queries": len(qs),
        "query_peak_rss_mb": round(common.peak_rss_mb(), 1),
    }


def datasketch_phase(args: argparse.Namespace) -> dict[str, float]:
    from datasketch import MinHash, MinHashLSH

    n = args.peer_docs
    with common.PeakRSS() as memory:  # high-water mark reset: the add phase ran before
        results = _datasketch(args, n, MinHash, MinHashLSH)
    return results | {"datasketch_peak_rss_mb": round(memory.peak_mb)}


def _datasketch(
    args: argparse.Namespace, n: int, MinHash: Any, MinHashLSH: Any
) -> dict[str, float]:
    docs = list(corpus(n, args.mean_words))
    lsh = MinHashLSH(threshold=args.threshold, num_perm=128)

    def minhash(text: str) -> MinHash:
        words = text.lower().split()
        shingles = {" ".join(words[i : i + 5]).encode() for i in range(max(1, len(words) - 4))}
        m = MinHash(num_perm=128)
        m.update_batch(list(shingles))
        return m

    started = time.perf_counter()
    with lsh.insertion_session() as session:
        for doc_id, text in docs:
            session.insert(doc_id, minhash(text))
    seconds = time.perf_counter() - started
    qs = queries(n, min(args.queries, 1000), args.mean_words)
    lat = []
    for q in qs:
        t = time.perf_counter()
        lsh.query(minhash(q))
        lat.append(time.perf_counter() - t)
    return {
        "datasketch_docs": n,
        "datasketch_add_docs_per_s": round(n / seconds),
        "datasketch_query_p50_ms": round(float(np.percentile(lat, 50)) * 1e3, 3),
        "datasketch_query_p99_ms": round(float(np.percentile(lat, 99)) * 1e3, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--peer-docs", type=int, default=100_000, help="0: skip datasketch")
    parser.add_argument("--mean-words", type=int, default=80)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="threads signing batches while the previous one is written (index add --jobs) [1]",
    )
    parser.add_argument("--progress", action="store_true", help="progress bar while adding")
    parser.add_argument("--workdir", help="folder for the corpus file and index [system temp]")
    parser.add_argument(
        "--corpus", help="the generated corpus as JSONL here (written if missing, else reused)"
    )
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument(
        "--verify", default="sketch", help="sketch (default) or hybrid (keeps text)"
    )
    parser.add_argument("--path", help="index file to build (default: a temporary one)")
    parser.add_argument("--query-only", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.query_only:
        print(json.dumps(query_phase(args.query_only, args)))
        return
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        path = args.path or os.path.join(tmp, "bench.db")
        source = args.corpus or os.path.join(tmp, "corpus.jsonl")
        results: dict[str, object] = {"docs": args.docs, "mean_words": args.mean_words}
        if not os.path.exists(source):
            write_corpus(source, args)
        results["corpus_mb"] = round(os.path.getsize(source) / 1e6, 1)
        results.update(add_phase(path, source, args))
        argv = [sys.executable, __file__, "--query-only", path, *sys.argv[1:]]
        out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
        results.update(json.loads(out.splitlines()[-1]))
        if args.peer_docs:
            results.update(datasketch_phase(args))
    rows = [{"measure": k, "value": v} for k, v in results.items()]
    common.print_table(rows, [("measure", "measure", ""), ("value", "value", "")], "index")
    if args.json:
        common.write_json(args.json, {"machine": common.machine(), **results})


if __name__ == "__main__":
    main()
