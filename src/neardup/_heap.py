"""Freed heap memory -> back to the operating system, between the stages of a big job.

NumPy arrays of a few MB (one batch's signatures and evidence) come from malloc's heap, not
from their own mapping: glibc raises its mmap threshold after the first such array is freed.
When ``finish`` drops gigabytes of them, malloc keeps the pages as free heap, still resident,
and the next stage's peak stacks on top. ``trim`` asks glibc to give them back
(``malloc_trim``); elsewhere it does nothing.

Pages handed back cost a page fault each (and zeroing) when the next task allocates again: a
process that may hold more, a Dask worker well under its memory limit, sets an allowance
(``allow_resident``) below which ``trim`` keeps them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable

#: Resident bytes up to which ``trim`` keeps free pages (0: it always hands them back).
_allowance = 0
#: Bytes a stage must hold for its ``trim`` to run: a smaller stage frees too little to matter,
#: and malloc_trim's walk over the arenas (about 0.25 ms) is then a large part of its cost (an
#: index dedup in 500-document batches called it 4,400 times: 1.1 s of a 22 s benchmark).
SMALL_STAGE = 16 << 20


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


def allow_resident(nbytes: int) -> None:
    """Let ``trim`` keep free heap pages while the process holds at most ``nbytes``."""
    global _allowance
    _allowance = max(0, int(nbytes))


def resident_bytes() -> int | None:
    """This process's resident memory (bytes), or None where /proc does not tell."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def trim(held: int | None = None) -> bool:
    """Return free heap pages to the operating system (unless the process holds no more than
    its ``allow_resident`` allowance); True when glibc released any. ``held``: the bytes the
    calling stage held (what it can have freed); nothing is done below ``SMALL_STAGE``."""
    fn = _malloc_trim()
    if fn is None or (held is not None and held < SMALL_STAGE):
        return False
    if _allowance:
        resident = resident_bytes()
        if resident is not None and resident <= _allowance:
            return False
    return bool(fn(0))
