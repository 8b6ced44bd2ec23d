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
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from .params import TokenMode

_WORD_RUN = re.compile(r"\w+")
_NUM_CODE_POINTS = 0x110000


def fold_char(c: str) -> str:
    """The simple case fold of one character: a single code point, see the module docstring."""
    f = c.casefold()
    if len(f) == 1:
        return f
    low = c.lower()
    return low if len(low) == 1 else low[0]


def canonical_tokens(text: str, mode: TokenMode = "word", nfkc: bool = False) -> list[str]:
    """Reference tokeniser: the canonical tokens of ``text`` (slow, obviously correct).

    Word mode returns the folded ``\\w`` runs; character mode returns every folded word character
    as its own token.
    """
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
    path = _cache_dir() / f"unicode-tables-{unicodedata.unidata_version}-v{_TABLES_VERSION}.npz"
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


def table_version() -> str:
    """The Unicode version the tables were built from; part of the fingerprint format."""
    return unicodedata.unidata_version


def _code_points(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def encode_batch(texts: Sequence[str], nfkc: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Texts -> (UTF-8 bytes uint8[total], byte offsets int64[n+1]) at C speed.

    Document i is ``buf[offsets[i]:offsets[i+1]]``. Lone surrogates are kept (``surrogatepass``)
    so that every Python string has a representation; kernels decode code points themselves.
    """
    if nfkc:
        texts = [unicodedata.normalize("NFKC", t) for t in texts]
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets
