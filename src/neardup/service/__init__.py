"""HTTP requests -> one ``Index`` method call each -> JSON: the standing index as a service.

``create_app(path, token)`` builds a FastAPI app over the SQLite index at ``path``; ``neardup
serve`` runs it with uvicorn. Writes go to one writer thread holding the only write connection,
so they are serialised and a write is answered only once it is committed; reads run on a few
reader threads with a connection each (SQLite WAL lets them read while the writer writes).

Safe by default: with a token every request needs ``Authorization: Bearer TOKEN``; bodies and
batches have size limits (413 stating the limit); reading a body and waiting for the index
have timeouts. Errors are JSON ``{"error": {"type": ..., "message": ...}}`` whose message says
what to fix; the ``type`` names the ``neardup.errors`` class, so the client raises it again.

``routes`` holds the endpoints, ``models`` their bodies, ``guard`` the token and limits checked
before any endpoint runs, ``lanes`` the threads owning the connections, ``errors`` the JSON
errors; this module puts them together.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from .. import __version__
from .._checks import check_token
from ..index import Index
from .errors import InternalErrors, handle_errors
from .guard import Guard, Limits, declare_bearer
from .lanes import Lanes
from .routes import BODIES, router

__all__ = ["Limits", "create_app"]


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
    if token is not None:
        check_token(token, "--token or --token-file")
    Index.open(path).close()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.lanes = Lanes(path, limits)
        try:
            yield
        finally:  # in-flight requests have been answered: finish queued work, close
            await app.state.lanes.close()

    app = FastAPI(
        title="neardup",
        version=__version__,
        summary="A standing near-duplicate index over HTTP: add documents, ask which stored "
        "ones a new one duplicates.",
        lifespan=lifespan,
    )
    docs = (app.docs_url, app.redoc_url, app.openapi_url, app.swagger_ui_oauth2_redirect_url)
    open_paths = frozenset(["/health", *(p for p in docs if p and open_docs)])
    app.add_middleware(Guard, token=token, limits=limits, open_paths=open_paths)
    app.add_middleware(InternalErrors)  # outermost: around the guard too
    if token is not None:
        declare_bearer(app, open_paths)
    handle_errors(app, BODIES)
    app.include_router(router)
    return app
