"""Per-document key values (``--keep-field``): raw field value -> an orderable key or None;
all keys of a run -> dense int64 ranks with missing keys at the least preferred end.

A key is one of four kinds, fixed by the first record that has one: a number (JSON integer or
float, Parquet integer, float or decimal), a string, a boolean, or a date/time (Parquet date or
timestamp columns, given as ``numpy.datetime64``, UTC for zoned timestamps). A missing field,
null, NaN or NaT is no key (None). A value of another kind than the first, or an array or object,
is a bad record (kind ``bad_key``): stop mode raises, skip mode drops and counts it, so one run's
keys always compare with each other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..errors import ParamError
from ..priority import exact_numbers
from ._report import BAD_KEY, RecordProblem, json_type

KeyKind = Literal["number", "string", "boolean", "datetime"]

_KIND_NAMES: dict[str, str] = {
    "number": "a number",
    "string": "a string",
    "boolean": "a boolean",
    "datetime": "a date/time",
}


_FAST_KINDS: dict[type, KeyKind] = {int: "number", float: "number", str: "string", bool: "boolean"}


def key_kind(value: object) -> KeyKind | None:
    """The kind of an already normalised key (None for no key); None also for unorderable
    values, which ``normalise_key`` rejects before they get here."""
    kind = _FAST_KINDS.get(type(value))
    if kind is not None or value is None:
        return kind
    if isinstance(value, bool | np.bool_):
        return "boolean"
    if isinstance(value, int | float | np.integer | np.floating):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, np.datetime64):
        return "datetime"
    return None


def normalise_key(value: object, key_field: str) -> tuple[object, KeyKind | None]:
    """A raw field value -> (key, kind): None/NaN/NaT -> (None, None); numbers, strings,
    booleans and datetime64 pass through; anything else raises RecordProblem(bad_key)."""
    if value is None or value != value:  # NaN and NaT only
        return None, None
    kind = key_kind(value)
    if kind is None:
        raise RecordProblem(
            BAD_KEY,
            f"field '{key_field}' is {json_type(value)}, which has no order",
            "give it a number, string or boolean value (or null), or use --keep-field (index "
            "add: --date-field) to name another field",
        )
    return value, kind


class KeyCheck:
    """Holds the kind of the run's first key and rejects keys of any other kind."""

    def __init__(self, key_field: str) -> None:
        self.key_field = key_field
        self.kind: KeyKind | None = None
        self.where = ""

    def check(self, value: object) -> tuple[object, KeyKind | None]:
        """Normalise ``value`` and check its kind against the first key; RecordProblem if not."""
        key, kind = normalise_key(value, self.key_field)
        if kind is not None and self.kind is not None and kind != self.kind:
            raise RecordProblem(
                BAD_KEY,
                f"field '{self.key_field}' is {_KIND_NAMES[kind]}, but the first key "
                f"({self.where}) is {_KIND_NAMES[self.kind]}",
                f"give '{self.key_field}' one type in every record (or null), or use "
                "--keep-field (index add: --date-field) to name another field",
            )
        return key, kind

    def commit(self, kind: KeyKind | None, where: str) -> None:
        """Record the kind of an accepted record's key if it is the first key of the run
        (callers skip the call once ``self.kind`` is set, to save formatting ``where``)."""
        if kind is not None and self.kind is None:
            self.kind, self.where = kind, where


def key_ranks(
    keys: Sequence[object], prefer: Literal["max", "min"] = "max"
) -> npt.NDArray[np.int64]:
    """Keys of all documents -> int64 ranks in the keys' natural order (equal keys share a rank;
    present keys get 1..m), with missing keys (None, NaN, NaT) at the least preferred end:
    rank 0 when ``prefer="max"``, m + 1 when ``prefer="min"``.

    Feed them to ``choose_representatives(labels, "field", key=ranks, prefer=prefer)``. Numbers
    compare exactly (int64 or uint64 when all are integers that fit, float64 when all are within
    2**53, else by Python's comparisons); strings by code point; booleans False < True. Mixed kinds raise ParamError
    (pass 1 never produces them).
    """
    if prefer not in ("max", "min"):
        raise ParamError(f"prefer must be 'max' or 'min', got {prefer!r}")
    n = len(keys)
    values = np.empty(n, dtype=object)
    values[:] = list(keys)
    # elementwise on the object array: None, and NaN/NaT (the only values unequal to themselves)
    present = ~((values == None) | (values != values))  # noqa: E711 - elementwise
    given = values[present]
    types = set(map(type, given))
    kinds = {_FAST_KINDS.get(t) or key_kind(v) for t, v in _one_per_type(given, types)}
    if None in kinds:
        raise ParamError("keys must be numbers, strings, booleans or numpy.datetime64 values")
    if len(kinds) > 1:
        shown = ", ".join(sorted(_KIND_NAMES[k] for k in kinds if k is not None))
        raise ParamError(f"keys must be of one kind, got {shown}")
    kind = next(iter(kinds), None)
    ranks = np.zeros(n, dtype=np.int64)
    if given.size:
        ranks[present] = _dense_ranks(given, kind, types)
    if prefer == "min":
        ranks[~present] = int(ranks.max(initial=0)) + 1
    return ranks


def _one_per_type(values: npt.NDArray[np.object_], types: set[type]) -> list[tuple[type, object]]:
    """One example value per type (types are few: this is not a loop over the documents)."""
    found: dict[type, object] = {}
    for t in types:
        if t not in _FAST_KINDS:
            found[t] = next(v for v in values if type(v) is t)
    return [(t, found.get(t)) for t in types]


def _dense_ranks(
    given: npt.NDArray[np.object_], kind: KeyKind | None, types: set[type]
) -> npt.NDArray[np.int64]:
    """Present keys of one kind -> dense ranks 1..m in their natural order."""
    if kind == "string":
        import pyarrow as pa  # only string keys need it (its import takes a tenth of a second)
        import pyarrow.compute as pc

        with contextlib.suppress(pa.ArrowException, UnicodeError):  # e.g. lone surrogates
            ranked = pc.rank(pa.array(given, type=pa.large_string()), tiebreaker="dense")
            return ranked.to_numpy().astype(np.int64)
    typed: npt.NDArray[Any] = given
    if kind == "boolean":
        typed = given.astype(np.bool_)
    elif kind == "number":
        typed = exact_numbers(given, types)
    elif kind == "datetime":
        typed = np.array(given.tolist())
    _, inverse = np.unique(typed, return_inverse=True)
    return inverse.ravel().astype(np.int64) + 1
