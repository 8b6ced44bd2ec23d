"""The bodies of the service's requests and answers (pydantic models, shown in /docs)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)
from pydantic_core import PydanticCustomError

from ..index.checks import NON_FINITE, TOO_DEEP, non_finite, not_unicode, too_deep

#: The fields that are parameters of a call, not documents: a value of the wrong type is a
#: ParamError (400), as ``Index`` refuses it; ``Index`` itself checks their range.
PARAMETERS = frozenset({"threshold", "limit", "add"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _unicode(value: str) -> str:
    """A string that can be stored and answered (JSON lets a lone surrogate through)."""
    if not_unicode([value]):
        raise ValueError(
            "holds a lone surrogate (an escape such as \\ud800 without its pair), which is not "
            "Unicode"
        )
    return value


#: A string of Unicode text: ids, texts, URLs and dates the index keeps or the answer echoes.
Unicode = Annotated[StrictStr, AfterValidator(_unicode)]


def _query_id(value: object) -> str | int | None:
    """A query's id, echoed as sent: Unicode text, a whole number (never true or false) or null;
    one plain message for anything else (a union would list each of its members)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, str):
        return _unicode(value)
    raise ValueError("should be a string, a whole number or null")


QueryId = Annotated[
    str | int | None, PlainValidator(_query_id, json_schema_input_type=str | int | None)
]


#: Error types whose message says where inside the value it is wrong (no "got an object").
WHERE_INSIDE = frozenset({"non_finite", "too_deep"})


def _finite(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Metadata without NaN or infinity, nested no deeper than an answer can give back:
    Python's JSON reader takes them (``NaN``, ``1e999``, 300 levels), but no answer could."""
    if value is not None and too_deep(value):
        raise PydanticCustomError("too_deep", TOO_DEEP)
    if value is not None and (found := non_finite(value)):
        raise PydanticCustomError("non_finite", NON_FINITE.format(*found))
    return value


class Document(_Strict):
    """A document to add: its id (a URL for lost and found), text, metadata, last-seen date."""

    id: Unicode
    text: Unicode
    meta: Annotated[dict[str, Any] | None, AfterValidator(_finite)] = None
    date: Unicode | None = None


class AddRequest(_Strict):
    documents: list[Document]


class QueryDocument(_Strict):
    """A query: its text, and an id echoed in the answer."""

    id: QueryId = None
    text: StrictStr


class QueryRequest(_Strict):
    documents: list[QueryDocument]
    threshold: StrictFloat | None = Field(
        None, description="from the index's own threshold to 1", json_schema_extra={"maximum": 1}
    )
    limit: StrictInt | None = Field(
        None, description="at most this many matches per query", json_schema_extra={"minimum": 1}
    )


class IdsRequest(_Strict):
    ids: list[Unicode]


class RetireRequest(_Strict):
    urls: list[Unicode]
    date: Unicode | None = None


class AddResponse(BaseModel):
    added: int
    replaced: int


class QueryResult(BaseModel):
    id: str | int | None
    matches: list[dict[str, Any]]


class QueryResponse(BaseModel):
    results: list[QueryResult]


class DedupDocument(_Strict):
    """A document to deduplicate: its id (echoed; its id in the index once added) and text."""

    id: Unicode
    text: StrictStr


class DedupRequest(_Strict):
    documents: list[DedupDocument]
    add: StrictBool = Field(
        False, description="add the kept documents to the index (one transaction): true or false"
    )


class DedupResult(BaseModel):
    id: str
    kept: bool


class DedupResponse(BaseModel):
    results: list[DedupResult]
    documents: int
    duplicates_of_index: int
    duplicates_in_input: int
    kept: int
    added_to_index: int
