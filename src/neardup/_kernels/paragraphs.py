"""Numba kernel: UTF-8 documents -> the byte spans of their paragraphs (or lines) and tokens.

A line is a run of bytes up to a line ending (``\\n``, or ``\\r\\n``: Windows files split as
Unix ones do) or the end of the document; it is blank when it holds only ASCII whitespace
(space, ``\\t``, ``\\r``, ``\\v``, ``\\f``). A lone ``\\r`` ends no line: it is text. A paragraph
is a maximal run of non-blank lines (blank lines separate paragraphs); in line mode each
non-blank line is a unit. A unit's span runs from the first byte of its first line to the last
byte of its last line, its final line ending excluded, so every byte outside the spans (a
line ending's ``\\r`` as its ``\\n``) is a separator.
Newlines and ASCII whitespace are single bytes that never occur inside a multi-byte sequence,
so the spans cut no character. Each unit's canonical tokens are counted as ``text.py`` defines
them (runs of word characters; word characters in character mode), on the text as written.
The reference is ``neardup.paragraphs.split_reference``.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .shingles import _decode

NEWLINE = 0x0A
CR = 0x0D


@njit(cache=True, inline="always")
def _blank_byte(c: np.uint8) -> bool:
    """Space, \\t, \\n, \\v, \\f or \\r."""
    return bool(c == 0x20 or (c >= 0x09 and c <= 0x0D))


@njit(cache=True, inline="always")
def _content_end(buf: np.ndarray, p: int, e: int, hi: int) -> int:
    """The end of the text of the line ``buf[p:e]`` ending at a newline or ``hi``: before the
    ``\\r`` of a ``\\r\\n`` line ending (a final ``\\r`` without a newline is text)."""
    if e < hi and e > p and buf[e - 1] == CR:
        return e - 1
    return e


@njit(cache=True, nogil=True)
def split_units(
    buf: np.ndarray, offsets: np.ndarray, is_word: np.ndarray, lines: bool, char_mode: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Documents ``buf[offsets[i]:offsets[i+1]]`` -> (units per document int64[n], unit starts
    and ends int64[m] as positions in ``buf``, canonical tokens per unit int64[m]); units in
    document order, then position order."""
    n = offsets.shape[0] - 1
    cap = n
    for p in range(offsets[0], offsets[n]):
        if buf[p] == NEWLINE:
            cap += 1
    starts = np.empty(cap, dtype=np.int64)
    ends = np.empty(cap, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    m = 0
    for d in range(n):
        hi = offsets[d + 1]
        p = offsets[d]
        open_unit = False  # the previous line was non-blank and its unit may grow
        while p < hi:
            e = p
            blank = True
            while e < hi and buf[e] != NEWLINE:
                if blank and not _blank_byte(buf[e]):
                    blank = False
                e += 1
            if blank:
                open_unit = False
            elif open_unit and not lines:
                ends[m - 1] = _content_end(buf, p, e, hi)
            else:
                starts[m] = p
                ends[m] = _content_end(buf, p, e, hi)
                m += 1
                counts[d] += 1
                open_unit = True
            p = e + 1
    tokens = np.zeros(m, dtype=np.int64)
    for u in range(m):
        p = starts[u]
        in_word = False
        count = 0
        while p < ends[u]:
            c, p = _decode(buf, p)
            word = is_word[c] != 0
            if word and (char_mode or not in_word):
                count += 1
            in_word = word
        tokens[u] = count
    return counts, starts[:m].copy(), ends[:m].copy(), tokens
