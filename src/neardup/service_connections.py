"""TCP connections -> HTTP requests for the service, with slow and surplus connections dropped.

uvicorn's own HTTP/1.1 protocol (h11) has no deadline for a request's head: a client that
sends a header line now and then (slowloris) holds a connection for ever, and its
``limit_concurrency`` then answers 503 to everyone. Here, instead:

- ``guarded_protocol(limits, total)``, the h11 protocol class given to uvicorn (``http=``):
  the head of each request (request line and headers) must arrive within ``header_timeout``
  seconds of the connection opening or of its first byte after an answer, else 408 and close;
  a connection answered before its request body was all read (401, 408, 413) is closed, so
  trickling the rest of a body does not keep it; on shutdown a request whose body is still
  arriving (no endpoint has run) is answered 503 and closed, so a stop neither waits for slow
  uploads nor cancels them with tracebacks.
- ``screened_socket(sock, protocol)``, the listening socket given to uvicorn: its ``accept``
  enforces the caps before asyncio builds a transport, so refusing costs a few microseconds
  and a burst of thousands of connections does not queue an honest one for seconds. A client
  (peer IP) holds at most ``per_client`` connections: one more closes the client's oldest idle
  keep-alive connection, or is refused with 503 (its slow ones are cut by the head deadline).
  All clients hold at most ``total``: one more closes the oldest connection that no endpoint is
  answering (waiting for a head or a body, or idle) of the client holding the most, and is
  refused only when every connection is being answered.

Slow bodies are cut by the app (``service._Guard``: the whole body within ``--timeout``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import resource
import socket
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .errors import ParamError


@dataclass(frozen=True)
class ConnectionLimits:
    """Seconds for a request's head to arrive; connections per client (peer IP) and in all."""

    header_timeout: float = 10.0
    per_client: int = 128
    total: int | None = None  # None: what the open-file limit leaves room for

    def __post_init__(self) -> None:
        if not isinstance(self.header_timeout, int | float) or not 0 < self.header_timeout < 3600:
            raise ParamError(
                "header_timeout (--header-timeout) must be a number of seconds above 0 and "
                f"below an hour, got {self.header_timeout!r}"
            )
        for name, flag in (
            ("per_client", "--max-client-connections"),
            ("total", "--max-connections"),
        ):
            value = getattr(self, name)
            if value is None and name == "total":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParamError(f"{name} ({flag}) must be a positive integer, got {value!r}")


