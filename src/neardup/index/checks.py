"""Checks of what an index is given: creation options it could not honour, ids, thresholds.

Each raises a ``neardup.errors`` class whose message says what to give instead.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import InputError, ParamError
from ..methods import needs_fit
from ..params import DedupParams, SimhashMethodParams
from ..text import Utf8Texts, is_unicode


def refuse_fit(params: DedupParams) -> None:
    """ParamError for a method that must learn from the whole corpus before signing it."""
    if needs_fit(params):
        raise ParamError(
            "SimHash IDF weighting learns from the whole corpus before signing it, which a "
            "growing index cannot do; use weighting 'binary' or 'count'"
        )


def refuse_conflicts(params: DedupParams, needs_texts: bool, store_text: bool) -> None:
    """ParamError for create options an index could not honour (before any file is made)."""
    refuse_fit(params)
    if needs_texts and not store_text:
        raise ParamError(
            f"verify={params.resolved_verify!r} re-checks borderline pairs on the stored "
            "texts, and store_text=False keeps none, so every query would be refused; keep "
            "the texts (store_text=True, --store-text) or choose a verification that needs "
            "none (verify='sketch', 'exact' or 'none'; --verify)"
        )
    if params.keep != "first" or params.removal != "keep-aware":
        asked = f"keep={params.keep!r}" if params.keep != "first" else f"removal={params.removal!r}"
        raise ParamError(
            f"an index keeps the first copy it is given (query, then add), so {asked} could "
            "never apply; leave it at its default, or deduplicate the whole corpus at once with "
            "neardup dedup (Deduplicator)"
        )


def check_ids(ids: object, n: int | None) -> list[str]:
    """``ids`` as a list of distinct UTF-8 strings (``n`` of them, when given), or InputError."""
    if isinstance(ids, str | bytes):
        raise TypeError("ids must be a list of strings, not one string; wrap it: [id]")
    items = list(ids)  # type: ignore[call-overload]
    bad = [i for i in items if not isinstance(i, str)]
    if bad:
        raise InputError(f"ids must be strings, got {type(bad[0]).__name__} {bad[0]!r}")
    if n is not None and len(items) != n:
        raise InputError(f"{len(items)} ids for {n} texts; give one id per text")
    odd = not_unicode(items)
    if odd:
        raise InputError(
            f"id {items[odd[0]]!r} is not valid Unicode (a lone surrogate); give ids that are "
            "UTF-8 text"
        )
    if len(set(items)) != len(items):
        uniq, counts = np.unique(np.array(items, dtype=object), return_counts=True)
        raise InputError(
            f"id {uniq[counts > 1][0]!r} appears twice in one batch; ids must be unique"
        )
    return items


def check_limit(limit: int | None) -> int | None:
    """A match limit as an int (None: every match), or ParamError for one below 1 or not a whole
    number; numpy integers are whole numbers too (``np.int64(2)``), booleans are not."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 1:
        raise ParamError(
            f"limit {limit!r}: give at least 1 match per query, or leave it out for every match"
        )
    return int(limit)


def refuse_surrogates(ids: Sequence[str], values: Sequence[str | None], what: str) -> None:
    """InputError naming the first document whose ``what`` holds a lone surrogate (JSON lets
    ``\\ud800`` through; UTF-8, SQLite and the service's answers do not)."""
    bad = not_unicode(values)
    if bad:
        raise InputError(f"document {ids[bad[0]]!r}: {SURROGATE.format(what=what)}")


#: What is wrong with a value holding a lone surrogate, and what to do.
SURROGATE = (
    "its {what} holds a lone surrogate (an escape such as \\ud800 without its pair), which "
    "is not Unicode; fix it, or leave the document out"
)


