"""``neardup serve PATH``: the index as an HTTP service (FastAPI, uvicorn) on a socket of ours,
whose accept() keeps the connection caps."""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import sys
from typing import Any

from ..errors import NeardupError, ParamError
from ..run import parse_size
from .output import warn

try:
    import uvicorn

    from ..service import Limits, create_app
    from ..service_connections import (
        ConnectionLimits,
        guarded_protocol,
        raise_open_file_limit,
        screened_socket,
        total_connections,
    )
except ImportError as exc:  # the service extra is not installed: one line, not a traceback
    raise NeardupError(
        f"neardup serve needs fastapi and uvicorn ({exc}); install them with: "
        "pip install 'neardup[service]'"
    ) from None


def run(args: argparse.Namespace) -> int:
    """Check the index, listen, serve until SIGTERM or Ctrl-C; exit 0 after a clean stop."""
    token = _token(args)
    limits = Limits(
        max_body=_size("--max-body", args.max_body),
        max_batch=args.max_batch,
        timeout=args.timeout,
        readers=args.readers,
    )
    connection_limits = ConnectionLimits(
        header_timeout=args.header_timeout,
        per_client=args.max_client_connections,
        total=args.max_connections,
    )
    app = create_app(args.path, token, limits, open_docs=not args.docs_need_token)
    raise_open_file_limit()  # thousands of idle sockets must not exhaust file descriptors
    if not os.access(args.path, os.W_OK):
        warn(f"{args.path} is read-only: queries work, writes will be refused")
    sock = listen(args.host, args.port)
    if not _loopback(args.host) and token is None:
        warn(
            f"listening on {args.host} without --token: anyone who can reach this port can "
            "read and change the index"
        )
    protocol = guarded_protocol(
        connection_limits, total_connections(connection_limits, args.readers)
    )
    sock = screened_socket(sock, protocol)
    server = uvicorn.Server(_config(app, args, protocol))
    _announce(args, sock, token)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the stopping signal once it has shut down
        pass
    finally:
        sock.close()
    if not server.started:
        raise NeardupError(f"the service over {args.path} could not start; see the log above")
    sys.stderr.write("neardup: serve stopped; every answered write is committed\n")
    return 0


def _size(flag: str, text: str) -> int:
    """A size option (16M, 512K, bytes) in bytes, as the other size options read them."""
    try:
        return parse_size(text)
    except ParamError as exc:
        raise ParamError(f"{flag}: {exc}") from None


def _token(args: argparse.Namespace) -> str | None:
    """--token, or the contents of --token-file."""
    if args.token_file is None:
        return args.token
    try:
        with open(args.token_file, encoding="utf-8") as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise NeardupError(f"cannot read --token-file {args.token_file}: {exc}") from None


def _loopback(host: str) -> bool:
    """True when ``host`` is reachable from this machine only."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), or one clear error (address in use, unknown host)."""
    if not 0 <= port <= 65535:
        raise ParamError(f"--port must be from 0 to 65535, got {port}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )[0]
    except socket.gaierror as exc:
        raise ParamError(f"--host {host!r} is not an address here ({exc.strerror})") from None
    # proto IPPROTO_TCP, not 0: asyncio then sets TCP_NODELAY on accepted connections (without
    # it every answer waits for the client's delayed ACK)
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(4096)  # bursts of connections wait in the kernel, not refused
    except OSError as exc:
        sock.close()
        raise NeardupError(
            f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port, or stop "
            "what is using it"
        ) from None
    return sock


def _config(app: Any, args: argparse.Namespace, protocol: Any) -> uvicorn.Config:
    """uvicorn's configuration: our h11 protocol, asyncio, a graceful stop after --timeout."""
    return uvicorn.Config(
        app,
        log_level="info" if args.access_log else "warning",
        access_log=args.access_log,
        timeout_graceful_shutdown=int(args.timeout) + 5,
        timeout_keep_alive=5,
        http=protocol,
        ws="none",
        loop="asyncio",  # the caps are kept in the socket's accept(), which uvloop does not call
    )


def _announce(args: argparse.Namespace, sock: Any, token: str | None) -> None:
    """The line saying where the service listens and how to stop it."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    docs = "API docs at /docs"
    if token is not None:
        docs += ", with the token" if args.docs_need_token else "; it and /health need no token"
    sys.stderr.write(
        f"neardup: serving {args.path} at http://{shown}:{port} ({docs}); "
        "stop with Ctrl-C or SIGTERM\n"
    )
    sys.stderr.flush()
