"""Text -> canonical tokens: maximal runs of Unicode word characters, case-folded per code point.

Broder's "canonical sequence of tokens" ignores formatting, punctuation and case. Here a token is
a maximal run of the characters Python's regular expressions call ``\\w`` (``str.isalnum()`` or
``_``); everything else (spaces, punctuation, curly quotes, dashes, emoji, combining marks) only
separates tokens. Each code point of a token is replaced by its *simple case fold*: its
``casefold()`` when that is one code point, else its ``lower()`` when that is one code point,
else the first code point of its ``lower()`` (only U+0130 "İ" -> "i"). A per-code-point fold
keeps tokens aligned with the input (so the fast kernel can work on code points in place), and
it makes "Übermäßig" equal "übermäßig" and final sigma "ς" equal "σ".

Character mode uses the same canonical characters with every non-word character removed; its
tokens are single characters, and q consecutive ones form a q-gram shingle.

The tables follow the Unicode database of the running Python (``unicodedata.unidata_version``);
it is part of the format (see ``table_version()``).
"""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import overload

import numpy as np

from .errors import ParamError, ParamTypeError
from .params import TokenMode, table_version

_WORD_RUN = re.compile(r"\w+")
_NUM_CODE_POINTS = 0x110000


def fold_char(c: str) -> str:
    """The simple case fold of one character: a single code point, see the module docstring."""
    f = c.casefold()
    if len(f) == 1:
        return f
    low = c.lower()
    return low if len(low) == 1 else low[0]


def _check_mode(mode: object) -> None:
    """Refuse a token mode other than 'word' or 'char' (any other was taken for 'word')."""
    if mode not in ("word", "char"):
        raise ParamError(f"mode must be 'word' or 'char', got {mode!r}")


def canonical_tokens(text: str, mode: TokenMode = "word", nfkc: bool = False) -> list[str]:
    """Reference tokeniser: the canonical tokens of ``text`` (slow, obviously correct).

    Word mode returns the folded ``\\w`` runs; character mode returns every folded word character
    as its own token.
    """
    _check_mode(mode)
    if nfkc:
        text = unicodedata.normalize("NFKC", text)
    words = ["".join(fold_char(c) for c in run) for run in _WORD_RUN.findall(text)]
    if mode == "char":
        return [c for word in words for c in word]
    return words


@cache
def tables() -> tuple[np.ndarray, np.ndarray]:
    """(is_word uint8[0x110000], fold uint32[0x110000]), read-only, once per process.

    Building them takes about half a second, so they are cached on disk per Unicode version
    (``$NEARDUP_CACHE_DIR``, else ``$XDG_CACHE_HOME/neardup``, else ``~/.cache/neardup``);
    an unreadable or unwritable cache is ignored and the tables are simply rebuilt.
    """
    path = _cache_dir() / f"unicode-tables-{table_version()}-v{_TABLES_VERSION}.npz"
    loaded = _load_tables(path)
    is_word, fold = loaded if loaded is not None else _build_tables()
    if loaded is None:
        _save_tables(path, is_word, fold)
    is_word.setflags(write=False)
    fold.setflags(write=False)
    return is_word, fold


_TABLES_VERSION = 1