def not_unicode(values: Sequence[str | None]) -> list[int]:
    """The positions of the values that cannot be written as UTF-8 (lone surrogates)."""
    if isinstance(values, Utf8Texts):  # read in their buffer, not decoded and joined
        return values.surrogate_rows()
    try:
        "".join(v for v in values if v).encode("utf-8")
    except UnicodeEncodeError:
        return [i for i, v in enumerate(values) if v and not is_unicode(v)]
    return []


def non_finite(value: object, path: str = "") -> tuple[str, float] | None:
    """The path (``x``, ``y.1.z``) and value of the first NaN or infinity in a JSON-like value:
    JSON has no such number, so an answer would turn it into null (or not be JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, value
    if isinstance(value, dict):
        items: Iterable[tuple[object, object]] = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, inner in items:
        found = non_finite(inner, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


#: How deep metadata may nest lists and dicts (the metadata itself is 1): the service answers
#: through pydantic-core, which stops serialising at about 255 levels, so deeper metadata
#: could be stored but never read back over HTTP.
META_DEPTH = 200

#: What is wrong with metadata nested too deep, and what to do.
TOO_DEEP = (
    f"nests lists or dicts more than {META_DEPTH} levels deep, deeper than an answer can give "
    "back; flatten it"
)


def too_deep(value: object, limit: int = META_DEPTH) -> bool:
    """Whether ``value`` nests dicts and lists more than ``limit`` levels deep (counted
    without recursion, so metadata deeper than Python's recursion limit is told too)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            inner: Iterable[object] = item.values()
        elif isinstance(item, list | tuple):
            inner = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((x, depth + 1) for x in inner)
    return False


def meta_json(ids: Sequence[str], meta: Sequence[dict[str, Any] | None] | None) -> list[str | None]:
    """Each document's metadata as the JSON the index keeps, or InputError: not one per
    document, nested too deep to be answered, or a NaN or infinity (JSON has neither: an
    answer would turn it into null)."""
    if meta is None:
        return [None] * len(ids)
    if len(meta) != len(ids):
        raise InputError(f"meta has {len(meta)} entries for {len(ids)} texts")
    for id_, m in zip(ids, meta, strict=True):
        if m is not None and too_deep(m):
            raise InputError(f"document {id_!r}: its metadata {TOO_DEEP}")
    stored = [None if m is None else _meta_text(id_, m) for id_, m in zip(ids, meta, strict=True)]
    for id_, m, text in zip(ids, meta, stored, strict=True):
        if text and ("NaN" in text or "Infinity" in text) and (found := non_finite(m)):
            raise InputError(f"document {id_!r}: its metadata {NON_FINITE.format(*found)}")
    return stored


def _meta_text(id_: str, meta: object) -> str:
    """One document's metadata as JSON, or InputError naming the document: not a dict, or a
    value JSON cannot hold (a date, a set), which would otherwise fail as a raw TypeError."""
    if not isinstance(meta, dict):
        raise InputError(
            f"document {id_!r}: its metadata is {type(meta).__name__} {meta!r}, not a dict; "
            "give a dict of JSON values (or None) per document"
        )
    try:
        return json.dumps(meta)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"document {id_!r}: its metadata cannot be stored as JSON ({exc}); give strings, "
            "numbers, booleans, lists, dicts or null (a date as an ISO string)"
        ) from None


def check_dates(ids: Sequence[str], dates: Sequence[object] | None) -> None:
    """InputError unless ``dates`` has one ISO date string (or None) per document, alike for
    every store (an int date failed as a raw TypeError on file, and was kept in memory)."""
    if dates is None:
        return
    if len(dates) != len(ids):
        raise InputError(f"dates has {len(dates)} entries for {len(ids)} texts")
    for id_, date in zip(ids, dates, strict=True):
        problem = date_problem(date)
        if problem:
            raise InputError(f"document {id_!r}: its {problem}")


def check_date(date: object) -> None:
    """InputError unless ``date`` (of a retirement) is an ISO date string or None."""
    problem = date_problem(date)
    if problem:
        raise InputError(f"the {problem}")


