"""JSON Lines bytes -> per line: blank, or a plain record's text and id, or "ask Python".

One pass over a block of whole lines, without Python objects, so parsing runs beside the other
kernels in threads. Each line is checked against the grammar Python's ``json`` module accepts
(``NaN``, ``Infinity`` and ``-Infinity`` included) and the top-level text and id fields are
unescaped into output buffers as ``json.loads`` would decode them (surrogate pairs combined,
lone surrogates kept, written as "surrogatepass" UTF-8; the last of repeated keys wins).
Anything unusual (invalid UTF-8, a byte-order mark, a value nested deeper than ``MAX_DEPTH``, a
number longer than ``MAX_NUMBER``, a text that is not a string, an id that is neither a string
nor an integer of at most 18 digits, an id holding a lone surrogate, any syntax error) is marked ``ASK_PYTHON``: the
Python parser decides and explains those lines, so a line marked ``RECORD`` reads exactly as
there. Blank lines (only the bytes ``bytes.strip`` removes) are marked ``BLANK``.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .ranges import copy_bytes

BLANK = 0
RECORD = 1
ASK_PYTHON = 2

ID_ABSENT = 0
ID_STRING = 1
ID_INT = 2

#: Deeper nesting is left to the Python parser (which may refuse it as too deep).
MAX_DEPTH = 200
#: Longer numbers are left to the Python parser (integers have a digit limit there).
MAX_NUMBER = 4000
#: Integer ids with more digits are left to the Python parser (orjson reads integers beyond 64
#: bits as floats, which are no ids).
MAX_ID_DIGITS = 18

_FAIL = -1


@njit(cache=True, inline="always")
def _json_ws(c: int) -> bool:
    return c == 0x20 or c == 0x09 or c == 0x0D or c == 0x0A


@njit(cache=True, inline="always")
def _skip_ws(buf: np.ndarray, p: int, end: int) -> int:
    while p < end and _json_ws(buf[p]):
        p += 1
    return p


@njit(cache=True, inline="always")
def _hex4(buf: np.ndarray, p: int, end: int) -> int:
    """The value of 4 hex digits at p, or -1."""
    if p + 4 > end:
        return _FAIL
    v = 0
    for i in range(4):
        c = buf[p + i]
        if 0x30 <= c <= 0x39:
            d = c - 0x30
        elif 0x61 <= c <= 0x66:
            d = c - 0x61 + 10
        elif 0x41 <= c <= 0x46:
            d = c - 0x41 + 10
        else:
            return _FAIL
        v = v * 16 + d
    return v


@njit(cache=True, inline="always")
def _put(out: np.ndarray, q: int, cp: int) -> int:
    """Write code point cp as UTF-8 (surrogates as 3 bytes, like "surrogatepass")."""
    if cp < 0x80:
        out[q] = cp
        return q + 1
    if cp < 0x800:
        out[q] = 0xC0 | (cp >> 6)
        out[q + 1] = 0x80 | (cp & 0x3F)
        return q + 2
    if cp < 0x10000:
        out[q] = 0xE0 | (cp >> 12)
        out[q + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[q + 2] = 0x80 | (cp & 0x3F)
        return q + 3
    out[q] = 0xF0 | (cp >> 18)
    out[q + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[q + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[q + 3] = 0x80 | (cp & 0x3F)
    return q + 4


@njit(cache=True, inline="always")
def _utf8_len(buf: np.ndarray, p: int, end: int) -> int:
    """Length of the strictly valid UTF-8 sequence (no surrogates) starting at p, or -1."""
    c = buf[p]
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        n = 2
        lo, hi = 0x80, 0xBF
    elif c == 0xE0:
        n = 3
        lo, hi = 0xA0, 0xBF
    elif 0xE1 <= c <= 0xEC or c == 0xEE or c == 0xEF:
        n = 3
        lo, hi = 0x80, 0xBF
    elif c == 0xED:
        n = 3
        lo, hi = 0x80, 0x9F
    elif c == 0xF0:
        n = 4
        lo, hi = 0x90, 0xBF
    elif 0xF1 <= c <= 0xF3:
        n = 4
        lo, hi = 0x80, 0xBF
    elif c == 0xF4:
        n = 4
        lo, hi = 0x80, 0x8F
    else:
        return _FAIL
    if p + n > end:
        return _FAIL
    if not lo <= buf[p + 1] <= hi:
        return _FAIL
    for i in range(2, n):
        if not 0x80 <= buf[p + i] <= 0xBF:
            return _FAIL
    return n


@njit(cache=True, inline="always")
def _plain(c: int) -> bool:
    """A byte a JSON string holds as it is: printable ASCII but the quote and the backslash."""
    return 0x20 <= c < 0x80 and c != 0x22 and c != 0x5C


@njit(cache=True, inline="always")
def _string(
    buf: np.ndarray, p: int, end: int, out: np.ndarray, q: int, write: bool
) -> tuple[int, int, bool]:
    """Scan the JSON string whose opening quote is at p-1. Returns (position after the closing
    quote or -1, end of the output, whether a lone surrogate was written)."""
    lone = False
    while p < end:
        c = buf[p]
        if _plain(c):  # plain ASCII, the common case: the whole run in a tight loop
            r = p + 1
            while r < end and _plain(buf[np.uint64(r)]):  # unsigned: no negative-index fix-up
                r += 1
            if write:
                copy_bytes(out[np.uint64(q) :], buf[np.uint64(p) : np.uint64(r)])
                q += r - p
            p = r
            continue
        if c == 0x22:  # closing quote
            return p + 1, q, lone
        if c < 0x20:
            return _FAIL, q, lone
        if c == 0x5C:  # backslash
            if p + 1 >= end:
                return _FAIL, q, lone
            e = buf[p + 1]
            if e == 0x75:  # \uXXXX
                cp = _hex4(buf, p + 2, end)
                if cp < 0:
                    return _FAIL, q, lone
                p += 6
                if 0xD800 <= cp <= 0xDBFF and p + 1 < end and buf[p] == 0x5C and buf[p + 1] == 0x75:
                    low = _hex4(buf, p + 2, end)
                    if 0xDC00 <= low <= 0xDFFF:
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                        p += 6
                if 0xD800 <= cp <= 0xDFFF:
                    lone = True
                if write:
                    q = _put(out, q, cp)
                continue
            if e == 0x22 or e == 0x5C or e == 0x2F:
                v = e
            elif e == 0x62:
                v = 0x08
            elif e == 0x66:
                v = 0x0C
            elif e == 0x6E:
                v = 0x0A
            elif e == 0x72:
                v = 0x0D
            elif e == 0x74:
                v = 0x09
            else:
                return _FAIL, q, lone
            if write:
                out[q] = v
                q += 1
            p += 2
            continue
        n = _utf8_len(buf, p, end)
        if n < 0:
            return _FAIL, q, lone
        if write:
            for i in range(n):
                out[q + i] = buf[p + i]
            q += n
        p += n
    return _FAIL, q, lone


@njit(cache=True, inline="always")
def _digits(buf: np.ndarray, p: int, end: int) -> int:
    while p < end and 0x30 <= buf[p] <= 0x39:
        p += 1
    return p


@njit(cache=True)
def _number(buf: np.ndarray, p: int, end: int) -> tuple[int, bool]:
    """Scan a JSON number (or -Infinity) at p: (end or -1, is an integer)."""
    start = p
    if p < end and buf[p] == 0x2D:
        p += 1
        if _literal(buf, p, end, "Infinity"):
            return p + 8, False
    if p >= end:
        return _FAIL, False
    if buf[p] == 0x30:
        p += 1
    elif 0x31 <= buf[p] <= 0x39:
        p = _digits(buf, p + 1, end)
    else:
        return _FAIL, False
    integer = True
    if p < end and buf[p] == 0x2E:
        q = _digits(buf, p + 1, end)
        if q == p + 1:
            return _FAIL, False
        p = q
        integer = False
    if p < end and (buf[p] == 0x65 or buf[p] == 0x45):
        p += 1
        if p < end and (buf[p] == 0x2B or buf[p] == 0x2D):
            p += 1
        q = _digits(buf, p, end)
        if q == p:
            return _FAIL, False
        p = q
        integer = False
    if p - start > MAX_NUMBER:
        return _FAIL, False
    return p, integer


@njit(cache=True, inline="always")
def _literal(buf: np.ndarray, p: int, end: int, word: str) -> bool:
    if p + len(word) > end:
        return False
    for i in range(len(word)):  # noqa: SIM110 - Numba compiles loops, not generators
        if buf[p + i] != ord(word[i]):
            return False
    return True


@njit(cache=True, inline="always")
def _same(a: np.ndarray, a0: int, a1: int, key: np.ndarray) -> bool:
    if a1 - a0 != key.shape[0]:
        return False
    for i in range(key.shape[0]):  # noqa: SIM110 - Numba compiles loops, not generators
        if a[a0 + i] != key[i]:
            return False
    return True


# Parser states.
_VALUE = 0
_KEY = 1
_AFTER = 2
# What the value being parsed is: a plain value, the text field, the id field, or both.
_TEXT = 1
_ID = 2
# Kinds of the last value seen for the text and id fields.
_NONE = 0
_STR = 1
_INT = 2
_OTHER = 3


@njit(cache=True)
def _record(
    buf: np.ndarray,
    p: int,
    end: int,
    text_key: np.ndarray,
    id_key: np.ndarray,
    out_t: np.ndarray,
    tq: int,
    out_i: np.ndarray,
    iq: int,
    scratch: np.ndarray,
    stack: np.ndarray,
) -> tuple[int, int, int, int, int]:
    """Parse one non-blank line buf[p:end]. Returns (status, text end, id kind, id end, ...):
    (RECORD or ASK_PYTHON, end of the text in out_t (it starts at tq), id kind, end of the id in
    out_i (it starts at iq), 0)."""
    t0, i0 = tq, iq
    text_kind = _NONE
    id_kind = _NONE
    t_end, i_end = tq, iq
    depth = 0
    p = _skip_ws(buf, p, end)
    if p >= end or buf[p] != 0x7B:  # the line must hold an object
        return ASK_PYTHON, t0, ID_ABSENT, i0, 0
    state = _VALUE
    target = 0
    while True:
        if state == _VALUE:
            p = _skip_ws(buf, p, end)
            if p >= end:
                return ASK_PYTHON, t0, ID_ABSENT, i0, 0
            c = buf[p]
            if c == 0x7B or c == 0x5B:  # { or [
                if target != 0:
                    if target & _TEXT:
                        text_kind = _OTHER
                    if target & _ID:
                        id_kind = _OTHER
                    target = 0
                if depth >= MAX_DEPTH:
                    return ASK_PYTHON, t0, ID_ABSENT, i0, 0
                stack[depth] = c
                depth += 1
                p = _skip_ws(buf, p + 1, end)
                if p < end and buf[p] == c + 2:  # } or ]: empty container
                    depth -= 1
                    p += 1
                    state = _AFTER
                elif c == 0x7B:
                    state = _KEY
                else:
                    state = _VALUE
                continue
            if c == 0x22:  # a string: one scanner call (inlined: twice as fast on short lines)
                into, q0 = out_t, 0
                if target & _TEXT:
                    q0 = t0
                elif target & _ID:
                    into, q0 = out_i, i0
                p, q, lone = _string(buf, p + 1, end, into, q0, target != 0)
                if p < 0 or (lone and target & _ID):
                    return ASK_PYTHON, t0, ID_ABSENT, i0, 0
                if target & _TEXT:
                    text_kind = _STR
                    t_end = q
                    if target & _ID:  # the same field names both: copy it
                        for x in range(q - q0):
                            out_i[i0 + x] = out_t[q0 + x]
                        i_end = i0 + q - q0
                        id_kind = _STR
                elif target & _ID:
                    id_kind = _STR
                    i_end = q
                target = 0
                state = _AFTER
                continue
            if c == 0x2D or 0x30 <= c <= 0x39:
                q, integer = _number(buf, p, end)
                if q < 0:
                    return ASK_PYTHON, t0, ID_ABSENT, i0, 0
                if target & _TEXT:
                    text_kind = _OTHER
                if target & _ID:
                    if integer and q - p - (buf[p] == 0x2D) <= MAX_ID_DIGITS:
                        s = p
                        if buf[s] == 0x2D and q - s == 2 and buf[s + 1] == 0x30:
                            s += 1  # -0 is the integer 0
                        for x in range(q - s):
                            out_i[i0 + x] = buf[s + x]
                        i_end = i0 + q - s
                        id_kind = _INT
                    else:
                        id_kind = _OTHER
                p = q
                target = 0
                state = _AFTER
                continue
            if _literal(buf, p, end, "true") or _literal(buf, p, end, "null"):
                p += 4
            elif _literal(buf, p, end, "false"):
                p += 5
            elif _literal(buf, p, end, "NaN"):
                p += 3
            elif _literal(buf, p, end, "Infinity"):
                p += 8
            else:
                return ASK_PYTHON, t0, ID_ABSENT, i0, 0
            if target & _TEXT:
                text_kind = _OTHER
            if target & _ID:
                id_kind = _OTHER
            target = 0
            state = _AFTER
            continue
        if state == _KEY:  # after { or , inside an object: a key, a colon, then a value
            p = _skip_ws(buf, p, end)
            if p >= end or buf[p] != 0x22:
                return ASK_PYTHON, t0, ID_ABSENT, i0, 0
            p, q, lone = _string(buf, p + 1, end, scratch, 0, depth == 1)
            if p < 0:
                return ASK_PYTHON, t0, ID_ABSENT, i0, 0
            target = 0
            if depth == 1:
                if _same(scratch, 0, q, text_key):
                    target |= _TEXT
                if _same(scratch, 0, q, id_key):
                    target |= _ID
            p = _skip_ws(buf, p, end)
            if p >= end or buf[p] != 0x3A:
                return ASK_PYTHON, t0, ID_ABSENT, i0, 0
            p += 1
            state = _VALUE
            continue
        # _AFTER: a value ended
        p = _skip_ws(buf, p, end)
        if depth == 0:
            if p != end:  # extra data after the object
                return ASK_PYTHON, t0, ID_ABSENT, i0, 0
            break
        if p >= end:
            return ASK_PYTHON, t0, ID_ABSENT, i0, 0
        c = buf[p]
        top = stack[depth - 1]
        if c == 0x2C:  # ,
            p += 1
            state = _KEY if top == 0x7B else _VALUE
        elif c == top + 2:  # the matching } or ]
            p += 1
            depth -= 1
        else:
            return ASK_PYTHON, t0, ID_ABSENT, i0, 0
    if text_kind != _STR or id_kind == _OTHER:
        return ASK_PYTHON, t0, ID_ABSENT, i0, 0
    kind = ID_ABSENT
    if id_kind == _STR:
        kind = ID_STRING
    elif id_kind == _INT:
        kind = ID_INT
    else:
        i_end = i0
    return RECORD, t_end, kind, i_end, 0


@njit(cache=True, inline="always")
def _blank_byte(c: int) -> bool:
    return c == 0x20 or (0x09 <= c <= 0x0D)


@njit(cache=True, nogil=True)
def parse_lines(
    buf: np.ndarray, newlines: np.ndarray, text_key: np.ndarray, id_key: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Lines of ``buf`` (split after each newline; the last may lack one) -> per line
    (end offset after its newline, status, text end in ``texts``, id kind, id end in ``ids``),
    then the texts and ids buffers. A line's text starts where the previous line's ended
    (a line that is not a RECORD has an empty text), and likewise its id. ``newlines``: the
    offsets of buf's newline bytes, ascending (NumPy finds them 3x faster than a byte loop)."""
    n = buf.shape[0]
    lines = newlines.shape[0]
    if n > 0 and buf[n - 1] != 0x0A:
        lines += 1
    ends = np.empty(lines, dtype=np.int64)
    status = np.empty(lines, dtype=np.uint8)
    text_ends = np.empty(lines, dtype=np.int64)
    id_kinds = np.empty(lines, dtype=np.uint8)
    id_ends = np.empty(lines, dtype=np.int64)
    texts = np.empty(n, dtype=np.uint8)
    ids = np.empty(n, dtype=np.uint8)
    scratch = np.empty(n, dtype=np.uint8)
    stack = np.empty(MAX_DEPTH, dtype=np.uint8)
    tq = 0
    iq = 0
    p = 0
    for line in range(lines):
        e = newlines[line] if line < newlines.shape[0] else n
        nxt = e + 1 if e < n else n
        blank = True
        for x in range(p, e):
            if not _blank_byte(buf[x]):
                blank = False
                break
        ends[line] = nxt
        if blank:
            status[line] = BLANK
            id_kinds[line] = ID_ABSENT
        else:
            st, t_end, kind, i_end, _ = _record(
                buf, p, e, text_key, id_key, texts, tq, ids, iq, scratch, stack
            )
            status[line] = st
            id_kinds[line] = kind
            if st == RECORD:
                tq = t_end
                iq = i_end
        text_ends[line] = tq
        id_ends[line] = iq
        p = nxt
    return ends, status, text_ends, id_kinds, id_ends, texts[:tq], ids[:iq]


@njit(cache=True, nogil=True)
def utf8_lengths(buf: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Characters of each UTF-8 text buf[offsets[i]:offsets[i+1]] (bytes that do not continue
    a sequence), equal to ``len(str)`` of its "surrogatepass" decoding."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = 0
        # Unsigned bounds: no negative-index fix-up per byte, so the loop vectorises.
        for p in range(np.uint64(offsets[i]), np.uint64(offsets[i + 1])):
            c += (buf[p] & 0xC0) != 0x80
        out[i] = c
    return out
