"""Errors as JSON ``{"error": {"type", "message"}}``: the status of each ``neardup.errors``
class, and messages for bodies FastAPI refused that say where they are wrong and what fits."""

from __future__ import annotations

import logging
import re
import sys
import typing
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import (
    IndexCorrupt,
    IndexMismatchError,
    InputError,
    NeardupError,
    OutputError,
    ParamError,
    UnknownIdError,
)
from .models import PARAMETERS, WHERE_INSIDE

log = logging.getLogger("neardup.service")


def error_response(
    status: int, kind: str, message: str, headers: Mapping[str, str] | None = None
) -> Any:
    return JSONResponse(
        {"error": {"type": kind, "message": message}}, status_code=status, headers=headers
    )


def _status_of(exc: NeardupError) -> int:
    if isinstance(exc, UnknownIdError):
        return 404
    if isinstance(exc, InputError | ParamError):
        return 400
    if isinstance(exc, IndexMismatchError):
        return 409
    if isinstance(exc, IndexCorrupt):
        return 500  # the index is damaged: neardup index check names what, repair fixes it
    if isinstance(exc, OutputError):
        return 507  # no room to write the batch: it was rolled back
    return 409  # the index's state refuses the request (another writer, no stored texts)


def _validation_message(
    exc: RequestValidationError, model: type[BaseModel] | None
) -> tuple[int, str, str]:
    """(status, error type, message) for a request FastAPI refused: where it is wrong, what
    came, what fits. Parameters of the call (``models.PARAMETERS``) are ParamError, 400, as
    ``Index`` raises; documents and the body itself are InputError."""
    problems = exc.errors()
    first = problems[0] if problems else {}
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "JSON decode error")
        pos = first.get("loc", ("body", 0))[-1]
        where = f"character {pos}"
        if isinstance(exc.body, str) and isinstance(pos, int):
            line = exc.body.count("\n", 0, pos) + 1
            where = f"line {line}, column {pos - exc.body.rfind(chr(10), 0, pos)}"
        message = f"the request body is not valid JSON ({reason} at {where}); send one JSON object"
        return 400, "InputError", message
    if isinstance(exc.body, bytes | bytearray):
        message = "the request body must be JSON; send it with Content-Type: application/json"
        return 400, "InputError", message
    if tuple(first.get("loc", ())) == ("body",) and model is not None:
        what = "empty" if first.get("type") == "missing" else _json_kind(first.get("input"))
        fields = _field_names(model)
        return (
            422,
            "InputError",
            f"the request body is {what}; send a JSON object with the fields {fields}",
        )
    shown = [_problem(p, model) for p in problems[:5]]
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    message = "; ".join(shown) + more + "; see /docs for the request schema"
    if problems and all(_is_parameter(p.get("loc", ())) for p in problems):
        return 400, "ParamError", message
    return 422, "InputError", message


def _is_parameter(loc: tuple[Any, ...]) -> bool:
    """Whether ``loc`` is a parameter of the call (a top-level field or query parameter)."""
    return len(loc) == 2 and loc[0] in ("body", "query") and loc[1] in PARAMETERS


def _problem(p: Mapping[str, Any], model: type[BaseModel] | None) -> str:
    """One refused field: where (``documents.0.id``), what is wrong with it, what came."""
    loc = [x for x in p.get("loc", ()) if x != "body"]
    loc = loc[1:] if loc[:1] == ["query"] else loc  # a query parameter: its name, as a field's
    where = ".".join(str(x) for x in loc) or "body"
    kind = p.get("type")
    parameters = (p.get("ctx") or {}).get("fields")
    if kind == "extra_forbidden" and parameters:  # a query parameter (routes._only_query)
        what = f"unknown query parameter (check its spelling); the parameters are {parameters}"
    elif kind == "extra_forbidden":
        what = "unknown field (check its spelling)"
        fits = _model_at(model, loc[:-1])
        if fits is not None:
            what += f"; the fields are {_field_names(fits)}"
    elif kind == "missing":
        what = "Field required"
    else:
        what = str(p.get("msg", "invalid")).removeprefix("Value error, ")
        if kind not in WHERE_INSIDE:
            what += f", got {_json_kind(p.get('input'))}"
    return f"{where}: {what}"