def _cache_dir() -> Path:
    if os.environ.get("NEARDUP_CACHE_DIR"):
        return Path(os.environ["NEARDUP_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "neardup"


def _load_tables(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    try:
        with np.load(path) as data:
            bits, where, to = data["is_word_bits"], data["fold_from"], data["fold_to"]
        is_word = np.unpackbits(bits)[:_NUM_CODE_POINTS].astype(np.uint8)
        fold = np.arange(_NUM_CODE_POINTS, dtype=np.uint32)
        fold[where] = to
    except (OSError, KeyError, ValueError, IndexError):
        return None
    return is_word, fold


def _save_tables(path: Path, is_word: np.ndarray, fold: np.ndarray) -> None:
    where = np.flatnonzero(fold != np.arange(_NUM_CODE_POINTS, dtype=np.uint32))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tables-", suffix=".npz")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, is_word_bits=np.packbits(is_word), fold_from=where, fold_to=fold[where])
        os.replace(tmp, path)
    except OSError:
        pass  # no cache this time; the tables in memory are complete


def _build_tables() -> tuple[np.ndarray, np.ndarray]:
    every = "".join(map(chr, range(_NUM_CODE_POINTS)))
    marked = re.sub(r"\W", "\x00", every)
    is_word = (_code_points(marked) != 0).astype(np.uint8)
    fold = np.arange(_NUM_CODE_POINTS, dtype=np.uint32)
    for i, c in enumerate(every):
        if c.casefold() != c or c.lower() != c:
            fold[i] = ord(fold_char(c))
    return is_word, fold


def is_unicode(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8: no lone surrogate (which a JSON escape such as
    \\ud800 without its pair gives, and Python keeps)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _code_points(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def encode_batch(texts: Sequence[str], nfkc: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Texts -> (UTF-8 bytes uint8[total], byte offsets int64[n+1]) at C speed.

    Document i is ``buf[offsets[i]:offsets[i+1]]``. Lone surrogates are kept (``surrogatepass``)
    so that every Python string has a representation; kernels decode code points themselves.
    ``Utf8Texts`` are already encoded: their buffer is returned as it is (offsets may not start
    at 0).
    """
    if isinstance(texts, Utf8Texts) and not nfkc:
        return texts.buf, texts.offsets
    if isinstance(texts, str | bytes | Mapping):
        check_texts(texts)  # not one-character documents, nor a dict's keys
    try:
        if nfkc:
            texts = [unicodedata.normalize("NFKC", t) for t in texts]
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    except (AttributeError, TypeError):
        check_texts(texts)  # names the first text that is not a str (free when all are)
        raise
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def token_spans(
    texts: Sequence[str], mode: TokenMode = "word"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each canonical token's character span: (starts int64[], ends int64[], offsets int64[n+1]).

    Text d's tokens are ``text[starts[t]:ends[t]]`` for t in ``offsets[d]:offsets[d+1]``, the
    tokens ``canonical_tokens(text, mode)`` folds, in order; spans are Python ``str`` indices.
    """
    from ._kernels.tokens import token_spans as kernel

    _check_mode(mode)
    buf, offsets = encode_batch(texts)
    return kernel(buf, offsets, tables()[0], mode == "char")


#: A surrogate code point (U+D800-U+DFFF) in UTF-8 written with "surrogatepass": its first two bytes.
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")


class Utf8Texts(Sequence[str]):
    """Texts held as one UTF-8 buffer and offsets: text i is ``buf[offsets[i]:offsets[i+1]]``.

    What the JSONL reader produces and the kernels read, without a Python string per document;
    indexing decodes one text ("surrogatepass", so lone surrogates survive). Slices are views.
    """

    __slots__ = ("_surrogates", "buf", "offsets")

    def __init__(self, buf: np.ndarray, offsets: np.ndarray) -> None:
        self.buf = buf
        self.offsets = offsets
        self._surrogates: list[int] | None = None  # ``surrogate_rows``, once found

    @classmethod
    def from_strings(cls, texts: Sequence[str]) -> Utf8Texts:
        """Encode Python strings (as ``encode_batch`` does)."""
        return cls(*encode_batch(texts))

    @classmethod
    def concat(cls, parts: Sequence[Utf8Texts]) -> Utf8Texts:
        """One sequence holding the texts of ``parts`` in order (copies the bytes)."""
        if len(parts) == 1:
            return parts[0]
        bufs = [p.buf[p.offsets[0] : p.offsets[-1]] for p in parts]
        sizes = [np.diff(p.offsets) for p in parts]
        offsets = np.zeros(sum(len(s) for s in sizes) + 1, dtype=np.int64)
        if len(offsets) > 1:
            np.cumsum(np.concatenate(sizes), out=offsets[1:])
        buf = np.concatenate(bufs) if bufs else np.zeros(0, dtype=np.uint8)
        return cls(buf, offsets)

    def take(self, rows: np.ndarray) -> Utf8Texts:
        """The texts ``rows`` (int64 indices), in that order, copied into a new buffer."""
        from ._kernels.ranges import gather_ranges  # a copy per text, not an index per byte

        rows = np.asarray(rows, dtype=np.int64)
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        new_off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(ends - starts, out=new_off[1:])
        buf = np.empty(int(new_off[-1]), dtype=np.uint8)
        gather_ranges(self.buf, starts, ends, buf)
        return Utf8Texts(buf, new_off)

    def lengths(self) -> np.ndarray:
        """Characters of each text (``len`` of the decoded string), int64[n]."""
        from ._kernels.jsonl import utf8_lengths

        return utf8_lengths(self.buf, self.offsets)

    @property
    def nbytes(self) -> int:
        """UTF-8 bytes of the texts."""
        return int(self.offsets[-1] - self.offsets[0])

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> Utf8Texts: ...

    def __getitem__(self, i: int | slice) -> str | Utf8Texts:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step != 1:
                return self.take(np.arange(start, stop, step, dtype=np.int64))
            return Utf8Texts(self.buf, self.offsets[start : max(start, stop) + 1])
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text index out of range")
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.buf[lo:hi].tobytes().decode("utf-8", "surrogatepass")

    def surrogate_rows(self) -> list[int]:
        """The texts holding a surrogate code point (which ``is_unicode`` refuses), found in the
        buffer without decoding one: "surrogatepass" keeps each as its three bytes ``ED A0-BF
        ..``, and no other code point's UTF-8 has ``ED`` followed by ``A0-BF``. Kept once
        found: ``index add`` asks twice of a batch (to skip its bad records, then to store it)."""
        if self._surrogates is None:
            lo, hi = int(self.offsets[0]), int(self.offsets[-1])
            found = [m.start() + lo for m in _SURROGATE_BYTES.finditer(self.buf[lo:hi].data)]
            rows = np.searchsorted(self.offsets, np.asarray(found, dtype=np.int64), "right") - 1
            self._surrogates = [int(r) for r in np.unique(rows)]
        return list(self._surrogates)

    def views(self) -> list[memoryview]:
        """Each text's UTF-8 bytes as a view of the buffer: nothing decoded or copied (what an
        index stores, as SQLite text, and checksums)."""
        whole = self.buf.data
        return [whole[lo:hi] for lo, hi in pairwise(self.offsets.tolist())]

    def __iter__(self) -> Iterator[str]:
        lo = int(self.offsets[0])
        data = self.buf[lo : int(self.offsets[-1])].tobytes()
        bounds = (self.offsets - lo).tolist()
        for lo, hi in pairwise(bounds):
            yield data[lo:hi].decode("utf-8", "surrogatepass")

    def __reduce__(self) -> tuple[type[Utf8Texts], tuple[np.ndarray, np.ndarray]]:
        lo, hi = int(self.offsets[0]), int(self.offsets[-1])
        return Utf8Texts, (self.buf[lo:hi].copy(), self.offsets - lo)


def check_texts(texts: object, what: str = "texts") -> Sequence[str]:
    """A sequence of strings, or a ParamTypeError naming the first element that is not one."""
    if isinstance(texts, Utf8Texts):  # strings by construction
        return texts
    if isinstance(texts, str | bytes):
        raise ParamTypeError(
            f"{what} must be a list of strings, not one {type(texts).__name__}; wrap it: [text]"
        )
    if isinstance(texts, Mapping):  # iterating one gives its keys, not its texts
        raise ParamTypeError(
            f"{what} must be a list of strings, got a {type(texts).__name__}; pass its texts: "
            "list(d.values())"
        )
    if isinstance(texts, np.ndarray) and texts.ndim != 1:
        raise ParamTypeError(
            f"{what} must be a list of strings, got a {texts.ndim}-d array of shape "
            f"{texts.shape}; pass a 1-d array or a list: [text]"
        )
    if not isinstance(texts, Sequence):
        if not isinstance(texts, Iterable):
            raise ParamTypeError(f"{what} must be a list of strings, got {type(texts).__name__}")
        texts = list(texts)
    seq: Sequence[object] = texts
    for i, t in enumerate(seq):
        if not isinstance(t, str):
            raise ParamTypeError(
                f"{what}[{i}] is {type(t).__name__}, not str; pass texts as strings"
            )
    return seq  # type: ignore[return-value]
