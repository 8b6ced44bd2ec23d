"""Code points -> canonical tokens -> w-shingle fingerprints, fused in one pass per batch.

Token hash ("mix"): FNV-1a over the folded code points of the token, finalised with fmix64 of
(state xor length). Shingle hash ("mix"): the polynomial S = sum_j token_hash_j * C^(m-1-j)
mod 2^64 over the shingle's m tokens in order, kept rolling (one multiply-add per token, the
oldest token's term subtracted), finalised with fmix64(S xor m). Token hashes are pseudo-random
64-bit values and C is odd, so two shingles differing in one token never collide and others
collide with probability about 2^-64. Shingle hash ("rabin"): the Rabin fingerprint, modulo
an irreducible degree-64 polynomial over GF(2), of the shingle's canonical text as 32-bit code
points (word mode: tokens joined by one space; char mode: the q characters).
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .hashing import EMPTY, FNV_OFFSET, FNV_PRIME, SHINGLE_MUL, fmix64

#: The Rabin polynomial x^64 + RABIN_LOW: irreducible over GF(2) (tests prove it), chosen as the
#: first irreducible found from a fixed derivation, so it never changes.
RABIN_LOW = 0x5B98B2C4F20492FF
SPACE = 0x20
_NO_TABLE = np.zeros(0, dtype=np.uint64)  # for the "mix" hash, which reads no Rabin table

#: fps, offsets[n+1], tokens[n], canonical[n]
Shingled = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def rabin_table(low: int = RABIN_LOW) -> np.ndarray:
    """T[t] = (t(x) * x^64) mod P for every byte t: the table of the byte-wise Rabin update."""
    table = np.zeros(256, dtype=np.uint64)
    for t in range(256):
        r = t << 64
        for bit in range(71, 63, -1):
            if r >> bit & 1:
                r ^= ((1 << 64) | low) << (bit - 64)
        table[t] = r
    return table


@njit(cache=True, inline="always")
def _decode(buf: np.ndarray, p: int) -> tuple[np.uint64, int]:
    """The code point starting at byte p of well-formed UTF-8 (surrogates allowed), next p."""
    b = np.uint64(buf[p])
    if b < 0x80:
        return b, p + 1
    if b < 0xE0:
        return ((b & np.uint64(0x1F)) << np.uint64(6)) | (
            np.uint64(buf[p + 1]) & np.uint64(0x3F)
        ), p + 2
    if b < 0xF0:
        c = ((b & np.uint64(0x0F)) << np.uint64(12)) | (
            (np.uint64(buf[p + 1]) & np.uint64(0x3F)) << np.uint64(6)
        )
        return c | (np.uint64(buf[p + 2]) & np.uint64(0x3F)), p + 3
    c = ((b & np.uint64(0x07)) << np.uint64(18)) | (
        (np.uint64(buf[p + 1]) & np.uint64(0x3F)) << np.uint64(12)
    )
    c |= (np.uint64(buf[p + 2]) & np.uint64(0x3F)) << np.uint64(6)
    return c | (np.uint64(buf[p + 3]) & np.uint64(0x3F)), p + 4


@njit(cache=True, inline="always")
def _rabin_symbol(f: np.uint64, c: np.uint64, table: np.ndarray) -> np.uint64:
    for shift in (24, 16, 8, 0):
        top = f >> np.uint64(56)
        f = (f << np.uint64(8)) ^ ((c >> np.uint64(shift)) & np.uint64(0xFF)) ^ table[top]
    return f


@njit(cache=True, nogil=True)
def _rabin_shingle(
    buf: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    first: int,
    m: int,
    fold: np.ndarray,
    char_mode: bool,
    table: np.ndarray,
) -> np.uint64:
    """Rabin fingerprint of the canonical text of m tokens (window slots first, first+1, ...)."""
    f = np.uint64(0)
    for j in range(m):
        slot = first + j
        if j > 0 and not char_mode:
            f = _rabin_symbol(f, np.uint64(SPACE), table)
        p = starts[slot]
        while p < ends[slot]:
            c, p = _decode(buf, p)
            f = _rabin_symbol(f, np.uint64(fold[c]), table)
    return f


@njit(cache=True, nogil=True, inline="always")  # a kernel, and inlined into the next one
def shingle_kernel(
    buf: np.ndarray,
    offsets: np.ndarray,
    is_word: np.ndarray,
    fold: np.ndarray,
    w: int,
    char_mode: bool,
    rabin: bool,
    table: np.ndarray,
) -> Shingled:
    """UTF-8 bytes -> (fps in document order with repeats, offsets[n+1], tokens[n], canonical[n]).

    A document of 0 tokens has no shingle; of 1..w-1 tokens, one shingle of all its tokens.
    The canonical hash identifies the token sequence (exact duplicates up to case/punctuation);
    it is EMPTY for a document without tokens.
    """
    n = offsets.shape[0] - 1
    fps = np.empty(buf.shape[0] + 1, dtype=np.uint64)
    out_offsets = np.empty(n + 1, dtype=np.int64)
    ntokens = np.zeros(n, dtype=np.int64)
    canonical = np.empty(n, dtype=np.uint64)
    ring = np.zeros(w, dtype=np.uint64)
    oldest_power = np.uint64(1)  # C^(w-1): the weight of the token leaving the window
    for _ in range(w - 1):
        oldest_power *= SHINGLE_MUL
    starts = np.zeros(w, dtype=np.int64)
    ends = np.zeros(w, dtype=np.int64)
    ascii_fold = np.zeros(128, dtype=np.uint32)
    for i in range(128):
        if is_word[i] != 0:
            ascii_fold[i] = fold[i]
    char_tok = np.empty(128, dtype=np.uint64)  # a one-character token's hash, by code point
    for i in range(128):
        char_tok[i] = fmix64(((FNV_OFFSET ^ np.uint64(i)) * FNV_PRIME) ^ np.uint64(1))
    k = 0
    for d in range(n):
        out_offsets[d] = k
        ntok = 0
        head = 0  # ring[head] is the oldest of the last w tokens
        rolling = np.uint64(0)
        content = FNV_OFFSET
        h = FNV_OFFSET
        length = 0
        start = 0
        p = offsets[d]
        stop = offsets[d + 1]
        while p <= stop:
            here = p
            f = np.uint64(0)  # the folded code point, 0 for a separator (NUL is not a word char)
            if p < stop:
                b = buf[p]
                if b < 0x80:  # ASCII fast path: one small-table lookup
                    f = np.uint64(ascii_fold[b])
                    p += 1
                else:
                    c, p = _decode(buf, p)
                    if is_word[c] != 0:
                        f = np.uint64(fold[c])
            else:
                p += 1
            if f != 0:
                if not char_mode:
                    if length == 0:
                        h = FNV_OFFSET
                        start = here
                    h = (h ^ f) * FNV_PRIME
                    length += 1
                    # The rest of an ASCII run of word characters, byte by byte (unsigned
                    # index: no negative-index fix-up).
                    while p < stop:
                        b = buf[np.uint64(p)]
                        if b >= 0x80 or ascii_fold[b] == 0:
                            break
                        h = (h ^ np.uint64(ascii_fold[b])) * FNV_PRIME
                        length += 1
                        p += 1
                    continue
                if f < 128:
                    tok = char_tok[f]
                else:
                    tok = fmix64(((FNV_OFFSET ^ f) * FNV_PRIME) ^ np.uint64(1))
                tok_start = here
                tok_end = p
            elif length > 0:
                tok = fmix64(h ^ np.uint64(length))
                tok_start = start
                tok_end = here
                length = 0
            else:
                # The rest of an ASCII run of separators.
                while p < stop:
                    b = buf[np.uint64(p)]
                    if b >= 0x80 or ascii_fold[b] != 0:
                        break
                    p += 1
                continue
            if ntok >= w:
                rolling = (rolling - ring[np.uint64(head)] * oldest_power) * SHINGLE_MUL + tok
            else:
                rolling = rolling * SHINGLE_MUL + tok
            ring[np.uint64(head)] = tok
            head += 1
            if head == w:
                head = 0
            if rabin:  # spans as a shift register, oldest first
                for j in range(w - 1):
                    starts[j] = starts[j + 1]
                    ends[j] = ends[j + 1]
                starts[w - 1] = tok_start
                ends[w - 1] = tok_end
            content = (content ^ tok) * SHINGLE_MUL
            ntok += 1
            if ntok >= w:
                if rabin:
                    fps[k] = _rabin_shingle(buf, starts, ends, 0, w, fold, char_mode, table)
                else:
                    fps[np.uint64(k)] = fmix64(rolling ^ np.uint64(w))
                k += 1
        if 0 < ntok < w:
            if rabin:
                fps[k] = _rabin_shingle(buf, starts, ends, w - ntok, ntok, fold, char_mode, table)
            else:
                fps[k] = fmix64(rolling ^ np.uint64(ntok))
            k += 1
        ntokens[d] = ntok
        canonical[d] = fmix64(content ^ np.uint64(ntok)) if ntok > 0 else EMPTY
    out_offsets[n] = k
    return fps[:k].copy(), out_offsets, ntokens, canonical


# The "mix" hash's two token kinds, each compiled with both choices constant, so that the byte
# loop carries no branch on them (bench_kernels.py measures the gain).
@njit(cache=True, nogil=True)
def shingle_words_mixed(
    buf: np.ndarray, offsets: np.ndarray, is_word: np.ndarray, fold: np.ndarray, w: int
) -> Shingled:
    """``shingle_kernel`` for word tokens and the "mix" hash (the default)."""
    return shingle_kernel(buf, offsets, is_word, fold, w, False, False, _NO_TABLE)


@njit(cache=True, nogil=True)
def shingle_chars_mixed(
    buf: np.ndarray, offsets: np.ndarray, is_word: np.ndarray, fold: np.ndarray, q: int
) -> Shingled:
    """``shingle_kernel`` for character q-grams and the "mix" hash."""
    return shingle_kernel(buf, offsets, is_word, fold, q, True, False, _NO_TABLE)


#: A document of at least this many fingerprints is sorted by buckets of its top bits.
BUCKET_SORT_MIN = 32
#: A bucket of more than this many fingerprints (never, for hash values, but for a crafted
#: document) is sorted by ``np.sort``, so the worst case stays O(m log m).
BUCKET_MAX = 32


@njit(cache=True, nogil=True)
def _sort_small(a: np.ndarray, lo: int, hi: int) -> None:
    """Sort ``a[lo:hi]`` in place: insertion sort when short, else ``np.sort``."""
    if hi - lo > BUCKET_MAX:
        a[lo:hi] = np.sort(a[lo:hi])
        return
    for i in range(lo + 1, hi):
        x = a[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True, nogil=True)
def _floor_log2(m: int) -> int:
    """The largest b with 2**b <= m (0 for m < 2)."""
    b = 0
    while (1 << (b + 1)) <= m:
        b += 1
    return b


@njit(cache=True, nogil=True)
def unique_per_doc(fps: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each document's fingerprints and drop repeats: the shingle *set* of each document.

    Fingerprints are hashes, so their top bits spread them evenly: a document of m of them is
    scattered into about m / 2 buckets by its top bits (one counting pass, one scatter), then
    each bucket, a few values, is sorted by insertion. Linear time instead of a comparison
    sort's m log m (1.5-3x faster at thousands a document); ``_sort_small`` bounds the worst.
    """
    n = offsets.shape[0] - 1
    out = np.empty(fps.shape[0], dtype=np.uint64)
    out_offsets = np.empty(n + 1, dtype=np.int64)
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    tmp = np.empty(longest, dtype=np.uint64)
    starts = np.zeros((1 << _floor_log2(longest)) + 1, dtype=np.int64)
    k = 0
    for d in range(n):
        out_offsets[d] = k
        lo = offsets[d]
        m = offsets[d + 1] - lo
        if m == 0:
            continue
        if m < BUCKET_SORT_MIN:
            tmp[:m] = fps[lo : lo + m]
            _sort_small(tmp, 0, m)
        else:
            b = _floor_log2(m) - 1  # 2**b <= m / 2: about m / 2 buckets
            shift = np.uint64(64 - b)
            nb = 1 << b
            starts[: nb + 1] = 0
            for i in range(lo, lo + m):
                starts[np.int64(fps[i] >> shift) + 1] += 1
            for g in range(nb):
                starts[g + 1] += starts[g]
            for i in range(lo, lo + m):  # scatter; starts[g] ends at bucket g's end
                at = np.int64(fps[i] >> shift)
                tmp[starts[at]] = fps[i]
                starts[at] += 1
            first = 0
            for g in range(nb):
                _sort_small(tmp, first, starts[g])
                first = starts[g]
        out[k] = tmp[0]
        k += 1
        for i in range(1, m):
            if tmp[i] != tmp[i - 1]:
                out[k] = tmp[i]
                k += 1
    out_offsets[n] = k
    return out[:k].copy(), out_offsets


