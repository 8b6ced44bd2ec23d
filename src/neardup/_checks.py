"""Argument checks shared by public wrappers: of the Numba kernels (vectorised), and the
service's bearer token (checked alike by ``neardup serve`` and ``neardup.Client``)."""

from __future__ import annotations

import numpy as np

from .errors import ParamError


def _integers(x: object, name: str) -> np.ndarray:
    """An index array as int64; floats or booleans refused, int64 would truncate them silently."""
    arr = np.asarray(x)
    if arr.size and arr.dtype.kind not in "iu":
        raise ParamError(
            f"pair index array {name} must hold integers, got {arr.dtype}; pass document indices"
        )
    return np.ascontiguousarray(arr, dtype=np.int64)


def pair_indices(a: object, b: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair index arrays as int64, refused unless in [0, n): kernels do not bounds-check."""
    a, b = _integers(a, "a"), _integers(b, "b")
    if a.shape != b.shape:
        raise ParamError("pair index arrays a and b must have the same length")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
        raise ParamError(f"pair indices must lie in [0, {n}) for a batch of {n} documents")
    return a, b


def offsets_valid(offsets: np.ndarray, total: int) -> bool:
    """True when int offsets run non-decreasing from 0 to total: kernels loop on them unchecked."""
    return bool(
        offsets.ndim == 1
        and offsets.shape[0] >= 1
        and offsets[0] == 0
        and offsets[-1] == total
        and np.all(offsets[1:] >= offsets[:-1])
    )


def check_token(token: str, given: str) -> None:
    """ParamError for a bearer token no HTTP header can carry as typed: empty, not ASCII
    (``clé``: clients encode headers as ASCII, or as Latin-1 bytes no client matches), or
    holding a control character or a space at either end. ``given``: where it came from."""
    if not token.strip():
        raise ParamError(f"the token is empty; give a non-empty {given}")
    if not token.isascii():
        bad = next(c for c in token if not c.isascii())
        raise ParamError(
            f"the token holds {bad!r}, not an ASCII character, which an HTTP header cannot "
            f"carry as typed; give a {given} of ASCII letters, digits and punctuation"
        )
    if not token.isprintable() or token != token.strip():
        raise ParamError(
            f"the token holds a control character or a space at either end ({token[:3]!r}...), "
            f"which an HTTP header cannot carry; give a {given} of ASCII letters, digits and "
            "punctuation"
        )
