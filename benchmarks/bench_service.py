"""Load test: `neardup serve` on loopback, 16 concurrent clients mixing queries and adds.

Run (loopback only; bounded by --seconds and --max-requests):

    python benchmarks/bench_service.py --docs 1000000 --json benchmarks/results/service.json
    python benchmarks/bench_service.py --docs 20000 --seconds 10      # quick look

The index (``--docs`` generated documents, as in bench_index.py: threshold 0.8, ``--verify
sketch``) is built once with ``Index.add`` in batches of 5,000 and kept at ``--index-path``, so
later runs reuse it. Before each run it is compacted (``Index.compact``, as ``neardup index
compact`` does: the adds of earlier runs left small segments; ``--as-built`` serves it as it
is). Then ``neardup serve`` starts on a free loopback port and ``--clients``
threads, each with its own HTTP connection (``neardup.Client``), send requests for
``--seconds``: a single-document add with probability ``--add-share`` (new ids), otherwise a
single-document query (half near copies of indexed documents, half new text). Reported:
requests and errors, throughput, latency p50/p99 per kind (client-side, HTTP included).
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # before numba is imported: one thread

import argparse
import json
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

import common

common.ensure_neardup()

from bench_index import corpus, queries  # noqa: E402
from neardup import Client, DedupParams, Index  # noqa: E402


def build(path: Path, n: int, mean_words: int, batch: int = 5000) -> dict[str, float]:
    """Build the index once (kept for later runs; built under a temporary name)."""
    if path.exists():
        return {}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".building")
    for p in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        p.unlink(missing_ok=True)
    started = time.perf_counter()
    index = Index.create(str(tmp), DedupParams(threshold=0.8, verify="sketch"))
    ids: list[str] = []
    texts: list[str] = []
    done = 0
    for doc_id, text in corpus(n, mean_words):
        ids.append(doc_id)
        texts.append(text)
        if len(ids) == batch:
            index.add(ids, texts)
            done += len(ids)
            ids, texts = [], []
            if done % (batch * 20) == 0:
                rate = done / (time.perf_counter() - started)
                print(f"  built {done:,} ({rate:,.0f} docs/s)", file=sys.stderr, flush=True)
    if ids:
        index.add(ids, texts)
    index.close()
    seconds = time.perf_counter() - started
    tmp.rename(path)
    return {"build_seconds": round(seconds, 1), "build_docs_per_s": round(n / seconds)}


def compact(path: Path) -> dict[str, float]:
    """``Index.compact`` as a user would run it before serving (``neardup index compact``):
    one segment per family, so a query reads one run per key."""
    started = time.perf_counter()
    index = Index.open(str(path))
    try:
        done = index.compact()
    finally:
        index.close()
    return {
        "segments_before": done.segments_before,
        "segments_served": done.segments_after,
        "compact_seconds": round(time.perf_counter() - started, 1),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(path: Path, port: int, readers: int | None = None) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "neardup.cli", "serve", str(path), "--port", str(port)]
    if readers is not None:
        cmd += ["--readers", str(readers)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    client = Client(f"http://127.0.0.1:{port}", timeout=5.0)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            client.health()
            client.close()
            return proc
        except Exception:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start within 120 s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(
    args: argparse.Namespace, port: int, qs: list[str], new_texts: list[str]
) -> dict[str, object]:
    """--clients threads, each its own connection, for --seconds (or --max-requests in all)."""
    stop_at = time.perf_counter() + args.seconds
    budget = threading.Semaphore(args.max_requests)
    lat: dict[str, list[float]] = {"query": [], "add": []}
    errors: list[str] = []
    lock = threading.Lock()
    counter = iter(range(10**9))

    def client_loop(seed: int) -> None:
        rng = random.Random(seed)
        client = Client(f"http://127.0.0.1:{port}", timeout=30.0)
        mine: dict[str, list[float]] = {"query": [], "add": []}
        try:
            while time.perf_counter() < stop_at and budget.acquire(blocking=False):
                kind = "add" if rng.random() < args.add_share else "query"
                t = time.perf_counter()
                try:
                    if kind == "add":
                        with lock:
                            k = next(counter)
                        client.add([f"load-{k}"], [new_texts[k % len(new_texts)] + f" n{k}"])
                    else:
                        client.query([qs[rng.randrange(len(qs))]])
                except Exception as exc:  # counted and reported, never hidden
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                mine[kind].append(time.perf_counter() - t)
        finally:
            client.close()
            with lock:
                for k, v in mine.items():
                    lat[k].extend(v)

    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(args.clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    total = len(lat["query"]) + len(lat["add"])
    out: dict[str, object] = {
        "clients": args.clients,
        "seconds": round(seconds, 1),
        "requests": total,
        "errors": len(errors),
        "first_errors": errors[:5],
        "requests_per_s": round(total / seconds, 1),
    }
    for kind, values in lat.items():
        if values:
            out[f"{kind}_count"] = len(values)
            out[f"{kind}_p50_ms"] = round(float(np.percentile(values, 50)) * 1e3, 1)
            out[f"{kind}_p99_ms"] = round(float(np.percentile(values, 99)) * 1e3, 1)
            out[f"{kind}_per_s"] = round(len(values) / seconds, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--mean-words", type=int, default=80)
    ap.add_argument("--index-path", type=Path, help="[/tmp/neardup-bench/service-DOCS.db]")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-requests", type=int, default=200_000, help="stop after this many")
    ap.add_argument("--add-share", type=float, default=0.2, help="share of requests that add")
    ap.add_argument("--readers", type=int, help="the server's --readers [its default]")
    ap.add_argument(
        "--as-built",
        action="store_true",
        help="serve the index as built and added to (its segments as they are), not compacted",
    )
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    path = args.index_path or Path(f"/tmp/neardup-bench/service-{args.docs}.db")
    result: dict[str, object] = {"docs": args.docs, "index": str(path)}
    result.update(build(path, args.docs, args.mean_words))
    if not args.as_built:
        result.update(compact(path))
    if args.build_only:
        print(json.dumps(result, indent=1))
        return
    qs = queries(args.docs, 2000, args.mean_words)
    new_texts = common.synthetic_texts(2000, seed=4242, mean_words=args.mean_words)
    port = free_port()
    server = start_server(path, port, args.readers)
    try:
        result["add_share"] = args.add_share
        result["readers"] = args.readers
        before_server, before_here = cpu_seconds(server.pid), cpu_seconds(os.getpid())
        result.update(load(args, port, qs, new_texts))
        result["server_cpu_s"] = round(cpu_seconds(server.pid) - before_server, 1)
        result["load_generator_cpu_s"] = round(cpu_seconds(os.getpid()) - before_here, 1)
    finally:
        server.terminate()
        server.wait(timeout=60)
    result["server_exit"] = server.returncode
    result["machine"] = common.machine()
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
