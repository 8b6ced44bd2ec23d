"""Checks at the library's doors: texts, batch sizes and parameter combinations -> a TypeError or
ParamError saying what was wrong and how to fix it, before any work is done."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from .errors import ParamError

if TYPE_CHECKING:
    from .engine import DedupParams


def check_texts(texts: object, start: int = 0) -> None:
    """``texts`` must be a sequence of str: a bare string or bytes is refused (it would be read
    as one document per character), and a non-string element is named by its position
    (``start`` + index: its document index when batches follow one another)."""
    if isinstance(texts, str | bytes | bytearray):
        raise TypeError(
            f"texts must be a list of strings, got a single {type(texts).__name__}; "
            "pass [text] for one document"
        )
    if not hasattr(texts, "__len__") or not hasattr(texts, "__getitem__"):
        raise TypeError(
            f"texts must be a sequence of strings (a list), got {type(texts).__name__}; "
            "use list(...) or fit(), which takes any iterable"
        )
    items = cast(Sequence[object], texts)
    if all(issubclass(kind, str) for kind in set(map(type, items))):
        return
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(
                f"text {start + i} is {type(text).__name__}, not str; give every document as "
                "a string (decode bytes, use '' for a missing text)"
            )


def check_iterable_texts(texts: object) -> None:
    """``fit`` takes any iterable of str, but never a bare string or bytes."""
    if isinstance(texts, str | bytes | bytearray):
        check_texts(texts)


def check_batch_size(batch_size: object) -> None:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ParamError(f"batch_size must be a positive integer, got {batch_size!r}")


def check_dedup_params(p: DedupParams) -> None:
    """What DedupParams' own checks leave to later stages, checked when it is made: bucket
    size, sketch budget, seed and the SimHash options."""
    from .params import SketchParams

    if not _is_int(p.max_bucket) or p.max_bucket < 2:
        raise ParamError(f"max_bucket must be an integer >= 2, got {p.max_bucket!r}")
    if not _is_int(p.max_t) or p.max_t < 1:
        raise ParamError(f"max_t (--num-perm) must be a positive integer, got {p.max_t!r}")
    SketchParams(seed=p.seed)  # the seed's range
    if p.method == "simhash":
        from .simhash import SimhashParams

        SimhashParams(
            features=p.simhash_features,
            q=p.simhash_q,
            w=p.shingle.w,
            weighting=p.simhash_weighting,
            seed=p.seed,
            nfkc=p.shingle.nfkc,
        )


def check_keep_options(keep: str, keep_field: str | None) -> None:
    """``--keep longest`` and ``--keep-field`` ask for two different survivors: refuse both."""
    if keep_field and keep == "longest":
        raise ParamError(
            "--keep longest and --keep-field choose the survivor in two different ways; "
            "give one of them"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
