"""Documents -> keep priority: int64 ranks, 0 = kept first (earliest, longest or best field).

Which copy of a near-duplicate group survives is decided by these ranks, both in keep-aware
removal (``removal.py``) and when a cluster chooses its representative (``clusters.py``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ._types import IntArray
from .errors import InputError, ParamError

Strategy = Literal["first", "longest", "field"]


def check_n(n: int) -> int:
    """``n`` as an int: a number of documents (a non-negative integer), else ParamError."""
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 0:
        raise ParamError(f"number of documents n must be a non-negative integer, got {n!r}")
    return int(n)


def _value_ranks(key: npt.ArrayLike, n: int, name: str) -> IntArray:
    """Dense ranks (0 = smallest) of one value per document; equal values share a rank."""
    arr = np.asarray(key)
    if arr.shape != (n,):
        raise InputError(f"{name} must have one value per document ({n}), got shape {arr.shape}")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise InputError(f"{name} contains NaN; fill missing values before choosing what to keep")
    if arr.dtype.kind not in "biufUSM":
        raise InputError(f"{name} must be numbers, booleans, strings or datetimes, got {arr.dtype}")
    _, inverse = np.unique(arr, return_inverse=True)
    return inverse.ravel().astype(np.int64)


def exact_numbers(values: npt.NDArray[np.object_], types: set[type]) -> npt.NDArray[Any]:
    """Numbers (an object array; ``types``: theirs) as an array that sorts them exactly as they
    compare: int64 or uint64 when all are integers that fit, float64 when every one is within
    2**53 (a float64 holds such an integer exactly), else dense ranks from Python's own
    comparisons, exact between any integers and floats (as float64, 2**63 and 2**63 + 1 tie)."""
    if all(issubclass(t, int | np.integer) and not issubclass(t, bool) for t in types):
        for dtype in (np.int64, np.uint64):
            with contextlib.suppress(OverflowError):
                return values.astype(dtype)
    with contextlib.suppress(OverflowError):
        floats = values.astype(np.float64)
        if bool(np.all(np.abs(floats) < 2.0**53)):
            return floats
    exact = [v.item() if isinstance(v, np.generic) else v for v in values.tolist()]
    order = {v: r for r, v in enumerate(sorted(set(exact)))}
    return np.array([order[v] for v in exact], dtype=np.int64)


def _missing(arr: np.ndarray) -> np.ndarray:
    """Mask of missing keys (NaN, NaT, None): the CLI ranks them least preferred, so do we."""
    if arr.dtype.kind == "f":
        return np.isnan(arr)
    if arr.dtype.kind in "mM":
        return np.isnat(arr)
    if arr.dtype == object:
        return np.asarray((arr == None) | (arr != arr), dtype=bool)  # noqa: E711 - elementwise
    return np.zeros(arr.shape, dtype=bool)


def _kind(t: type) -> str:
    """The CLI's kind of a key type (a number, a string, ...): keys of two kinds do not compare."""
    if issubclass(t, bool | np.bool_):
        return "a boolean"
    if issubclass(t, int | float | np.integer | np.floating):
        return "a number"
    if issubclass(t, str | np.str_):
        return "a string"
    return "a date/time" if issubclass(t, np.datetime64 | _dt.date) else t.__name__


def _as_datetime64(values: list[object], where: IntArray) -> np.ndarray:
    """Python datetimes and dates (and np.datetime64) as datetime64[us], which ranks them
    (NumPy keeps them as objects); aware datetimes in UTC, refused mixed with naive ones."""
    aware = [getattr(v, "tzinfo", None) is not None for v in values]
    if any(aware):
        if not all(aware):
            i, j = int(where[aware.index(True)]), int(where[aware.index(False)])
            raise InputError(
                f"key[{i}] is a datetime with a time zone, key[{j}] one without; "
                "give every key a time zone or none"
            )
        utc = _dt.UTC
        values = [v.astimezone(utc).replace(tzinfo=None) for v in values]  # type: ignore[attr-defined]
    return np.array(values, dtype="datetime64[us]")


