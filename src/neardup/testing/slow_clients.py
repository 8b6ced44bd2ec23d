"""Slow HTTP clients (slowloris) against a server, for tests and benchmarks of the service.

``SlowClients(host, port, n)`` keeps ``n`` connections open from ``sources`` (loopback
addresses other than the honest client's 127.0.0.1, taken in turn: one address is one client to
per-client limits, many are a botnet). Each sends the start of a request and then, every
``interval`` seconds, one more header line (``mode="headers"``) or one more byte of a large
declared body (``mode="body"``, with complete headers); a connection the server drops is opened
again at the next tick, as a real attacker would. One thread drives every socket (non-blocking).

``python -m neardup.testing.slow_clients HOST PORT N [--sources A,B] [--mode body] [--header K:V]``
runs them in a process of their own (so they do not share the GIL with the client measured)
until stdin closes, then prints one JSON line of counts.
"""

from __future__ import annotations

import argparse
import errno
import json
import socket
import sys
import threading
from collections.abc import Sequence
from types import TracebackType

_NOT_YET = (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOTCONN, errno.EINPROGRESS, errno.EALREADY)


class _Conn:
    __slots__ = ("sock", "started")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.started = False


class SlowClients:
    """``n`` slowloris connections to ``host:port`` from ``source``, kept open by one thread."""

    def __init__(
        self,
        host: str,
        port: int,
        n: int,
        *,
        sources: Sequence[str] = ("127.0.0.2",),
        interval: float = 2.0,
        mode: str = "headers",
        headers: dict[str, str] | None = None,
    ) -> None:
        if mode not in ("headers", "body"):
            raise ValueError(f"mode must be 'headers' or 'body', not {mode!r}")
        self.address = (host, port)
        self.n = n
        self.sources = list(sources)
        self.interval = interval
        self.mode = mode
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        if mode == "body":
            self._start = (
                f"POST /add HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: 1000000\r\n{extra}\r\n" + '{"documents": ['
            ).encode()
            self._more = b" "
        else:
            self._start = f"GET /stats HTTP/1.1\r\nHost: {host}\r\n{extra}".encode()
            self._more = b"X-Slow: a\r\n"
        self.connects = 0  # connections opened, the first n included
        self.dropped = 0  # connections the server closed
        self._conns: list[_Conn] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow-clients", daemon=True)

    def __enter__(self) -> SlowClients:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Open the n connections (each sends its request's start at once) and start ticking."""
        for _ in range(self.n):
            self._conns.append(self._open())
        self._tick()
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking and close every connection."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        for conn in self._conns:
            conn.sock.close()
        self._conns.clear()

    def _open(self) -> _Conn:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.bind((self.sources[self.connects % len(self.sources)], 0))
        sock.connect_ex(self.address)
        self.connects += 1
        return _Conn(sock)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._tick()

    def _tick(self) -> None:
        for i, conn in enumerate(self._conns):
            if not self._alive(conn):
                conn.sock.close()
                self.dropped += 1
                self._conns[i] = conn = self._open()
            try:
                conn.sock.send(self._more if conn.started else self._start)
                conn.started = True
            except OSError as exc:
                if exc.errno not in _NOT_YET:
                    conn.sock.close()
                    self.dropped += 1
                    self._conns[i] = self._open()

    def _alive(self, conn: _Conn) -> bool:
        """False once the server has closed the connection (an answer read and dropped)."""
        if not conn.started:
            return True
        try:
            while data := conn.sock.recv(65536):
                del data
            return False  # end of stream
        except OSError as exc:
            return exc.errno in _NOT_YET


def main(argv: Sequence[str] | None = None) -> int:
    """Run slow clients until stdin closes; print their counts as one JSON line."""
    from ..service_connections import raise_open_file_limit

    ap = argparse.ArgumentParser(prog="python -m neardup.testing.slow_clients")
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--sources", default="127.0.0.2", help="comma-separated source addresses")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--mode", choices=("headers", "body"), default="headers")
    ap.add_argument("--header", action="append", default=[], help="NAME:VALUE, repeatable")
    args = ap.parse_args(argv)
    raise_open_file_limit(args.n + 256)
    headers = dict(h.split(":", 1) for h in args.header)
    slow = SlowClients(
        args.host,
        args.port,
        args.n,
        sources=args.sources.split(","),
        interval=args.interval,
        mode=args.mode,
        headers={k.strip(): v.strip() for k, v in headers.items()},
    )
    with slow:
        print(json.dumps({"started": slow.n}), flush=True)
        sys.stdin.read()
        counts = {"connects": slow.connects, "dropped": slow.dropped}
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
