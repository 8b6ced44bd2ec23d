"""UTF-8 texts -> each canonical token's character span (Python ``str`` indices).

The tokens are those the shingling kernel reads (``_kernels/shingles.py``): in word mode the
maximal runs of word characters, in character mode every word character. A span counts code
points from the start of its text, so ``text[start:end]`` is the token as written (before its
case fold); a lone surrogate (kept by "surrogatepass") is one code point, as in Python.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .shingles import _decode


@njit(cache=True, nogil=True)
def token_spans(
    buf: np.ndarray, offsets: np.ndarray, is_word: np.ndarray, char_mode: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts int64[], ends int64[], token offsets int64[n+1]): text d's tokens are
    ``starts[t]:ends[t]`` for t in ``token offsets[d]:token offsets[d+1]``, in text order."""
    n = offsets.shape[0] - 1
    size = max(offsets[n] - offsets[0], 0) if n > 0 else 0
    starts = np.empty(size, dtype=np.int64)
    ends = np.empty(size, dtype=np.int64)
    out_offsets = np.empty(n + 1, dtype=np.int64)
    k = 0
    for d in range(n):
        out_offsets[d] = k
        p = offsets[d]
        stop = offsets[d + 1]
        at = 0  # code points before p in this text
        inside = False
        while p < stop:
            b = buf[p]
            if b < 0x80:
                word = is_word[b] != 0
                p += 1
            else:
                c, p = _decode(buf, p)
                word = is_word[c] != 0
            if word:
                if char_mode:
                    starts[k] = at
                    ends[k] = at + 1
                    k += 1
                elif not inside:
                    starts[k] = at
                    inside = True
            elif inside:
                ends[k] = at
                k += 1
                inside = False
            at += 1
        if inside:
            ends[k] = at
            k += 1
    out_offsets[n] = k
    return starts[:k].copy(), ends[:k].copy(), out_offsets