def date_problem(date: object) -> str:
    """What is wrong with a document's date ("" for an ISO date string or None): dates are
    compared as strings (``moved`` orders ties by them), so only ISO dates sort as dates."""
    if date is None:
        return ""
    if not isinstance(date, str):
        return (
            f"date is {type(date).__name__} {date!r}, not a string; give an ISO date string "
            "such as '2024-01-01', or None"
        )
    if not is_unicode(date):
        return SURROGATE.removeprefix("its ").format(what="date")
    try:
        datetime.fromisoformat(date)
    except ValueError:
        return (
            f"date {date!r} is not an ISO date; give one such as '2024-01-01' or "
            "'2024-01-01T12:00:00', or no date"
        )
    return ""


#: What is wrong with metadata holding a NaN or an infinity (path, value), and what to do.
NON_FINITE = "field {0} holds {1!r}, a number JSON cannot hold; give a finite number or null"


def index_floor(params: DedupParams) -> float:
    """The lowest score an index finds: an unverified SimHash index scores 1 - distance / 64
    and finds pairs up to ``max_distance`` bits apart; any other index its threshold."""
    if isinstance(params.method, SimhashMethodParams) and params.resolved_verify == "none":
        return 1.0 - params.method.max_distance / 64.0
    return params.resolved_threshold


def query_floor(params: DedupParams, threshold: float | None) -> float:
    """The score a query's matches must reach: ``threshold``, from the index's own to 1."""
    if threshold is None:
        return 0.0
    base = index_floor(params)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, numbers.Real)  # numpy's floats and integers are too
        or not math.isfinite(threshold)
        or threshold > 1.0
    ):
        raise ParamError(
            f"the query threshold must be a finite number from {base:g} to 1, got "
            f"{threshold!r}; leave it out to use the index's own ({base:g})"
        )
    if threshold < base - 1e-12 and not _between_steps(params, threshold):
        steps = _between_steps(params, base)  # scores in steps of 1/64: any threshold above
        span = f"above {base - 1 / 64:g}" if steps else f"from {base:g} to 1"
        raise ParamError(
            f"this index finds matches at {base:g} and above; a query can ask for a "
            f"threshold {span}, not {threshold!r}{_lower(params, threshold)}"
        )
    return float(threshold)


def _between_steps(params: DedupParams, threshold: float) -> bool:
    """Whether an unverified SimHash index answers ``threshold`` below its floor exactly: its
    scores are 1 - d / 64, so 0.9 asks for d <= 6, what an index of max_distance 6 finds
    (it refused 0.9, saying to build the index it is)."""
    if not isinstance(params.method, SimhashMethodParams) or params.resolved_verify != "none":
        return False
    return math.floor((1.0 - threshold) * 64.0 + 1e-9) <= params.method.max_distance


def _lower(params: DedupParams, threshold: float) -> str:
    """How to build an index finding matches down to ``threshold`` (empty: none can)."""
    if threshold <= 0:
        return ""
    if not isinstance(params.method, SimhashMethodParams):
        return f"; build an index with --threshold {threshold:g} for lower ones"
    if params.resolved_verify == "none" and threshold >= 1.0 - 19 / 64.0:
        bits = math.floor((1.0 - threshold) * 64.0 + 1e-9)
        return f"; build an index with --max-distance {bits} for lower ones"
    return ""


def stored_as_unicode(
    ids: Sequence[str],
    texts: Sequence[str] | None,
    meta: Sequence[dict[str, Any] | None] | None,
    dates: Sequence[str | None] | None,
) -> None:
    """What a batch stores (texts when kept, metadata, dates) is Unicode, or InputError."""
    if texts is not None:
        refuse_surrogates(ids, texts, "text")
    if meta:
        as_json = [None if m is None else json.dumps(m, ensure_ascii=False) for m in meta]
        refuse_surrogates(ids, as_json, "metadata")
    if dates:
        refuse_surrogates(ids, dates, "date")
