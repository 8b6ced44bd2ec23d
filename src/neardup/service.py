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


def _validation_message(exc: RequestValidationError) -> tuple[int, str]:
    problems = exc.errors()
    first = problems[0] if problems else {}
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "JSON decode error")
        pos = first.get("loc", ("body", "?"))[-1]
        return (
            400,
            f"the request body is not valid JSON ({reason} at character {pos}); send one JSON object",
        )
    if isinstance(exc.body, bytes | bytearray):
        return 400, "the request body must be JSON; send it with Content-Type: application/json"
    shown = []
    for p in problems[:5]:
        where = ".".join(str(x) for x in p.get("loc", ()) if x != "body") or "body"
        what = "unknown field (check its spelling)" if p.get("type") == "extra_forbidden" else None
        shown.append(f"{where}: {what or p.get('msg', 'invalid')}")
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return 422, "; ".join(shown) + more + "; see /docs for the request schema"


class _Refused(HTTPException):
    """A request refused before an endpoint ran (size, time); FastAPI passes it through."""


class _Guard:
    """Bearer token, body size limit and body read timeout, checked before any endpoint runs."""

    def __init__(self, app: ASGIApp, token: str | None, limits: Limits) -> None:
        self.app = app
        self.token = None if token is None else token.encode()
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        if self.token is not None and not _authorised(
            headers.get(b"authorization", b""), self.token
        ):
            response = _error(
                401,
                "ServiceError",
                "this service needs a token: send the header 'Authorization: Bearer TOKEN' "
                "with the token it was started with (--token or --token-file)",
                {"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        limit = self.limits.max_body
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _error(413, "ServiceError", _too_big(limit))(scope, receive, send)
            return
        received = 0
        timeout = self.limits.timeout

        async def guarded() -> Message:
            nonlocal received
            try:
                message = await asyncio.wait_for(receive(), timeout)
            except TimeoutError:
                raise _Refused(
                    408, f"the request body did not arrive within {timeout:g}s; send it whole"
                ) from None
            received += len(message.get("body", b""))
            if received > limit:
                raise _Refused(413, _too_big(limit))
            return message

        await self.app(scope, guarded, send)


def _authorised(header: bytes, token: bytes) -> bool:
    scheme, _, value = header.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), token)


def _too_big(limit: int) -> str:
    return (
        f"the request body is larger than the limit of {limit:,} bytes (--max-body); "
        "split it into smaller batches"
    )


# -- the app ------------------------------------------------------------------------------------
def create_app(
    index_path: str | os.PathLike[str], token: str | None = None, limits: Limits | None = None
) -> FastAPI:
    """The HTTP service over the SQLite index at ``index_path`` (checked now: a missing or
    mismatched index raises here, before anything listens)."""
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
    app.add_middleware(_Guard, token=token, limits=limits)

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
        if exc.status_code == 404 and message == "Not Found":
            message = f"no endpoint at {request.url.path}; see /docs for the endpoints"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; see /docs"
        return _error(exc.status_code, "ServiceError", message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Any:
        status, message = _validation_message(exc)
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