def _check_one_kind(values: npt.NDArray[np.object_], where: IntArray) -> None:
    """Refuse keys of two kinds (np.asarray([9, '10']) would compare them as strings)."""
    types = list(map(type, values))  # a list: NumPy's == on classes such as np.int64 raised
    kinds: dict[str, int] = {}
    for t in set(types):  # a loop over the few distinct types, not the documents
        first = int(where[types.index(t)])
        kinds[_kind(t)] = min(first, kinds.get(_kind(t), first))
    if len(kinds) > 1:
        (k0, i0), (k1, i1) = sorted(kinds.items(), key=lambda item: item[1])[:2]
        raise InputError(
            f"key[{i1}] is {k1}, but the first key (key[{i0}]) is {k0}; "
            "give the key one type for every document (None where it is missing)"
        )


def _as_array(key: npt.ArrayLike) -> np.ndarray:
    """Keys as an array; a list or tuple as objects (np.asarray makes [9, '10'] two strings)."""
    if not isinstance(key, list | tuple):
        return np.asarray(key)
    arr = np.empty(len(key), dtype=object)
    arr[:] = key
    return arr


def _key_ranks(key: npt.ArrayLike, n: int, prefer: str) -> IntArray:
    """Dense ranks of key values with missing ones least preferred (rank 0 for max, top for min)."""
    arr = _as_array(key)
    if arr.shape != (n,):
        raise InputError(f"key must have one value per document ({n}), got shape {arr.shape}")
    missing = _missing(arr)
    present = arr[~missing]
    if arr.dtype == object:
        _check_one_kind(present, np.flatnonzero(~missing))
        values = present.tolist()
        kind = _kind(type(values[0])) if values else None
        if kind == "a date/time":  # datetime.datetime, date
            present = _as_datetime64(values, np.flatnonzero(~missing))
        elif kind == "a number":
            present = exact_numbers(present, set(map(type, values)))
        else:
            present = np.asarray(values)  # e.g. [None, 3] -> int64 once None is gone
    ranks = np.zeros(n, dtype=np.int64)
    ranks[~missing] = _value_ranks(present, present.shape[0], "key") + 1
    if prefer == "min":
        ranks[missing] = int(ranks.max(initial=0)) + 1
    return ranks


def priority_ranks(
    n: int,
    strategy: Strategy = "first",
    *,
    lengths: npt.ArrayLike | None = None,
    key: npt.ArrayLike | None = None,
    prefer: Literal["max", "min"] = "max",
) -> IntArray:
    """Keep priority of every document: int64[n], a permutation of 0..n-1, 0 = most preferred.

    strategy:
      "first"   the smallest document index first (the earliest seen).
      "longest" the largest ``lengths`` value first (e.g. characters): the most complete copy.
      "field"   the largest ``key`` value first (numbers, strings or datetimes, e.g. a quality
                score), or the smallest with ``prefer="min"`` (e.g. the oldest date); a missing
                key (None, NaN, NaT) is least preferred either way, as in the CLI.
    Ties are broken by the smallest document index, so the order is deterministic.
    """
    n = check_n(n)
    if prefer not in ("max", "min"):
        raise ParamError(f"prefer must be 'max' or 'min', got {prefer!r}")
    if strategy == "first":
        return np.arange(n, dtype=np.int64)
    if strategy == "longest":
        if lengths is None:
            raise ParamError("strategy 'longest' needs lengths=<one length per document>")
        value = -_value_ranks(lengths, n, "lengths")
    elif strategy == "field":
        if key is None:
            raise ParamError("strategy 'field' needs key=<one value per document>")
        value = _key_ranks(key, n, prefer)
        if prefer == "max":
            value = -value
    else:
        raise ParamError(f"strategy must be 'first', 'longest' or 'field', got {strategy!r}")
    order = np.lexsort((np.arange(n), value))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return rank
