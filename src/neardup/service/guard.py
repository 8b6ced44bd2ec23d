"""What a request must carry and may ask, checked before any endpoint runs: the bearer token,
the body's size and the time it takes to arrive (``Limits``)."""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ParamError
from .errors import error_response


@dataclass(frozen=True)
class Limits:
    """What one request may ask: body bytes, documents (or ids) per batch, seconds to wait."""

    max_body: int = 16 * 1024 * 1024
    max_batch: int = 1000
    timeout: float = 30.0
    readers: int = 2

    def __post_init__(self) -> None:
        for name in ("max_body", "max_batch", "readers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParamError(f"{_named(name)} must be a positive integer, got {value!r}")
        if not isinstance(self.timeout, int | float) or not 0 < self.timeout < 86400:
            raise ParamError(
                f"{_named('timeout')} must be a number of seconds above 0 and below a day, got "
                f"{self.timeout!r}"
            )


def _named(field: str) -> str:
    """A limit as messages name it: the field and the ``neardup serve`` option that sets it."""
    return f"{field} (--{field.replace('_', '-')})"


class _Refused(HTTPException):
    """A request refused before an endpoint ran (size, time); FastAPI passes it through.

    The answer closes the connection: the rest of the body is never read."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message, {"Connection": "close"})


_NEEDS_TOKEN = (
    "this service needs a token: send the header 'Authorization: Bearer TOKEN' with the token "
    "it was started with (--token or --token-file)"
)
_WRONG_TOKEN = (
    "wrong token: the token after 'Authorization: Bearer' is not the one this service was "
    "started with (--token or --token-file); check it for a typo or a stale copy"
)


class Guard:
    """Bearer token, body size limit and body deadline, checked before any endpoint runs.

    Paths in ``open_paths`` (the health probe, the API docs and schema) need no token."""

    def __init__(
        self, app: ASGIApp, token: str | None, limits: Limits, open_paths: frozenset[str]
    ) -> None:
        self.app = app
        self.token = None if token is None else token.encode()
        self.limits = limits
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        if self.token is not None and scope["path"] not in self.open_paths:
            refusal = _auth_refusal(headers.get(b"authorization"), self.token)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        limit = self.limits.max_body
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await error_response(413, "ServiceError", _too_big(limit), {"Connection": "close"})(
                scope, receive, send
            )
            return
        received = 0
        timeout = self.limits.timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout  # the whole body, however it is cut into pieces

        async def guarded() -> Message:
            nonlocal received
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                raise _Refused(
                    408,
                    f"the request body did not all arrive within {timeout:g}s (--timeout); "
                    "send it whole and at once",
                ) from None
            received += len(message.get("body", b""))
            if received > limit:
                raise _Refused(413, _too_big(limit))
            return message

        await self.app(scope, guarded, send)


def _auth_refusal(header: bytes | None, token: bytes) -> JSONResponse | None:
    """None when ``header`` carries the token; else a 401 saying whether it was missing,
    malformed or wrong (``WWW-Authenticate`` as RFC 6750 puts it)."""
    if header is None or not header.strip():
        return error_response(401, "ServiceError", _NEEDS_TOKEN, {"WWW-Authenticate": "Bearer"})
    scheme, _, value = header.strip().partition(b" ")
    if scheme.lower() != b"bearer" or not value.strip():
        got = (
            "has no token after 'Bearer'"
            if scheme.lower() == b"bearer"
            else f"uses the scheme {scheme.decode('latin-1')[:20]!r}, not 'Bearer'"
        )
        return error_response(
            401,
            "ServiceError",
            f"the Authorization header {got}; this service needs a token: send the header "
            "'Authorization: Bearer TOKEN' with the token it was started with (--token or "
            "--token-file)",
            {"WWW-Authenticate": 'Bearer error="invalid_request"'},
        )
    if hmac.compare_digest(value.strip(), token):
        return None
    return error_response(
        401, "ServiceError", _WRONG_TOKEN, {"WWW-Authenticate": 'Bearer error="invalid_token"'}
    )


def _too_big(limit: int) -> str:
    return (
        f"the request body is larger than the limit of {limit:,} bytes (--max-body); "
        "split it into smaller batches"
    )


def declare_bearer(app: FastAPI, open_paths: frozenset[str]) -> None:
    """Say in the OpenAPI schema which endpoints need the token, so /docs can send it."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()  # kept by FastAPI as app.openapi_schema
        schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
        schemes["bearer"] = {"type": "http", "scheme": "bearer"}
        for path, operations in schema.get("paths", {}).items():
            if path not in open_paths:
                for operation in operations.values():
                    operation["security"] = [{"bearer": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
