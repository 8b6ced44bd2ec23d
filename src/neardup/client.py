"""Index calls -> HTTP requests to ``neardup serve`` -> the same answers and exceptions.

``Client(url, token)`` has the methods of ``neardup.Index`` (add, query, dedup, remove, get,
retire, moved, stats, ``len``, ``in``), so moving from an embedded index to the service is one line:
``index = Index.open("idx.db")`` becomes ``index = Client("http://127.0.0.1:8000")``. Errors
come back as the ``neardup.errors`` class the service raised (InputError, ParamError,
UnknownIdError, ...); refusals of the service itself (token, limits, timeouts, no answer) are
``ServiceError`` with the HTTP status. Each call is one request; there are no transactions
spanning calls (``with client:`` only closes the connection). Scores arrive rounded to six
decimals, as ``neardup index query`` writes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import numpy as np

from . import errors
from ._checks import check_token
from .errors import NeardupError, ServiceError
from .index import AddResult, Deduplicated, Match
from .index.checks import check_date, check_dates, check_limit, meta_json, not_unicode

#: Error types the service names, raised again here by name: every ``neardup.errors`` class
#: (ServiceError carries the HTTP status, so it is made apart).
_ERRORS: dict[str, type[NeardupError]] = {
    name: cls
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, NeardupError) and cls is not ServiceError
}


def _match(d: dict[str, Any]) -> Match:
    scores = {k: float(v) for k, v in d.items() if k not in ("id", "score", "kind", "last_seen")}
    return Match(d["id"], float(d["score"]), d["kind"], scores, d.get("last_seen"))


class Client:
    """The service's index, called like ``neardup.Index`` (see the module docstring)."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        token: str | None = None,
        *,
        timeout: float = 60.0,
        transport: Any = None,
    ) -> None:
        try:
            import httpx
        except ImportError:
            raise NeardupError(
                "neardup.Client needs httpx; install it with: pip install 'neardup[service]'"
            ) from None
        if token is not None:
            check_token(token, "token")
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        self.url = url.rstrip("/")
        self._httpx = httpx
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    # -- plumbing ------------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except self._httpx.TimeoutException:
            raise ServiceError(
                f"{self.url} did not answer {method} {path} in time; the request may still "
                "complete; raise the client's timeout or send smaller batches",
                status=None,
            ) from None
        except self._httpx.TransportError as exc:
            raise ServiceError(
                f"cannot reach {self.url} ({exc}); is `neardup serve` running there?",
                status=None,
            ) from None
        if response.status_code >= 300:
            raise self._error(response)
        try:
            return response.json()
        except ValueError:
            raise ServiceError(
                f"{self.url} answered {method} {path} with HTTP {response.status_code} that is "
                f"not JSON ({response.headers.get('content-type', 'no content type')}: "
                f"{response.text[:200]!r}); is it `neardup serve`?",
                status=response.status_code,
            ) from None

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        """POST ``body`` as JSON escaped to ASCII: a lone surrogate (which ``Index`` takes in a
        query and refuses in what it stores) travels as ``\\ud800`` for the service to answer
        as ``Index`` does; httpx's ``json=`` writes UTF-8, which cannot hold one."""
        try:
            content = json.dumps(body, ensure_ascii=True, separators=(",", ":"))
        except (TypeError, ValueError) as exc:  # what Index would refuse as well: not JSON
            raise errors.InputError(
                f"the request to {path} cannot be sent as JSON ({exc}); give strings, numbers, "
                "booleans, lists, dicts or None"
            ) from None
        headers = {"Content-Type": "application/json"}
        return self._request("POST", path, content=content.encode("ascii"), headers=headers)

    def _error(self, response: Any) -> NeardupError:
        try:
            body = response.json()["error"]
            kind, message = str(body["type"]), str(body["message"])
        except (ValueError, KeyError, TypeError):
            kind, message = "ServiceError", f"HTTP {response.status_code}: {response.text[:200]}"
        cls = _ERRORS.get(kind)
        if cls is None:
            return ServiceError(message, status=response.status_code)
        return cls(message)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the Index methods --------------------------------------------------------------------
    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        meta: Sequence[dict[str, Any] | None] | None = None,
        dates: Sequence[str | None] | None = None,
    ) -> AddResult:
        """Add documents (one transaction on the service); returned once committed."""
        ids, texts = _sequence(ids, "ids"), _sequence(texts, "texts")
        if len(ids) != len(texts):
            raise errors.InputError(f"{len(ids)} ids for {len(texts)} texts; give one id per text")
        meta_json(ids, meta)  # what Index refuses, refused here: JSON could not carry all of it
        check_dates(ids, dates)
        docs: list[dict[str, Any]] = [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)]
        for name, values in (("meta", meta), ("date", dates)):
            if values is None:
                continue
            if len(values) != len(docs):
                raise errors.InputError(f"{name} has {len(values)} entries for {len(docs)} texts")
            for doc, value in zip(docs, values, strict=True):
                if value is not None:
                    doc[name] = value
        done = self._post("/add", {"documents": docs})
        return AddResult(added=int(done["added"]), replaced=int(done["replaced"]))

    def query(
        self, texts: Sequence[str], threshold: float | None = None, limit: int | None = None
    ) -> list[list[Match]]:
        """For each text, the live stored documents it duplicates, best first (exact first)."""
        body: dict[str, Any] = {"documents": [{"text": t} for t in _sequence(texts, "texts")]}
        if threshold is not None:
            body["threshold"] = _python(threshold)
        if limit is not None:
            body["limit"] = _python(limit)
        found = self._post("/query", body)
        return [[_match(m) for m in r["matches"]] for r in found["results"]]

    def dedup(self, ids: Sequence[str], texts: Sequence[str], *, add: bool = False) -> Deduplicated:
        """Which documents to keep: those that duplicate neither a stored document nor a kept
        one earlier in ``texts`` (``Index.dedup``); with ``add`` the kept ones join the index."""
        ids, texts = _sequence(ids, "ids"), _sequence(texts, "texts")
        if len(ids) != len(texts):
            raise errors.InputError(f"{len(ids)} ids for {len(texts)} texts; give one id per text")
        docs = [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)]
        done = self._post("/dedup", {"documents": docs, "add": add})
        return Deduplicated(
            kept=np.array([bool(r["kept"]) for r in done["results"]], dtype=bool),
            duplicates_of_index=int(done["duplicates_of_index"]),
            duplicates_in_input=int(done["duplicates_in_input"]),
            added=int(done["added_to_index"]),
        )

    def remove(self, ids: Sequence[str]) -> int:
        """Remove documents by id; an unknown id raises UnknownIdError and nothing changes."""
        return int(self._post("/remove", {"ids": _sequence(ids, "ids")})["removed"])

    def retire(self, urls: Sequence[str], date: str | None = None) -> int:
        """Mark URLs gone (as of ``date``): no longer matched, still found by ``moved``."""
        check_date(date)
        body = {"urls": _sequence(urls, "urls"), "date": date}
        return int(self._post("/retire", body)["retired"])

    def moved(self, url: str, limit: int | None = None) -> list[Match]:
        """Live documents holding near-copies of ``url``'s last content, best first."""
        # here: a URL's query string cannot say 2.0 from 2 or true from 1
        limit = check_limit(limit)
        if not_unicode([url]):  # no URL can carry it, and no stored id holds one
            raise errors.UnknownIdError(f"URL {url!r} is not in the index")
        params: dict[str, Any] = {"url": url}
        if limit is not None:
            params["limit"] = limit
        found = self._request("GET", "/moved", params=params)
        return [_match(m) for m in found["moved"]]

    def get(self, id: str) -> dict[str, Any] | None:
        """A stored document's id, text (when kept), metadata and dates, or None."""
        if not_unicode([id]):  # no URL can carry it, and no stored id holds one
            return None
        try:
            found: dict[str, Any] = self._request("GET", _document_path(id))
        except errors.UnknownIdError:
            return None
        return found

    def stats(self) -> dict[str, Any]:
        """Counts, size and parameters of the service's index."""
        found: dict[str, Any] = self._request("GET", "/stats")
        return found

    def health(self) -> dict[str, Any]:
        """``{"status": "ok"}`` when the service answers and its index is readable."""
        found: dict[str, Any] = self._request("GET", "/health")
        return found

    def __len__(self) -> int:
        return int(self.stats()["documents"])

    def __contains__(self, id: object) -> bool:
        return isinstance(id, str) and self.get(id) is not None


def _python(value: object) -> object:
    """A numpy scalar as the Python number (or bool) it holds, which JSON can carry: ``Index``
    takes ``np.float32(0.9)`` as a threshold and ``np.int64(2)`` as a limit."""
    return value.item() if isinstance(value, np.generic) else value


def _document_path(id: str) -> str:
    """The path of a stored document, every character of its id escaped but letters and digits:
    ``/`` would split it, and an id ``.`` or ``..`` would be taken as a dot segment (httpx
    removes it, as URLs say), so dots travel as ``%2E``; the server unescapes them all."""
    return "/documents/" + quote(id, safe="").replace(".", "%2E")


def _sequence(values: object, name: str) -> list[Any]:
    if isinstance(values, str | bytes):
        raise TypeError(f"{name} must be a list of strings, not one string; wrap it: [{name[:-1]}]")
    return list(values)  # type: ignore[call-overload]