def raise_open_file_limit(needed: int | None = None) -> int:
    """Raise the soft RLIMIT_NOFILE to ``needed`` (or the hard limit); the soft limit after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if needed is None else needed
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        soft = want
    return int(soft)


def total_connections(limits: ConnectionLimits, readers: int) -> int:
    """The cap on open connections: ``limits.total``, or the open-file limit less a reserve
    for the index's files and the server's own (accept() failing with EMFILE stalls every
    client for a second, so the cap stays below it)."""
    if limits.total is not None:
        return limits.total
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(16, int(soft) - 64 - 4 * (readers + 1))


class _Registry:
    """Connections held by each client (admitted at accept, joined by their protocol)."""

    def __init__(self, per_client: int, total: int) -> None:
        self.per_client = per_client
        self.total = total
        self.count = 0
        self.held: dict[str, int] = {}  # per peer IP: admitted, joined or not yet
        self.pending: dict[int, str] = {}  # file descriptor -> peer: admitted, not joined
        self.by_client: dict[str, dict[GuardedH11Protocol, None]] = {}  # joined, oldest first
        self.idle: dict[str, dict[GuardedH11Protocol, None]] = {}  # between requests, oldest first

    def admit(self, fd: int, peer: str) -> str | None:
        """Count a connection just accepted, closing others to keep the caps; or say why not."""
        stale = self.pending.pop(fd, None)  # accepted, then failed before its protocol ran
        if stale is not None:
            self._release(stale)
        if self.held.get(peer, 0) >= self.per_client and not self._close_oldest_idle(peer):
            return (
                f"{peer} already has {self.per_client:,} connections open "
                f"(--max-client-connections {self.per_client:,}); send requests on the ones "
                "it has, or wait for them to close"
            )
        if self.count >= self.total:
            busiest = sorted(self.by_client, key=lambda p: self.held.get(p, 0), reverse=True)
            if not any(_close_oldest(self.by_client[p]) for p in busiest):
                return (
                    f"the service has {self.count:,} connections open, each being answered "
                    f"(--max-connections {self.total:,}); send the request again later"
                )
        self.held[peer] = self.held.get(peer, 0) + 1
        self.count += 1
        self.pending[fd] = peer
        return None

    def join(self, conn: GuardedH11Protocol, fd: int, peer: str) -> str:
        """Register the protocol of an admitted connection; its peer as admitted."""
        admitted = self.pending.pop(fd, None)
        if admitted is None:  # not accepted through a screened socket: counted now
            admitted = peer
            self.held[peer] = self.held.get(peer, 0) + 1
            self.count += 1
        self.by_client.setdefault(admitted, {})[conn] = None
        return admitted

    def now_idle(self, conn: GuardedH11Protocol, idle: bool) -> None:
        """Note that ``conn`` waits for a next request (``idle``), or no longer does."""
        if idle:
            self.idle.setdefault(conn.peer, {})[conn] = None
        elif (waiting := self.idle.get(conn.peer)) is not None and conn in waiting:
            del waiting[conn]
            if not waiting:
                del self.idle[conn.peer]

    def _close_oldest_idle(self, peer: str) -> bool:
        waiting = self.idle.get(peer)
        if not waiting:
            return False
        next(iter(waiting)).drop()
        return True

    def leave(self, conn: GuardedH11Protocol) -> None:
        self.now_idle(conn, False)
        group = self.by_client.get(conn.peer)
        if group is not None and conn in group:
            del group[conn]
            if not group:
                del self.by_client[conn.peer]
            self._release(conn.peer)

    def _release(self, peer: str) -> None:
        self.count -= 1
        self.held[peer] -= 1
        if not self.held[peer]:
            del self.held[peer]


def _close_oldest(group: dict[GuardedH11Protocol, None]) -> bool:
    """Close the oldest connection of ``group`` that no endpoint is answering; True if any."""
    for conn in group:
        if conn.evictable():
            conn.drop()
            return True
    return False


class ScreenedSocket(socket.socket):
    """A listening socket whose ``accept`` refuses connections over the caps on the spot."""

    registry: _Registry | None = None

    def accept(self) -> tuple[socket.socket, Any]:
        while True:  # BlockingIOError once none is waiting: asyncio then waits for more
            conn, address = super().accept()
            if self.registry is None:
                return conn, address
            refused = self.registry.admit(conn.fileno(), str(address[0]))
            if refused is None:
                return conn, address
            with contextlib.suppress(OSError):
                conn.setblocking(False)
                conn.send(_raw_response(503, "Service Unavailable", refused))
            conn.close()


def screened_socket(sock: socket.socket, protocol: type[GuardedH11Protocol]) -> ScreenedSocket:
    """``sock`` (listening) as a ``ScreenedSocket`` admitting for ``protocol``'s registry."""
    screened = ScreenedSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
    screened.registry = protocol.registry
    return screened