def _json_kind(value: object) -> str:
    """A JSON value as a reader would name it: ``a list``, ``the number 7``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}" + ("..." if len(value) > 40 else "")
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


def _field_names(model: type[BaseModel]) -> str:
    return ", ".join(
        f"{name} (required)" if field.is_required() else name
        for name, field in model.model_fields.items()
    )


def _model_at(model: type[BaseModel] | None, loc: list[Any]) -> type[BaseModel] | None:
    """The model of the object at ``loc`` (field names and list indexes) inside ``model``."""
    current: Any = model
    for step in loc:
        if isinstance(step, int):
            args = [a for a in typing.get_args(current) if a is not type(None)]
            current = args[0] if args else None
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(step))
            current = None if field is None else field.annotation
        else:
            return None
        args = [a for a in typing.get_args(current) if a is not type(None)]
        if typing.get_origin(current) is not list and len(args) == 1:
            current = args[0]  # X | None -> X
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unreadable_body(cause: BaseException | None) -> str:
    """What was wrong with a body that FastAPI could not parse (it says only that it could not)."""
    if isinstance(cause, UnicodeDecodeError):
        return (
            f"the request body is not valid {cause.encoding} text (byte "
            f"0x{cause.object[cause.start]:02x} at position {cause.start}: {cause.reason}); "
            "send JSON encoded as UTF-8"
        )
    if isinstance(cause, RecursionError):
        return (
            "the request body nests JSON lists or objects too deeply to read; send one JSON "
            "object with the fields given in /docs"
        )
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        digits = re.search(r"value has (\d+) digits", str(cause))
        has = f" (one has {digits[1]})" if digits else ""
        return (
            f"the request body holds a number with more than {sys.get_int_max_str_digits():,} "
            f"digits{has}, too long to read; send it as a string, or a shorter number"
        )
    if cause is not None and type(cause).__name__ == "ClientDisconnect":
        return "the client closed the connection before the request body had all arrived"
    return f"the request body could not be read as JSON ({type(cause).__name__}: {cause})"


def handle_errors(app: FastAPI, bodies: Mapping[str, type[BaseModel]]) -> None:
    """Answer every error in the JSON form; ``bodies``: the request model of each path."""

    @app.exception_handler(NeardupError)
    async def neardup_error(request: Request, exc: NeardupError) -> Any:
        return error_response(_status_of(exc), type(exc).__name__, str(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Any:
        message = str(exc.detail)
        if exc.status_code == 400 and message == "There was an error parsing the body":
            return error_response(400, "InputError", _unreadable_body(exc.__cause__))
        if exc.status_code == 404 and message == "Not Found":
            message = f"no endpoint at {request.url.path}; see /docs for the endpoints"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; see /docs"
        return error_response(exc.status_code, "ServiceError", message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Any:
        status, kind, message = _validation_message(exc, bodies.get(request.url.path))
        return error_response(status, kind, message)


class InternalErrors:
    """Answer an exception no handler took with a JSON 500 and log its traceback once.

    Starlette's own handler for ``Exception`` answers, then raises the exception again for the
    server, so uvicorn logged a second traceback ("Exception in ASGI application"); here it
    stops at this middleware."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            log.exception("internal error answering %s %s", scope["method"], scope["path"])
            if not started:  # else the answer is cut short: the server closes the connection
                await error_response(
                    500,
                    "ServiceError",
                    f"internal error ({type(exc).__name__}: {exc}); this is a bug in neardup, "
                    "please report it with the request",
                )(scope, receive, send)
