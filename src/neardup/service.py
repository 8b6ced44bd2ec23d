"""HTTP requests -> one ``Index`` method call each -> JSON: the standing index as a service.

``create_app(path, token)`` builds a FastAPI app over the SQLite index at ``path``; ``neardup
serve`` runs it with uvicorn. Writes go to one writer thread holding the only write connection,
so they are serialised and a write is answered only once it is committed; reads run on a few
reader threads with a connection each (SQLite WAL lets them read while the writer writes).

Safe by default: with a token every request needs ``Authorization: Bearer TOKEN``; bodies and
batches have size limits (413 stating the limit); reading a body and waiting for the index
have timeouts. Errors are JSON ``{"error": {"type": ..., "message": ...}}`` whose message says
what to fix; the ``type`` names the ``neardup.errors`` class, so the client raises it again.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import queue
import threading
import typing
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import __version__
from .errors import (
    IndexCorrupt,
    IndexMismatchError,
    InputError,
    NeardupError,
    OutputError,
    ParamError,
    UnknownIdError,
)
from .index import Index

T = TypeVar("T")
log = logging.getLogger("neardup.service")


@dataclass(frozen=True)
class Limits:
    """What one request may ask: body bytes, documents (or ids) per batch, seconds to wait."""

    max_body: int = 16 * 1024 * 1024
    max_batch: int = 1000
    timeout: float = 30.0
    readers: int = 4

    def __post_init__(self) -> None:
        for name in ("max_body", "max_batch", "readers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParamError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.timeout, int | float) or not 0 < self.timeout < 86400:
            raise ParamError(
                f"timeout must be a number of seconds above 0 and below a day, got {self.timeout!r}"
            )


# -- request and response bodies --------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Document(_Strict):
    """A document to add: its id (a URL for lost and found), text, metadata, last-seen date."""

    id: str
    text: str
    meta: dict[str, Any] | None = None
    date: str | None = None


class AddRequest(_Strict):
    documents: list[Document]


class QueryDocument(_Strict):
    """A query: its text, and an id echoed in the answer."""

    id: str | int | None = None
    text: str


class QueryRequest(_Strict):
    documents: list[QueryDocument]
    threshold: float | None = Field(None, description="at least the index's own threshold")
    limit: int | None = Field(None, ge=1, description="at most this many matches per query")


class IdsRequest(_Strict):
    ids: list[str]


class RetireRequest(_Strict):
    urls: list[str]
    date: str | None = None


class AddResponse(BaseModel):
    added: int
    replaced: int


class QueryResult(BaseModel):
    id: str | int | None
    matches: list[dict[str, Any]]


class QueryResponse(BaseModel):
    results: list[QueryResult]


# -- threads owning connections -----------------------------------------------------------------
_Job = tuple[Future[Any], Callable[[Index], Any]]


class _Lane:
    """Threads that each open their own ``Index`` and run jobs from one queue, in order."""

    def __init__(self, path: str, threads: int, name: str) -> None:
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        opened: list[Future[None]] = []
        for i in range(threads):
            ready: Future[None] = Future()
            t = threading.Thread(
                target=self._work, args=(path, ready), name=f"neardup-{name}-{i}", daemon=True
            )
            t.start()
            self._threads.append(t)
            opened.append(ready)
        try:
            for ready in opened:
                ready.result()
        except BaseException:
            self.close()
            raise

    def _work(self, path: str, ready: Future[None]) -> None:
        try:
            index = Index.open(path)
        except BaseException as exc:
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            while (item := self._jobs.get()) is not None:
                fut, job = item
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    fut.set_result(job(index))
                except BaseException as exc:
                    fut.set_exception(exc)
        finally:
            index.close()

    def submit(self, job: Callable[[Index], T]) -> Future[T]:
        fut: Future[T] = Future()
        self._jobs.put((fut, job))
        return fut

    def close(self) -> None:
        """Finish the queued jobs, then close every connection."""
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()


# -- errors -----------------------------------------------------------------------------------
def _error(status: int, kind: str, message: str, headers: Mapping[str, str] | None = None) -> Any:
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
) -> tuple[int, str]:
    """(status, message) for a body FastAPI refused: where it is wrong, what came, what fits."""
    problems = exc.errors()
    first = problems[0] if problems else {}
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "JSON decode error")
        pos = first.get("loc", ("body", 0))[-1]
        where = f"character {pos}"
        if isinstance(exc.body, str) and isinstance(pos, int):
            line = exc.body.count("\n", 0, pos) + 1
            where = f"line {line}, column {pos - exc.body.rfind(chr(10), 0, pos)}"
        return (
            400,
            f"the request body is not valid JSON ({reason} at {where}); send one JSON object",
        )
    if isinstance(exc.body, bytes | bytearray):
        return 400, "the request body must be JSON; send it with Content-Type: application/json"
    if tuple(first.get("loc", ())) == ("body",) and model is not None:
        what = "empty" if first.get("type") == "missing" else _json_kind(first.get("input"))
        return (
            422,
            f"the request body is {what}; send a JSON object with the fields {_field_names(model)}",
        )
    shown = []
    for p in problems[:5]:
        loc = [x for x in p.get("loc", ()) if x != "body"]
        where = ".".join(str(x) for x in loc) or "body"
        kind = p.get("type")
        if kind == "extra_forbidden":
            what = "unknown field (check its spelling)"
            fits = _model_at(model, loc[:-1])
            if fits is not None:
                what += f"; the fields are {_field_names(fits)}"
        elif kind == "missing":
            what = "Field required"
        else:
            what = f"{p.get('msg', 'invalid')}, got {_json_kind(p.get('input'))}"
        shown.append(f"{where}: {what}")
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return 422, "; ".join(shown) + more + "; see /docs for the request schema"


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
    if cause is not None and type(cause).__name__ == "ClientDisconnect":
        return "the client closed the connection before the request body had all arrived"
    return f"the request body could not be read as JSON ({type(cause).__name__}: {cause})"


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


class _Guard:
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
            await _error(413, "ServiceError", _too_big(limit), {"Connection": "close"})(
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
        return _error(401, "ServiceError", _NEEDS_TOKEN, {"WWW-Authenticate": "Bearer"})
    scheme, _, value = header.strip().partition(b" ")
    if scheme.lower() != b"bearer" or not value.strip():
        got = (
            "has no token after 'Bearer'"
            if scheme.lower() == b"bearer"
            else f"uses the scheme {scheme.decode('latin-1')[:20]!r}, not 'Bearer'"
        )
        return _error(
            401,
            "ServiceError",
            f"the Authorization header {got}; this service needs a token: send the header "
            "'Authorization: Bearer TOKEN' with the token it was started with (--token or "
            "--token-file)",
            {"WWW-Authenticate": 'Bearer error="invalid_request"'},
        )
    if hmac.compare_digest(value.strip(), token):
        return None
    return _error(
        401, "ServiceError", _WRONG_TOKEN, {"WWW-Authenticate": 'Bearer error="invalid_token"'}
    )


def _too_big(limit: int) -> str:
    return (
        f"the request body is larger than the limit of {limit:,} bytes (--max-body); "
        "split it into smaller batches"
    )


def _declare_bearer(app: FastAPI, open_paths: frozenset[str]) -> None:
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


# -- the app ------------------------------------------------------------------------------------
def create_app(
    index_path: str | os.PathLike[str],
    token: str | None = None,
    limits: Limits | None = None,
    *,
    open_docs: bool = True,
) -> FastAPI:
    """The HTTP service over the SQLite index at ``index_path`` (checked now: a missing or
    mismatched index raises here, before anything listens).

    With a ``token``, every endpoint but ``/health`` needs it, and so do the API docs and
    schema (``/docs``, ``/redoc``, ``/openapi.json``) unless ``open_docs``."""
    path = os.fspath(index_path)
    limits = limits or Limits()
    if token is not None and not token.strip():
        raise ParamError("the token is empty; give a non-empty --token or --token-file")
    Index.open(path).close()
    lanes: dict[str, _Lane] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        lanes["writer"] = _Lane(path, 1, "writer")
        try:
            lanes["reader"] = _Lane(path, limits.readers, "reader")
        except BaseException:
            lanes.pop("writer").close()
            raise
        try:
            yield
        finally:  # in-flight requests have been answered: finish queued work, close
            for lane in (lanes.pop("writer"), lanes.pop("reader")):
                await asyncio.to_thread(lane.close)

    app = FastAPI(
        title="neardup",
        version=__version__,
        summary="A standing near-duplicate index over HTTP: add documents, ask which stored "
        "ones a new one duplicates.",
        lifespan=lifespan,
    )
    docs = (app.docs_url, app.redoc_url, app.openapi_url, app.swagger_ui_oauth2_redirect_url)
    open_paths = frozenset(["/health", *(p for p in docs if p and open_docs)])
    app.add_middleware(_Guard, token=token, limits=limits, open_paths=open_paths)
    if token is not None:
        _declare_bearer(app, open_paths)
    bodies: dict[str, type[BaseModel]] = {
        "/add": AddRequest,
        "/query": QueryRequest,
        "/remove": IdsRequest,
        "/retire": RetireRequest,
    }

    async def call(lane: str, job: Callable[[Index], T]) -> T:
        """Run ``job`` on a thread of the lane; a write that started is always waited for."""
        fut = lanes[lane].submit(job)
        waiting = asyncio.wrap_future(fut)
        try:
            return await asyncio.wait_for(asyncio.shield(waiting), limits.timeout)
        except TimeoutError:
            if fut.cancel():
                raise HTTPException(
                    503,
                    f"the index stayed busy for {limits.timeout:g}s and nothing was done; "
                    "try again later (or start the service with a larger --timeout)",
                ) from None
            if lane == "writer":
                return await waiting
            raise HTTPException(
                504,
                f"the query took longer than {limits.timeout:g}s; send fewer documents per "
                "request (or start the service with a larger --timeout)",
            ) from None

    def check_batch(n: int, what: str) -> None:
        if n > limits.max_batch:
            raise HTTPException(
                413,
                f"{n:,} {what} in one request; the limit is {limits.max_batch:,} (--max-batch); "
                "split them into smaller batches",
            )

    @app.exception_handler(NeardupError)
    async def neardup_error(request: Request, exc: NeardupError) -> Any:
        return _error(_status_of(exc), type(exc).__name__, str(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Any:
        message = str(exc.detail)
        if exc.status_code == 400 and message == "There was an error parsing the body":
            return _error(400, "InputError", _unreadable_body(exc.__cause__))
        if exc.status_code == 404 and message == "Not Found":
            message = f"no endpoint at {request.url.path}; see /docs for the endpoints"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; see /docs"
        return _error(exc.status_code, "ServiceError", message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Any:
        status, message = _validation_message(exc, bodies.get(request.url.path))
        return _error(status, "InputError", message)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Any:
        log.exception("internal error answering %s %s", request.method, request.url.path)
        return _error(
            500,
            "ServiceError",
            f"internal error ({type(exc).__name__}: {exc}); this is a bug in neardup, please "
            "report it with the request",
        )

    @app.get("/health", summary="Is the service up and its index readable?")
    async def health() -> dict[str, str]:
        await call("reader", lambda index: None)
        return {"status": "ok"}

    @app.get("/stats", summary="Counts, size and parameters of the index")
    async def stats() -> dict[str, Any]:
        return await call("reader", lambda index: index.stats())

    @app.post("/add", response_model=AddResponse, summary="Add a batch of documents")
    async def add(req: AddRequest) -> Any:
        """One transaction; an id already stored is replaced. Answered once committed."""
        docs = req.documents
        check_batch(len(docs), "documents")
        ids = [d.id for d in docs]
        texts = [d.text for d in docs]
        meta = [d.meta for d in docs] if any(d.meta is not None for d in docs) else None
        dates = [d.date for d in docs] if any(d.date is not None for d in docs) else None
        done = await call("writer", lambda index: index.add(ids, texts, meta, dates))
        return {"added": done.added, "replaced": done.replaced}

    @app.post(
        "/query", response_model=QueryResponse, summary="Which stored documents each duplicates"
    )
    async def query(req: QueryRequest) -> Any:
        """The same match lists as ``neardup index query``, in request order."""
        docs = req.documents
        check_batch(len(docs), "documents")
        texts = [d.text for d in docs]
        found = await call("reader", lambda index: index.query(texts, req.threshold, req.limit))
        return {
            "results": [
                {"id": d.id, "matches": [m.as_dict() for m in matches]}
                for d, matches in zip(docs, found, strict=True)
            ]
        }

    @app.post("/remove", summary="Remove documents by id (all must be present)")
    async def remove(req: IdsRequest) -> dict[str, int]:
        check_batch(len(req.ids), "ids")
        return {"removed": await call("writer", lambda index: index.remove(req.ids))}

    @app.post("/retire", summary="Mark URLs gone; moved finds where their content went")
    async def retire(req: RetireRequest) -> dict[str, int]:
        check_batch(len(req.urls), "URLs")
        return {"retired": await call("writer", lambda index: index.retire(req.urls, req.date))}

    @app.get("/moved", summary="Live URLs holding near-copies of a URL's last content")
    async def moved(
        url: str = Query(..., description="a URL (id) in the index"),
        limit: int | None = Query(None, ge=1),
    ) -> dict[str, Any]:
        found = await call("reader", lambda index: index.moved(url, limit))
        return {"url": url, "moved": [m.as_dict() for m in found]}

    @app.get("/documents/{id:path}", summary="A stored document")
    async def get(id: str) -> dict[str, Any]:
        found = await call("reader", lambda index: index.get(id))
        if found is None:
            raise UnknownIdError(f"id {id!r} is not in the index")
        return found

    @app.delete("/documents/{id:path}", summary="Remove one document")
    async def delete(id: str) -> dict[str, int]:
        return {"removed": await call("writer", lambda index: index.remove([id]))}

    return app