@njit(cache=True, nogil=True)
def raw_hash_kernel(buf: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each document's exact UTF-8 bytes (identical raw text, identical hash)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, dtype=np.uint64)
    for d in range(n):
        h = FNV_OFFSET
        for p in range(offsets[d], offsets[d + 1]):
            h = (h ^ np.uint64(buf[p])) * FNV_PRIME
        out[d] = fmix64(h ^ np.uint64(offsets[d + 1] - offsets[d]))
    return out


@njit(cache=True, nogil=True)
def distinct_per_doc(fps: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop repeated fingerprints within each document, keeping first occurrences in order.

    Linear time with an open-addressing set per document (no sort): for consumers that need
    the set but not its order, such as binary-weighted SimHash.
    """
    n = offsets.shape[0] - 1
    out = np.empty(fps.shape[0], dtype=np.uint64)
    out_offsets = np.empty(n + 1, dtype=np.int64)
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    size = 16
    while size < 2 * longest:
        size *= 2
    slots = np.zeros(size, dtype=np.uint64)
    used = np.zeros(size, dtype=np.int64)  # generation stamp: slot valid when == d + 1
    k = 0
    for d in range(n):
        out_offsets[d] = k
        lo = offsets[d]
        hi = offsets[d + 1]
        cap = 16
        while cap < 2 * (hi - lo):
            cap *= 2
        mask = np.uint64(cap - 1)
        for p in range(lo, hi):
            v = fps[p]
            i = fmix64(v) & mask
            while used[i] == d + 1 and slots[i] != v:
                i = (i + np.uint64(1)) & mask
            if used[i] != d + 1:
                used[i] = d + 1
                slots[i] = v
                out[k] = v
                k += 1
    out_offsets[n] = k
    return out[:k].copy(), out_offsets