@functools.lru_cache(maxsize=256)  # refusing thousands of connections costs one encoding
def _raw_response(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, written outside h11's state."""
    body = json.dumps({"error": {"type": "ServiceError", "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


#: How much of a request head is kept to say what is wrong with it (h11's own limit is 16 KiB).
_HEAD_KEPT = 16 * 1024


def _malformed(head: bytes) -> tuple[int, str, str]:
    """(status, reason, message) for a request head h11 refused, read again to learn why."""
    status, why = 400, ""
    if head:  # empty: the head is not known (it came with an earlier request); b"" means EOF
        probe = h11.Connection(h11.SERVER)
        probe.receive_data(head)
        try:
            while not isinstance(probe.next_event(), h11.Request | h11.ConnectionClosed | type):
                pass  # NEED_DATA and PAUSED are types (sentinels): the head is not all here
        except h11.RemoteProtocolError as exc:
            status, why = exc.error_status_hint, str(exc)
    declared = re.findall(rb"(?im)^content-length[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\r?$", head)
    if "Content-Length" in why and declared and all(v.isdigit() for v in declared):
        return (
            413,
            "Content Too Large",
            f"the request's Content-Length ({_shown(declared[0])}) is larger than any body this "
            "service takes (--max-body); split it into smaller batches",
        )
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Bad Request"
    said = f" ({why})" if why else ""
    return (
        status,
        reason,
        f"the request is not valid HTTP/1.1{said}; send a request line such as 'POST /query "
        "HTTP/1.1', headers with Host and a Content-Length of digits, then the body",
    )


def _shown(digits: bytes) -> str:
    return (
        digits.decode()
        if len(digits) <= 30
        else f"{digits[:30].decode()}... ({len(digits)} digits)"
    )


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a head deadline, per-client and total caps, quick stop."""

    limits: ConnectionLimits = ConnectionLimits()
    registry: _Registry = _Registry(ConnectionLimits.per_client, 1 << 20)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.peer = ""
        self._head_timer: Any = None
        self._registered = False
        self._head = bytearray()  # the bytes of the request head arriving, to say what is wrong

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        raw = transport.get_extra_info("socket")
        fd = raw.fileno() if raw is not None else -1
        self.peer = self.registry.join(self, fd, self.client[0] if self.client else "")
        self._registered = True
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        self._leave()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.registry.now_idle(self, False)
        if self.conn.their_state is h11.IDLE:
            self._arm_head_timer()  # the next request's head starts now (if not already)
            if len(self._head) < _HEAD_KEPT:
                self._head += data[: _HEAD_KEPT - len(self._head)]
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm_head_timer()
            self._head.clear()

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse: a JSON error saying what is wrong (uvicorn's own answer
        is an empty text/plain 400), 413 for a Content-Length too large to be a number."""
        self._close_with(*_malformed(bytes(self._head)))

    def on_response_complete(self) -> None:
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.transport.close()  # answered before the body was read: do not wait for it
            return
        super().on_response_complete()
        cycle = self.cycle  # a pipelined request may have started a next one
        if cycle.response_complete and self._head_timer is None and self._registered:
            self.registry.now_idle(self, True)

    def shutdown(self) -> None:
        if self._body_arriving():
            self._close_with(
                503,
                "Service Unavailable",
                "the service is stopping and this request's body had not all arrived; nothing "
                "was done; send it again when the service is back",
            )
            return
        super().shutdown()

    def evictable(self) -> bool:
        """True when no endpoint is answering: waiting for a head or a body, or idle."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or self._body_arriving()

    def drop(self) -> None:
        """Close now (evicted to make room); a request whose body is arriving gets 503."""
        if self._body_arriving():
            self._close_with(
                503,
                "Service Unavailable",
                "too many connections: this one, still sending its request body, was closed; "
                "nothing was done; send the request again",
            )
        else:
            self._leave()
            self.transport.close()

    def _body_arriving(self) -> bool:
        cycle = self.cycle
        return (
            cycle is not None
            and not cycle.response_started
            and not cycle.response_complete
            and self.conn.their_state is h11.SEND_BODY
        )

    def _leave(self) -> None:
        if self._registered:
            self._registered = False
            self.registry.leave(self)

    def _close_with(self, status: int, reason: str, message: str) -> None:
        self._leave()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app's answer, if it comes, goes nowhere
            self.cycle.message_event.set()
        if not self.transport.is_closing():
            self.transport.write(_raw_response(status, reason, message))
            self.transport.close()

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_too_slow)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE:
            self._close_with(
                408,
                "Request Timeout",
                f"the request's headers did not all arrive within "
                f"{self.limits.header_timeout:g}s (--header-timeout); send the whole request "
                "at once",
            )


def guarded_protocol(limits: ConnectionLimits, total: int) -> type[GuardedH11Protocol]:
    """The protocol class for one server: ``limits`` and one registry shared by its connections."""

    class NeardupH11Protocol(GuardedH11Protocol):
        pass

    NeardupH11Protocol.limits = limits
    NeardupH11Protocol.registry = _Registry(limits.per_client, total)
    return NeardupH11Protocol
