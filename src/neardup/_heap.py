"""Freed heap memory -> back to the operating system, between the stages of a big job.

NumPy arrays of a few MB (one batch's signatures and evidence) come from malloc's heap, not
from their own mapping: glibc raises its mmap threshold after the first such array is freed.
When ``finish`` drops gigabytes of them, malloc keeps the pages as free heap, still resident,
and the next stage's peak stacks on top. ``trim`` asks glibc to give them back
(``malloc_trim``); elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        fn = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def trim() -> bool:
    """Return free heap pages to the operating system; True when glibc released any."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False
