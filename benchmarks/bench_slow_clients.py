"""Slowloris against `neardup serve`: how long an honest client waits while slow ones hold on.

Run (loopback only; each case about 10 s, bounded by --requests):

    python benchmarks/bench_slow_clients.py --json benchmarks/results/slow_clients.json
    python benchmarks/bench_slow_clients.py --cases 3000x1 --requests 10     # one case

For each case ``NxK`` a fresh ``neardup serve --token`` over an empty index starts on a free
loopback port, and ``python -m neardup.testing.slow_clients`` (a process of its own) opens N
connections from K source addresses 127.0.0.2... (N/K per address); each sends the start of a
request, then a header line every 2 s, and is opened again at the next tick when the server
drops it. After 2.5 s the honest client (127.0.0.1) sends ``--requests`` authenticated
``GET /stats``, each on a new connection, 0.3 s apart, and times each (connect to last byte).
Reported per case: statuses, latency p50 / max, the slow clients' connections opened and
dropped by the server, the server's CPU seconds, and its exit code after SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

common.ensure_neardup()

from neardup import Index  # noqa: E402
from neardup.service_connections import raise_open_file_limit  # noqa: E402

TOKEN = "bench-token"


def start_server(path: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``neardup serve`` on a free port; the process and its port (read from its first line)."""
    cmd = [sys.executable, "-m", "neardup.cli", "serve", str(path), "--port", "0"]
    with open(log, "wb") as err:
        proc = subprocess.Popen([*cmd, "--token", TOKEN], stderr=err)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = log.read_text()
        if "serving" in text:
            return proc, int(text.split(" at ", 1)[1].split(" ", 1)[0].rsplit(":", 1)[1])
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {text}")
        time.sleep(0.1)
    raise SystemExit("server did not start within 120 s")


def ask(port: int) -> tuple[int, float]:
    """One authenticated GET /stats on a new connection: (status, seconds)."""
    request = (
        f"GET /stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    return int(got.split(b" ", 2)[1]), time.perf_counter() - started


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_case(n: int, addresses: int, requests: int, folder: Path) -> dict[str, object]:
    path = folder / f"slow-{n}x{addresses}.db"
    Index.create(str(path)).close()
    server, port = start_server(path, folder / f"slow-{n}x{addresses}.log")
    time.sleep(0.5)
    sources = ",".join(f"127.0.0.{2 + i}" for i in range(addresses))
    cmd = [sys.executable, "-m", "neardup.testing.slow_clients", "127.0.0.1", str(port), str(n)]
    slow = subprocess.Popen(
        [*cmd, "--sources", sources], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert slow.stdin is not None and slow.stdout is not None
    try:
        slow.stdout.readline()  # {"started": n}
        time.sleep(2.5)
        answers = []
        for _ in range(requests):
            answers.append(ask(port))
            time.sleep(0.3)
    finally:
        slow.stdin.close()
        counts = json.loads(slow.stdout.readline() or "{}")
        slow.wait(timeout=60)
        cpu = cpu_seconds(server.pid)
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
    seconds = sorted(s for _, s in answers)
    log = (folder / f"slow-{n}x{addresses}.log").read_text()
    return {
        "slow_connections": n,
        "source_addresses": addresses,
        "statuses": sorted({status for status, _ in answers}),
        "answered_200": sum(status == 200 for status, _ in answers),
        "requests": requests,
        "p50_s": round(seconds[len(seconds) // 2], 3),
        "max_s": round(seconds[-1], 3),
        "slow_connects": counts.get("connects"),
        "slow_dropped": counts.get("dropped"),
        "server_cpu_s": round(cpu, 2),
        "server_exit": code,
        "tracebacks_in_log": log.count("Traceback"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="600x1,3000x1,3000x30", help="NxK, comma-separated")
    ap.add_argument("--requests", type=int, default=20, help="honest requests per case [20]")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    raise_open_file_limit()
    results = []
    with tempfile.TemporaryDirectory(prefix="neardup-slow-") as tmp:
        for case in args.cases.split(","):
            n, k = (int(x) for x in case.split("x"))
            result = run_case(n, k, args.requests, Path(tmp))
            print(json.dumps(result), flush=True)
            results.append(result)
    if args.json:
        common.write_json(Path(args.json), {"machine": common.machine(), "results": results})


if __name__ == "__main__":
    main()
