"""The endpoints: each turns its request into one ``Index`` method call on a lane, and the
answer into JSON (see the table in docs/SERVICE.md)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.convertors import Convertor, register_url_convertor

from ..errors import UnknownIdError
from .lanes import Lanes
from .models import (
    AddRequest,
    AddResponse,
    DedupRequest,
    DedupResponse,
    IdsRequest,
    QueryRequest,
    QueryResponse,
    RetireRequest,
)


class _AnyText(Convertor[str]):
    """A path parameter of any characters, slashes and newlines too (Starlette's ``path``,
    ``.*``, stops at a newline, so an id holding one was "no endpoint")."""

    regex = "(?s:.*)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("any_text", _AnyText())


async def _lanes(request: Request) -> Lanes:
    """The app's lanes (async: a plain function would run on a worker thread, one hop more)."""
    lanes: Lanes = request.app.state.lanes
    return lanes


Served = Annotated[Lanes, Depends(_lanes)]


def _only_query(*names: str) -> Any:
    """A dependency refusing query parameters other than ``names`` (the first required), as
    bodies refuse unknown fields: ``?lmit=3`` would otherwise be ignored without a word."""
    fits = ", ".join([f"{names[0]} (required)", *names[1:]])

    async def check(request: Request) -> None:
        unknown = [k for k in request.query_params if k not in names]
        if unknown:
            raise RequestValidationError(
                [
                    {
                        "type": "extra_forbidden",
                        "loc": ("query", k),
                        "msg": "unknown query parameter",
                        "input": request.query_params[k],
                        "ctx": {"fields": fits},
                    }
                    for k in unknown
                ]
            )

    return Depends(check)


router = APIRouter()

#: The request model of each path that takes a body, for the messages about a body refused.
BODIES: dict[str, type[BaseModel]] = {
    "/add": AddRequest,
    "/query": QueryRequest,
    "/remove": IdsRequest,
    "/retire": RetireRequest,
    "/dedup": DedupRequest,
}


@router.api_route(
    "/health", methods=["GET", "HEAD"], summary="Is the service up and its index readable?"
)
async def health(lanes: Served) -> dict[str, str]:
    await lanes.call("reader", lambda index: None)
    return {"status": "ok"}


@router.get("/stats", summary="Counts, size and parameters of the index")
async def stats(lanes: Served) -> dict[str, Any]:
    return await lanes.call("reader", lambda index: index.stats())


@router.post("/add", response_model=AddResponse, summary="Add a batch of documents")
async def add(req: AddRequest, lanes: Served) -> Any:
    """One transaction; an id already stored is replaced. Answered once committed."""
    docs = req.documents
    lanes.check_batch(len(docs), "documents")
    ids = [d.id for d in docs]
    texts = [d.text for d in docs]
    meta = [d.meta for d in docs] if any(d.meta is not None for d in docs) else None
    dates = [d.date for d in docs] if any(d.date is not None for d in docs) else None
    done = await lanes.call("writer", lambda index: index.add(ids, texts, meta, dates))
    return {"added": done.added, "replaced": done.replaced}


@router.post(
    "/query", response_model=QueryResponse, summary="Which stored documents each duplicates"
)
async def query(req: QueryRequest, lanes: Served) -> Any:
    """The same match lists as ``neardup index query``, in request order."""
    docs = req.documents
    lanes.check_batch(len(docs), "documents")
    texts = [d.text for d in docs]
    found = await lanes.call("reader", lambda index: index.query(texts, req.threshold, req.limit))
    return {
        "results": [
            {"id": d.id, "matches": [m.as_dict() for m in matches]}
            for d, matches in zip(docs, found, strict=True)
        ]
    }


@router.post("/remove", summary="Remove documents by id (all must be present)")
async def remove(req: IdsRequest, lanes: Served) -> dict[str, int]:
    lanes.check_batch(len(req.ids), "ids")
    return {"removed": await lanes.call("writer", lambda index: index.remove(req.ids))}


@router.post("/retire", summary="Mark URLs gone; moved finds where their content went")
async def retire(req: RetireRequest, lanes: Served) -> dict[str, int]:
    lanes.check_batch(len(req.urls), "URLs")
    return {"retired": await lanes.call("writer", lambda index: index.retire(req.urls, req.date))}


@router.get(
    "/moved",
    summary="Live URLs holding near-copies of a URL's last content",
    dependencies=[_only_query("url", "limit")],
)
async def moved(
    lanes: Served,
    url: str = Query(..., description="a URL (id) in the index"),
    limit: int | None = Query(None, json_schema_extra={"minimum": 1}),
) -> dict[str, Any]:
    found = await lanes.call("reader", lambda index: index.moved(url, limit))
    return {"url": url, "moved": [m.as_dict() for m in found]}


@router.get("/documents/{id:any_text}", summary="A stored document")
async def get(id: str, lanes: Served) -> dict[str, Any]:
    found = await lanes.call("reader", lambda index: index.get(id))
    if found is None:
        raise UnknownIdError(f"id {id!r} is not in the index")
    return found


@router.delete("/documents/{id:any_text}", summary="Remove one document")
async def delete(id: str, lanes: Served) -> dict[str, int]:
    return {"removed": await lanes.call("writer", lambda index: index.remove([id]))}


@router.post(
    "/dedup",
    response_model=DedupResponse,
    summary="Which documents to keep: those no stored or earlier one duplicates",
)
async def dedup(req: DedupRequest, lanes: Served) -> Any:
    """``Index.dedup``: what ``neardup dedup --index`` keeps of the same documents, in request
    order. With ``add`` the kept ones join the index (one transaction, answered once committed)."""
    docs = req.documents
    lanes.check_batch(len(docs), "documents")
    ids = [d.id for d in docs]
    texts = [d.text for d in docs]
    lane = "writer" if req.add else "reader"
    done = await lanes.call(lane, lambda index: index.dedup(ids, texts, add=req.add))
    kept = done.kept.tolist()
    return {
        "results": [{"id": i, "kept": k} for i, k in zip(ids, kept, strict=True)],
        **done.summary(),
    }
